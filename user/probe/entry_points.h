/* SPDX-License-Identifier: MIT */
/*
 * The driver entry points the launch probes attach to, one row each, in
 * the order of bpf/launch.h's enum gp_probe (the probe id is the row and
 * the attach cookie). To probe a new entry point: a GP_PROBE_* value there,
 * a row here (its exported name, the name cuda.h maps it to if any, and
 * whether it launches, copies or adds a graph node). Module loads are
 * probed but none of these.
 */
#ifndef GP_PROBE_ENTRY_POINTS_H
#define GP_PROBE_ENTRY_POINTS_H

#include <stdbool.h>
#include "bpf/launch.h"

struct entry_point {
	const char *symbol;
	const char *alt_symbol;  /* the _v2 name cuda.h maps it to, if any */
	bool launch;             /* a kernel launch: joined to kernel records */
	bool copy;               /* a copy or memset: joined to memcpy/memset records */
	bool node;               /* adds a graph node: joined to its API record, no GPU work */
};

extern const struct entry_point entry_points[GP_PROBE_MAX];

/*
 * libtorch's autograd engine (libtorch_cpu.so), probed so that a backward
 * pass's launches go under the thread that called it: its symbols (C++
 * names as the Itanium ABI mangles them, stable across PyTorch 2.x) and
 * probe ids (bpf/launch.h says what each reads).
 */
struct engine_point {
	const char *symbol;
	__u32 probe;
	bool windowed; /* off between the duty cycle's windows, as the launches are */
};
#define NR_AUTOGRAD_POINTS 2
extern const struct engine_point autograd_points[NR_AUTOGRAD_POINTS];

/* A probe id's entry point name ("?" out of range), and whether it launches or copies. */
const char *entry_point__name(__u32 probe);
bool entry_point__is_launch(__u32 probe);
bool entry_point__is_copy(__u32 probe);
bool entry_point__is_node(__u32 probe);
/* Whether it launches one kernel (not a graph). */
bool entry_point__is_kernel_launch(__u32 probe);
/* Whether one activity at most is due: a kernel launch, a copy or memset but a batch of copies. */
bool entry_point__is_single(__u32 probe);

#endif /* GP_PROBE_ENTRY_POINTS_H */
