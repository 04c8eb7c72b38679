/* SPDX-License-Identifier: MIT */
/* The per-file CFI table cache of cfi_cache.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdint.h>
#include "user/unwind/cfi_cache.h"
#include "user/util/mem_share.h"

struct cfi_ref {
	unsigned long refs;      /* the cache's own reference counts as one */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int err;                 /* the load failed: remembered */
	struct cfi_table *table;
	unsigned long last_use;
};

struct cfi_cache {
	struct cfi_ref **e;      /* every table it loaded that is still held, and unheld ones kept */
	size_t n, max_files, max_bytes;
	unsigned long clock;
	struct mem_share share;  /* every table's bytes, held or not (max_bytes) */
	unsigned long refused;   /* loads refused: every slot or byte held */
};

struct cfi_cache *cfi_cache__new(size_t max_files, size_t max_bytes)
{
	struct cfi_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->e = calloc(max_files ? max_files : 1, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return NULL;
	}
	c->max_files = max_files ? max_files : 1;
	c->max_bytes = max_bytes;
	mem_share__init(&c->share, max_bytes ? max_bytes : SIZE_MAX);
	return c;
}

void cfi_ref__put(struct cfi_ref *r)
{
	if (!r || --r->refs)
		return;
	cfi_table__free(r->table);
	free(r);
}

void cfi_cache__destroy(struct cfi_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		cfi_table__share(c->e[i]->table, NULL); /* a table held on counts nowhere */
		cfi_ref__put(c->e[i]);
	}
	free(c->e);
	free(c);
}

const struct cfi_table *cfi_ref__table(const struct cfi_ref *r)
{
	return r ? r->table : NULL;
}

static bool same_file(const struct cfi_ref *r, const struct stat *st)
{
	return r->dev == st->st_dev && r->ino == st->st_ino && r->size == st->st_size &&
	       r->mtime.tv_sec == st->st_mtim.tv_sec && r->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void drop_slot(struct cfi_cache *c, size_t i)
{
	cfi_ref__put(c->e[i]);
	c->e[i] = c->e[--c->n];
}

/*
 * Makes room: tables no process holds, least recently used first, until
 * both bounds hold or none is left. A held table is never dropped: its
 * memory would stay, out of the count, and a process mapping its file next
 * would load it again.
 */
static void evict(struct cfi_cache *c, size_t incoming)
{
	while (c->n >= c->max_files ||
	       (c->max_bytes && mem_share__bytes(&c->share) + incoming > c->max_bytes)) {
		size_t victim = c->n;

		for (size_t i = 0; i < c->n; i++)
			if (c->e[i]->refs == 1 &&
			    (victim == c->n || c->e[i]->last_use < c->e[victim]->last_use))
				victim = i;
		if (victim == c->n)
			return;
		drop_slot(c, victim);
	}
}

/*
 * Whether a new table of bytes may come in, before anything is dropped for
 * it: a slot no process holds, and within the bound once unheld tables are
 * dropped, or past it within the table's share of the bound and twice the
 * bound in all (held tables past the bound each take a share: a share of a
 * bound over ever more tables must not add up without end).
 */
static bool admits(struct cfi_cache *c, size_t bytes)
{
	size_t held_n = 0, held_bytes = 0;

	for (size_t i = 0; i < c->n; i++) {
		if (c->e[i]->refs == 1)
			continue;
		held_n++;
		held_bytes += cfi_table__bytes(c->e[i]->table);
	}
	if (held_n >= c->max_files)
		return false;
	if (!c->max_bytes || held_bytes + bytes <= c->max_bytes)
		return true;
	return held_bytes + bytes <= 2 * c->max_bytes && bytes <= c->max_bytes / (held_n + 1);
}

int cfi_cache__get_fd(struct cfi_cache *c, int fd, struct cfi_ref **ret_ref)
{
	struct cfi_ref *r;
	struct stat st;
	size_t bytes;

	if (!c || fd < 0 || !ret_ref)
		return -EINVAL;
	if (fstat(fd, &st))
		return -errno;
	for (size_t i = 0; i < c->n; i++) {
		if (!same_file(c->e[i], &st))
			continue;
		c->e[i]->last_use = ++c->clock;
		if (c->e[i]->err)
			return c->e[i]->err;
		c->e[i]->refs++;
		*ret_ref = c->e[i];
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->refs = 1;
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	r->size = st.st_size;
	r->mtime = st.st_mtim;
	r->err = cfi_table__load(fd, &r->table);
	if (r->err == -ENOMEM) {
		free(r);
		return -ENOMEM; /* not the file's fault: not remembered */
	}
	for (size_t i = 0; i < c->n; i++) /* a replaced file takes its old slot */
		if (c->e[i]->dev == r->dev && c->e[i]->ino == r->ino && c->e[i]->refs == 1) {
			drop_slot(c, i);
			break;
		}
	bytes = r->table ? cfi_table__bytes(r->table) : 0;
	if (!admits(c, bytes)) {
		c->refused++;
		cfi_ref__put(r);
		return -E2BIG; /* not remembered: room may come */
	}
	evict(c, bytes);
	cfi_table__share(r->table, &c->share);
	r->last_use = ++c->clock;
	c->e[c->n++] = r;
	if (r->err)
		return r->err;
	r->refs++;
	*ret_ref = r;
	return 0;
}

void cfi_cache__stats(const struct cfi_cache *c, size_t *ret_files, size_t *ret_bytes)
{
	*ret_files = c ? c->n : 0;
	*ret_bytes = c ? mem_share__bytes(&c->share) : 0;
}

unsigned long cfi_cache__refused(const struct cfi_cache *c)
{
	return c ? c->refused : 0;
}
