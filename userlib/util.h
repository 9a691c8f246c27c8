/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * util.h: compiler attributes and small helpers shared by libshiftu's files.
 */
#ifndef _SHIFTU_UTIL_H
#define _SHIFTU_UTIL_H

#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

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

/* A branch's expected way, on the data path. */
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* Slow paths: out of line and out of the hot text. */
#define shiftu_cold	__attribute__((cold, noinline))

/*
 * A slow path whose arguments are laid out to be where its fast path
 * holds them: the compiler keeps its signature as written (no constant
 * propagation or dropped arguments, which would move them).  GCC's
 * noipa; a compiler without it gets a plain slow path.
 */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define shiftu_cold_args	__attribute__((cold, noinline, noipa))
#endif
#endif
#ifndef shiftu_cold_args
#define shiftu_cold_args	shiftu_cold
#endif

/*
 * The compiler forgets what it knows of @var, at no instruction (the
 * kernel's OPTIMIZER_HIDE_VAR()).  On the data path, where it keeps one
 * branch's load of a member of @var from being hoisted above the branch,
 * into the path that does not share it (post.c), or an argument passed on
 * to a tail call in the register it came in (srqpost.c).
 */
#define shiftu_hide_var(var)	__asm__("" : "+r"(var))

static inline uint64_t shiftu_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/*
 * One step of a wait for what another thread or the NIC does, @waited_ns
 * into the wait: a yield for the first SHIFTU_YIELD_NS, a short sleep
 * after.  A thread that yields stays runnable, and on a CPU that the
 * application's polling threads keep busy it waits a turn behind each of
 * them at every step (with 64 of them on one CPU, a twin's drain took
 * seconds); a thread that slept is run first when it wakes.
 */
#define SHIFTU_YIELD_NS		1000000ULL
#define SHIFTU_WAIT_SLEEP_US	100

static inline void shiftu_wait_step(uint64_t waited_ns)
{
	if (waited_ns < SHIFTU_YIELD_NS)
		sched_yield();
	else
		usleep(SHIFTU_WAIT_SLEEP_US);
}

#endif /* _SHIFTU_UTIL_H */
