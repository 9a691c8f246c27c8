// SPDX-License-Identifier: GPL-2.0
/*
 * shiftgen_dl: shiftgen reaching libibverbs as NCCL does (ibvsym.h), so
 * that a test can drive the same checked traffic from a program that a
 * preloaded library alone cannot reach.
 */
#define _GNU_SOURCE
#include "ibvsym.h"
#include "shiftgen.c"
