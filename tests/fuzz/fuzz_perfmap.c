/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes as a perf map (written by the profiled
 * process) and, as the same kind of line-oriented hostile text, as a
 * /proc/<pid>/maps listing. Lookups of every parsed start must be sound.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "user/symbolize/perfmap.h"
#include "user/proc/proc_maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct perfmap_entry e;
	struct proc_maps *pm;
	struct perfmap *m;
	char fn[64], file[64];
	uint64_t addr, off;
	size_t i, idx;

	if (perfmap__parse((const char *)data, len, &m) == 0) {
		for (i = 0; i + 8 <= len && i < 256; i += 8) {
			memcpy(&addr, data + i, 8);
			if (perfmap__lookup(m, addr, &e) == 0) {
				if (addr < e.start || addr - e.start >= e.size)
					__builtin_trap();
				perfmap__python_name(e.name, fn, sizeof(fn), file, sizeof(file));
			}
		}
		perfmap__destroy(m);
	}
	if (proc_maps__parse((const char *)data, len, &pm) == 0) {
		for (i = 0; i < proc_maps__count(pm); i++) {
			const struct proc_map *p = proc_maps__at(pm, i);

			if (proc_maps__find(pm, p->start, &idx, &off) || idx != i)
				__builtin_trap();
		}
		proc_maps__destroy(pm);
	}
	return 0;
}
