/* SPDX-License-Identifier: MIT */
/*
 * perf map files (/tmp/perf-<pid>.map): "START SIZE name" per line, hex,
 * as written by JITs and by CPython 3.12+ under -X perf, whose trampolines
 * are named "py::qualname:/path/file.py". The file is written by the
 * profiled process: parsed as hostile, with bounded memory (64 MiB of
 * file, 1,048,576 entries, 32 MiB of names read at most).
 */
#ifndef GP_SYMBOLIZE_PERFMAP_H
#define GP_SYMBOLIZE_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct perfmap;

struct perfmap_entry {
	uint64_t start;
	uint64_t size;
	const char *name; /* valid while the perfmap lives */
};

int perfmap__parse(const char *text, size_t len, struct perfmap **ret_map);
int perfmap__load_fd(int fd, struct perfmap **ret_map);
void perfmap__destroy(struct perfmap *m);
/* What it holds in memory. */
size_t perfmap__bytes(const struct perfmap *m);

size_t perfmap__count(const struct perfmap *m);
/* Lines not kept: malformed, overlong, empty ranges, or past the caps. */
size_t perfmap__dropped(const struct perfmap *m);
/* The entry whose [start, start+size) holds addr; later lines win. */
int perfmap__lookup(const struct perfmap *m, uint64_t addr,
		    struct perfmap_entry *ret_entry);

/*
 * Splits CPython's "py::qualname:/path/file.py" into its parts (copied,
 * truncated to fit). False for any other name.
 */
bool perfmap__python_name(const char *name, char *func, size_t func_len,
			  char *file, size_t file_len);

#endif /* GP_SYMBOLIZE_PERFMAP_H */
