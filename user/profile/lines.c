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
 * a cubin past the first bound keeps its whole sequences, one past the
 * second is not kept (another process may bring it), both counted
 * (cubin_lines_cut). Compaction drops the tables of cubins no longer held.
 * A CRC is chosen by the process that computes it as much as by the bytes:
 * a process that forges another's cubin CRC and loads it first chooses
 * the lines shown for those kernels (README, Limits).
 */
#include <errno.h>
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
	size_t whole;            /* t->n after the last sequence's end: what a cut keeps */
	bool own_bound;          /* stopped by the process's own bound */
	bool unnamed;            /* a row's file name found no room */
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

/* A row's file as an id in s->files (interned once); 0 (no file) when the names are full. */
static __u32 file_id(struct line_store *s, const char *file)
{
	__u32 id = 0;

	return blobtab__intern(s->files, file, strlen(file) + 1, &id) ? 0 : id;
}

static int add_row(void *ctx, __u32 sym, __u64 offset, const char *file, __u32 line)
{
	struct lines_add *a = ctx;
	struct line_tab *t = a->t;
	struct cubin_line_row *grown;
	__u32 id = 0;

	if (a->s->rows >= MAX_LINE_ROWS)
		return -E2BIG;
	if (a->mine >= MAX_LINE_ROWS_PER_PROC) {
		a->own_bound = true;
		return -E2BIG;
	}
	grown = grow__array(t->rows, &t->cap, t->n + 1, sizeof(*t->rows), 64);
	if (!grown)
		return -ENOMEM;
	t->rows = grown;
	if (line && !(id = file_id(a->s, file)))
		a->unnamed = true;
	t->rows[t->n++] = (struct cubin_line_row){ .sym_index = sym, .offset = offset, .line = line,
						   .file = id };
	a->s->rows++;
	a->mine++;
	if (!line)
		a->whole = t->n; /* a sequence's end (or no line from here): a cut may end here */
	return 0;
}

/* Gives back n rows of t's last ones, to the store's and the process's counts. */
static void rows_drop(struct lines_add *a, size_t n)
{
	a->t->n -= n;
	a->s->rows -= n;
	a->mine -= n;
}

/*
 * Reads the cubin's rows into t: 0 and cut false when whole (or it has no
 * line table); rows only of whole sequences when cut (a sequence cut short
 * would lend its last line to the rest of its kernel); none when the
 * process's own bound stopped it (*ret_own: the cubin is left for another
 * process to read).
 */
static int lines_read(struct line_store *s, struct line_tab *t, __u32 pid, const void *elf,
		      size_t size, bool *ret_cut, bool *ret_own)
{
	struct lines_add a = { .s = s, .t = t };
	int err;

	u64map__get(&s->per_pid, pid, &a.mine);
	err = cubin_lines__parse(elf, size, add_row, &a);
	*ret_own = a.own_bound;
	*ret_cut = (err && err != -ENOENT) || a.unnamed;
	if (err == -ENOMEM)
		*ret_cut = false;
	if (a.own_bound || err == -ENOMEM)
		rows_drop(&a, t->n);
	else if (err && err != -ENOENT)
		rows_drop(&a, t->n - a.whole);
	u64map__put(&s->per_pid, pid, a.mine); /* full: that process is not charged */
	return err == -ENOMEM ? err : 0;
}

/* Keeps t's rows (t->n > 0) for crc: false, with t's rows freed, when there is no room. */
static bool lines_keep(struct line_store *s, struct line_tab *t, __u64 crc)
{
	struct line_tab *tabs = grow__array(s->tabs, &s->cap_tabs, s->nr_tabs + 1, sizeof(*tabs), 16);
	struct cubin_line_row *fit = realloc(t->rows, t->n * sizeof(*t->rows));

	if (fit) { /* the bound counts rows held, not rows a doubling left room for */
		t->rows = fit;
		t->cap = t->n;
	}
	if (tabs)
		s->tabs = tabs;
	if (!tabs || u64map__put(&s->by_crc, crc, s->nr_tabs + 1)) {
		s->rows -= t->n;
		free(t->rows);
		return false;
	}
	cubin_lines__sort(t->rows, t->n);
	s->tabs[s->nr_tabs++] = *t;
	return true;
}

int profile__add_cubin_lines(struct profile *p, __u32 pid, __u64 crc, const void *elf, size_t size)
{
	struct line_tab t = { 0 };
	struct line_store *s;
	bool cut, own, kept;
	__u64 known;
	int err;

	if (!p->pc.wanted || !crc || !elf)
		return 0;
	if (!p->lines && (err = store_new(&p->lines)))
		return err;
	s = p->lines;
	if (u64map__get(&s->by_crc, crc, &known))
		return 0; /* read once, by whoever brought it first */
	err = lines_read(s, &t, pid, elf, size, &cut, &own);
	if (err || own) {
		free(t.rows);
		s->cut += !err;
		return err;
	}
	if (!t.n) {
		free(t.rows);
		s->cut += cut;
		u64map__put(&s->by_crc, crc, 0); /* full: read again when met again */
		return 0;
	}
	kept = lines_keep(s, &t, crc); /* false: t's rows freed, counted below */
	s->cut += cut || !kept;
	return 0;
}

/*
 * After compaction (compact.c): the tables of cubins the profile no longer
 * holds go, and every process's budget starts again. -ENOMEM leaves the
 * store as it was.
 */
int profile__lines_prune(struct profile *p)
{
	struct line_store *s = p->lines;
	struct line_tab *kept;
	struct u64map by_crc;
	size_t n = 0, it = 0;
	__u64 crc, idx, held;

	if (!s)
		return 0;
	kept = calloc(s->nr_tabs ? s->nr_tabs : 1, sizeof(*kept));
	if (!kept || u64map__init(&by_crc, MAX_CUBINS)) {
		free(kept);
		return -ENOMEM;
	}
	while (u64map__next(&s->by_crc, &it, &crc, &idx)) {
		struct line_tab *t = idx && idx <= s->nr_tabs ? &s->tabs[idx - 1] : NULL;

		if (!u64map__get(&p->cubin_idx, crc, &held)) {
			if (t) {
				s->rows -= t->n;
				free(t->rows);
			}
			continue;
		}
		if (t)
			kept[n++] = *t;
		u64map__put(&by_crc, crc, t ? n : 0); /* no larger than the map it replaces */
	}
	free(s->tabs);
	s->tabs = kept;
	s->cap_tabs = s->nr_tabs ? s->nr_tabs : 1;
	s->nr_tabs = n;
	u64map__fini(&s->by_crc);
	s->by_crc = by_crc;
	u64map__clear(&s->per_pid);
	return 0;
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
