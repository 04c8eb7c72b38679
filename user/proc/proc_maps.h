/* SPDX-License-Identifier: MIT */
/*
 * The executable mappings of a process, from /proc/<pid>/maps: which file
 * (or JIT area, vdso, memfd) an instruction address falls in, and where in
 * that file. Path names are chosen by the process: parsed as hostile text,
 * line by line by the one maps parser (proc_internal.h's
 * proc__parse_maps_line); a line it refuses is dropped, and counted.
 */
#ifndef GP_PROC_PROC_MAPS_H
#define GP_PROC_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum proc_map_kind {
	PROC_MAP_FILE,    /* a path in the process's filesystem view */
	PROC_MAP_ANON,    /* no path: JIT code, CPython trampolines */
	PROC_MAP_MEMFD,   /* "/memfd:name": only reachable through map_files */
	PROC_MAP_SPECIAL, /* "[vdso]", "[vsyscall]", ... */
};

struct proc_map {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t dev; /* makedev(major, minor) as st_dev */
	uint64_t inode;
	enum proc_map_kind kind;
	bool deleted; /* " (deleted)": the path no longer names this file */
	const char *path; /* without " (deleted)"; "" for anonymous */
};

struct proc_maps;

/* Parses maps text; only executable mappings are kept. */
int proc_maps__parse(const char *text, size_t len, struct proc_maps **ret_maps);
int proc_maps__load(pid_t pid, struct proc_maps **ret_maps);
void proc_maps__destroy(struct proc_maps *m);

size_t proc_maps__count(const struct proc_maps *m);
/* The memory the table holds (its entries and their paths), in bytes. */
size_t proc_maps__bytes(const struct proc_maps *m);
/* Lines skipped: malformed, or past the entry cap. */
size_t proc_maps__dropped(const struct proc_maps *m);
const struct proc_map *proc_maps__at(const struct proc_maps *m, size_t i);
/* The executable mapping holding addr, its index, and addr's offset in the file. */
int proc_maps__find(const struct proc_maps *m, uint64_t addr, size_t *ret_index,
		    uint64_t *ret_file_offset);

#endif /* GP_PROC_PROC_MAPS_H */
