/* SPDX-License-Identifier: MIT */
/*
 * A held-in program for CFI unwinding: built with -fomit-frame-pointer (and
 * the compiler's default .eh_frame), its launches go through three levels of
 * functions in two libraries:
 *   main -> nofp_level1 (libgp_nofp_a.so) -> nofp_level2 (libgp_nofp_b.so)
 *        -> nofp_level3 (libgp_nofp_b.so) -> cuLaunchKernel
 * and rbp holds garbage all the way, so a frame-pointer walk cannot follow.
 */
#ifndef GP_TESTS_NOFP_H
#define GP_TESTS_NOFP_H

#include <cuda.h>

int nofp_level1(CUfunction f, int n, int depth_pad);
int nofp_level2(CUfunction f, int n, int depth_pad);
int nofp_level3(CUfunction f, int depth_pad);
/* n launches through the chain from a new thread; the caller waits. */
int nofp_spawn(CUcontext ctx, CUfunction f, int n);
/* n launches through the chain from one thread that serves every call; the caller waits. */
int nofp_worker_run(CUcontext ctx, CUfunction f, int n);

#endif
