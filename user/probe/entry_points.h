/* SPDX-License-Identifier: MIT */
/*
 * The driver entry points the launch probes attach to, one row each, in
 * the order of bpf/launch.h's enum gp_probe (the probe id is the row and
 * the attach cookie). To probe a new entry point: a GP_PROBE_* value there,
 * a row here (its exported name, the name cuda.h maps it to if any, and
 * whether it launches or copies). Module loads are probed but neither.
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
};

extern const struct entry_point entry_points[GP_PROBE_MAX];

#endif /* GP_PROBE_ENTRY_POINTS_H */
