/* SPDX-License-Identifier: MIT */
/*
 * Source lines of the cubins' SASS instructions (-lineinfo), read when PC
 * sampling is wanted, so that a sampled instruction names its file and
 * line. Keyed by the cubin's CRC, with the file names in a table of their
 * own: the store does not depend on the profile's cubin indexes or string
 * ids, and moves whole when the profile is compacted.
 *
 * The cubin comes from the profiled process (DESIGN.md invariant 5): its
 * rows are bounded in all (MAX_LINE_ROWS) and per process that brought the
 * cubin first (MAX_LINE_ROWS_PER_PROC), its file names in count and bytes;
 * a cubin past a bound keeps the rows it had, and the rest is counted
 * (cubin_lines_cut). A hostile process can only leave its own kernels, or
 * kernels loaded after it filled the store, without lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h"
#include "user/cubin/cubin_lines.h"
#include "user/util/blobtab.h"
#include "user/util/grow.h"
#include "user/util/u64map.h"

struct line_tab {
	struct cubin_line_row *rows; /* sorted by (symbol, offset) once read */
	size_t n, cap;
};

struct line_store {
	struct u64map by_crc;    /* cubin CRC -> index + 1 in tabs (0: read, no rows) */
	struct line_tab *tabs;
	size_t nr_tabs, cap_tabs;
	struct u64map per_pid;   /* pid -> rows it brought */
	struct blobtab *files;
	size_t rows;             /* all tabs' */
	__u64 cut;               /* cubins whose rows were not all kept: a bound, or unreadable */
};

struct lines_add {
	struct line_store *s;
	struct line_tab *t;
	__u64 mine;              /* rows of the process adding */
	__u32 last_file;         /* the previous row's name and id: most rows repeat it */
	char last[CUBIN_LINES_MAX_NAME];
	bool full;
};

static int store_new(struct line_store **ret)
{
	struct line_store *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (u64map__init(&s->by_crc, MAX_CUBINS) || u64map__init(&s->per_pid, 0) ||
	    blobtab__new(MAX_LINE_FILES, MAX_LINE_FILE_BYTES, &s->files)) {
		profile__lines_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void profile__lines_free(struct line_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_tabs; i++)
		free(s->tabs[i].rows);
	free(s->tabs);
	u64map__fini(&s->by_crc);
	u64map__fini(&s->per_pid);
	blobtab__destroy(s->files);
	free(s);
}

/* A row's file as an id in s->files; 0 (no file) when the names are full. */
static __u32 file_id(struct lines_add *a, const char *file)
{
	__u32 id = 0;

	if (a->last_file && !strcmp(file, a->last))
		return a->last_file;
	if (blobtab__intern(a->s->files, file, strlen(file) + 1, &id))
		return 0;
	snprintf(a->last, sizeof(a->last), "%s", file);
	a->last_file = id;
	return id;
}

static int add_row(void *ctx, __u32 sym, __u64 offset, const char *file, __u32 line)
{
	struct lines_add *a = ctx;
	struct line_tab *t = a->t;
	struct cubin_line_row *grown;

	if (a->s->rows >= MAX_LINE_ROWS || a->mine >= MAX_LINE_ROWS_PER_PROC) {
		a->full = true;
		return -E2BIG;
	}
	grown = grow__array(t->rows, &t->cap, t->n + 1, sizeof(*t->rows), 64);
	if (!grown)
		return -ENOMEM;
	t->rows = grown;
	t->rows[t->n++] = (struct cubin_line_row){ .sym_index = sym, .offset = offset, .line = line,
						   .file = line ? file_id(a, file) : 0 };
	a->s->rows++;
	a->mine++;
	return 0;
}

int profile__add_cubin_lines(struct profile *p, __u32 pid, __u64 crc, const void *elf, size_t size)
{
	struct lines_add *a;
	struct line_tab *t;
	__u64 known;
	int err;

	if (!p->pc.wanted || !crc || !elf)
		return 0;
	if (!p->lines && (err = store_new(&p->lines)))
		return err;
	if (u64map__get(&p->lines->by_crc, crc, &known))
		return 0; /* read once, by whoever brought it first */
	t = grow__array_zeroed(p->lines->tabs, &p->lines->cap_tabs, p->lines->nr_tabs + 1,
			       sizeof(*t), 16);
	a = calloc(1, sizeof(*a));
	if (!t || !a) {
		free(a);
		return -ENOMEM;
	}
	p->lines->tabs = t;
	t = &p->lines->tabs[p->lines->nr_tabs];
	*t = (struct line_tab){ 0 };
	*a = (struct lines_add){ .s = p->lines, .t = t };
	u64map__get(&p->lines->per_pid, pid, &a->mine);
	err = cubin_lines__parse(elf, size, add_row, a);
	u64map__put(&p->lines->per_pid, pid, a->mine);
	if (err && err != -ENOENT)
		p->lines->cut++; /* this cubin's lines: some, or all, not read */
	free(a);
	if (!t->n) {
		free(t->rows);
		return u64map__put(&p->lines->by_crc, crc, 0);
	}
	cubin_lines__sort(t->rows, t->n);
	p->lines->nr_tabs++;
	return u64map__put(&p->lines->by_crc, crc, p->lines->nr_tabs);
}

bool profile__line_of(const struct profile *p, __u64 crc, __u32 sym, __u64 offset,
		      const char **ret_file, __u32 *ret_line)
{
	const struct cubin_line_row *r;
	const struct line_tab *t;
	const char *file;
	__u64 idx;

	if (!p->lines || !u64map__get(&p->lines->by_crc, crc, &idx) || !idx ||
	    idx > p->lines->nr_tabs)
		return false;
	t = &p->lines->tabs[idx - 1];
	r = cubin_lines__find(t->rows, t->n, sym, offset);
	if (!r)
		return false;
	file = r->file ? blobtab__get(p->lines->files, r->file, NULL) : NULL;
	*ret_file = file ? file : "";
	*ret_line = r->line;
	return true;
}

__u64 profile__lines_cut(const struct profile *p)
{
	return p->lines ? p->lines->cut : 0;
}

size_t profile__lines_held(const struct profile *p)
{
	return p->lines ? p->lines->rows : 0;
}
