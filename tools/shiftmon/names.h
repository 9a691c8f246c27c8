/* SPDX-License-Identifier: GPL-2.0 */
/*
 * names.h: the names of every enum of uapi/shift_ft.h, for shiftmon and for
 * the selftests' tools (ftnl, ftpage), so that all print the same words.
 */
#ifndef SHIFTMON_NAMES_H
#define SHIFTMON_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include <shift_ft.h>

#define SM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct sm_names {
	const char *const *names;
	unsigned int n;
};

extern const struct sm_names sm_cmd_names;
extern const struct sm_names sm_attr_names;
extern const struct sm_names sm_port_state_names;
extern const struct sm_names sm_phys_state_names;
extern const struct sm_names sm_link_names;
extern const struct sm_names sm_pair_state_names;
extern const struct sm_names sm_path_state_names;
extern const struct sm_names sm_source_names;
extern const struct sm_names sm_event_names;

#define SM_NAME_BUF 24

/*
 * The name of @v, or its decimal number in @buf (SM_NAME_BUF bytes) when
 * the table has none: unknown values print, they are never an error.
 */
const char *sm_name(const struct sm_names *t, uint64_t v, char *buf);
/* Value of @s (case-insensitive); -1 if unknown. */
int sm_value(const struct sm_names *t, const char *s);

/* Pair flags: "0", "CONFIGURED", unknown bits as "|0x..". */
const char *sm_pair_flags_str(uint32_t flags, char *buf, size_t len);
/* GIDs: "fe80:0000:...:0001" (dump/JSON, fixed width) or inet_ntop form. */
void sm_gid_full(const uint8_t *gid, char *buf, size_t len);
void sm_gid_short(const uint8_t *gid, char *buf, size_t len);
int sm_gid_parse(const char *s, uint8_t *gid);

#endif /* SHIFTMON_NAMES_H */
