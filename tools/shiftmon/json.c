// SPDX-License-Identifier: GPL-2.0
/*
 * json.c: a small streaming JSON writer.  Strings are escaped per RFC 8259;
 * bytes that are not well-formed UTF-8 become U+FFFD, so the output is valid
 * JSON whatever a device was named.
 */
#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shiftmon.h"

#define SM_JSON_DEPTH 16

struct sm_json {
	FILE *f;
	bool pretty;
	int depth;
	bool first[SM_JSON_DEPTH];	/* no member written yet at this depth */
};

struct sm_json *sm_json_new(FILE *f, bool pretty)
{
	struct sm_json *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->f = f;
	j->pretty = pretty;
	j->first[0] = true;
	return j;
}

void sm_json_free(struct sm_json *j)
{
	if (!j)
		return;
	fputc('\n', j->f);
	fflush(j->f);
	free(j);
}

/* Length of the well-formed UTF-8 sequence at @s, 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates and beyond U+10FFFF are not UTF-8 */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
	    (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void sm_json_escape(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;

	fputc('"', f);
	while (*s) {
		switch (*s) {
		case '"':  fputs("\\\"", f); s++; continue;
		case '\\': fputs("\\\\", f); s++; continue;
		case '\b': fputs("\\b", f); s++; continue;
		case '\f': fputs("\\f", f); s++; continue;
		case '\n': fputs("\\n", f); s++; continue;
		case '\r': fputs("\\r", f); s++; continue;
		case '\t': fputs("\\t", f); s++; continue;
		}
		if (*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s);
			s++;
			continue;
		}
		n = utf8_len(s);
		if (!n) {
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		fwrite(s, 1, n, f);
		s += n;
	}
	fputc('"', f);
}

static void indent(struct sm_json *j)
{
	int i;

	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Separator, indentation and key before a value at the current depth. */
static void member(struct sm_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	if (j->depth)
		indent(j);
	j->first[j->depth] = false;
	if (key) {
		sm_json_escape(j->f, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_(struct sm_json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < SM_JSON_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_(struct sm_json *j, char c)
{
	bool empty = j->first[j->depth];

	if (j->depth)
		j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void sm_json_obj_open(struct sm_json *j, const char *key) { open_(j, key, '{'); }
void sm_json_obj_close(struct sm_json *j) { close_(j, '}'); }
void sm_json_arr_open(struct sm_json *j, const char *key) { open_(j, key, '['); }
void sm_json_arr_close(struct sm_json *j) { close_(j, ']'); }

void sm_json_str(struct sm_json *j, const char *key, const char *s)
{
	member(j, key);
	sm_json_escape(j->f, s);
}

void sm_json_u64(struct sm_json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void sm_json_s64(struct sm_json *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void sm_json_double(struct sm_json *j, const char *key, double v, int prec)
{
	member(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.*f", prec, v);
	else
		fputs("null", j->f);
}

void sm_json_bool(struct sm_json *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void sm_json_null(struct sm_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}
