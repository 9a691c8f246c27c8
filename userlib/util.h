/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * util.h: compiler attributes shared by libshiftu's files.
 */
#ifndef _SHIFTU_UTIL_H
#define _SHIFTU_UTIL_H

/* The library builds with -fvisibility=hidden; the map (libshiftu.map)
 * decides the version of what this marks. */
#define SHIFTU_EXPORT	__attribute__((visibility("default")))

#define SHIFTU_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Slow paths: out of line and out of the hot text. */
#define shiftu_cold	__attribute__((cold, noinline))

#endif /* _SHIFTU_UTIL_H */
