/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's autograd engine (libtorch_cpu.so) in a target's maps, probed
 * where a backward pass begins and where its engine threads take its nodes
 * (entry_points.h's autograd_points), so that their launches go under the
 * caller of backward(). The file is opened in the target's root as a
 * libcuda is (libcuda.h); a file that does not export both points is
 * refused (-ENOENT) and its launches keep their own stacks.
 */
#ifndef GP_PROBE_LIBTORCH_H
#define GP_PROBE_LIBTORCH_H

#include <sys/types.h>

struct launch_probe;
struct bounded;

/*
 * Attaches the autograd engine of every libtorch_cpu the process maps.
 * 1 when one is attached (now or before), 0 when it maps none, -errno
 * (-ENOENT: not an engine we know; -E2BIG: no slot) for the first failure.
 */
int libtorch__attach_pid(struct launch_probe *lp, struct bounded *b, pid_t pid);

#endif /* GP_PROBE_LIBTORCH_H */
