// SPDX-License-Identifier: GPL-2.0
/*
 * dump.c: `shiftmon dump [ports|pairs|paths] [dev NAME [port N]]`.
 *
 * One line per row, tab-separated, for scripts: the kind ("port", "pair",
 * "path"), then the fields of fields.c in their fixed order.  Enumerations
 * print by name, absent fields as "-".  With -H each kind is preceded by a
 * header line naming the columns ("kind", then the field names).  Without an
 * object: ports, then pairs, then paths.  The format is documented field by
 * field in shiftmon(8); fields are only ever appended.
 */
#include <string.h>

#include "shiftmon.h"

static void dump_rows(enum sm_kind kind, const struct sm_rows *rows,
		      const struct sm_filter *flt)
{
	const struct sm_field *fields;
	char buf[512];
	size_t n, i, k;

	fields = sm_fields(kind, &n);
	if (sm_opts.header) {
		fputs("kind", stdout);
		for (k = 0; k < n; k++)
			printf("\t%s", sm_attr_names.names[fields[k].attr]);
		putchar('\n');
	}
	for (i = 0; i < rows->n; i++) {
		if (!sm_filter_match(flt, &rows->v[i]))
			continue;
		fputs(sm_kind_names[kind], stdout);
		for (k = 0; k < n; k++)
			printf("\t%s", sm_field_text(&rows->v[i], &fields[k],
						     buf, sizeof(buf)));
		putchar('\n');
	}
}

int cmd_dump(int argc, char **argv)
{
	struct sm_rows rows[3] = { { 0 } };
	struct sm_filter f;
	int kinds = 0, k;

	if (argc && (kinds = sm_parse_kind(argv[0]))) {
		argc--;
		argv++;
	}
	if (sm_parse_filter(argc, argv, &f))
		return sm_usage("dump");
	if (!kinds)
		kinds = 1 << SM_PORT | 1 << SM_PAIR | 1 << SM_PATH;
	if (sm_fetch(kinds, rows, "dump"))
		return SM_EXIT_FAIL;
	for (k = SM_PORT; k <= SM_PATH; k++) {
		if (kinds & (1 << k))
			dump_rows(k, &rows[k], &f);
		sm_rows_free(&rows[k]);
	}
	if (fflush(stdout) || ferror(stdout)) {
		perror("Unable to write output");
		return SM_EXIT_FAIL;
	}
	return SM_EXIT_OK;
}
