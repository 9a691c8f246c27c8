/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * util.h: compiler attributes shared by libshiftu's files.
 */
#ifndef _SHIFTU_UTIL_H
#define _SHIFTU_UTIL_H

/* The library builds with -fvisibility=hidden; the map (libshiftu.map)
 * decides the version of what this marks. */
#define SHIFTU_EXPORT	__attribute__((visibility("default")))

/*
 * On the library's own data declared extern: -fvisibility=hidden covers
 * definitions only, so without it the compiler reaches such data through
 * the GOT, one load more on the data path.
 */
#define SHIFTU_HIDDEN	__attribute__((visibility("hidden")))

#define SHIFTU_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Slow paths: out of line and out of the hot text. */
#define shiftu_cold	__attribute__((cold, noinline))

/*
 * The compiler forgets what it knows of @var, at no instruction (the
 * kernel's OPTIMIZER_HIDE_VAR()).  On the data path, where it keeps one
 * branch's load of a member of @var from being hoisted above the branch,
 * into the path that does not share it.
 */
#define shiftu_hide_var(var)	__asm__("" : "+r"(var))

#endif /* _SHIFTU_UTIL_H */
