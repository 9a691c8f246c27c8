// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shim/libibverbs.so.1: the library that shiftu-run's shim directory puts
 * first where programs look for libibverbs.
 *
 * NCCL, MSCCL++ and RCCL do not link libibverbs: they dlopen("libibverbs.so")
 * (or ".so.1") and look every verb up with dlvsym(handle, ...), which
 * searches that library and its dependencies only, never a preloaded
 * libshiftu.  This object has no code.  It carries libibverbs' soname and
 * every version libibverbs defines (so that providers and programs linked
 * against libibverbs pass the loader's version checks against it), and its
 * dependencies are, in this order, libshiftu and the real libibverbs by its
 * full path.  A lookup through its handle, or through the global scope of a
 * program linked against it, therefore finds libshiftu's control verbs
 * first and libibverbs' own for everything else, private provider symbols
 * included.  libshiftu reaches the real ones through libibverbs' own handle
 * (real.c).
 */
