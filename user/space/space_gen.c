/* SPDX-License-Identifier: MIT */
/*
 * One generation of a process's address space (space.h): its mappings, the
 * file mapped at each (opened on first use, by path inside the process's
 * root when that path still names the mapped file, else through
 * /proc/<pid>/map_files), that file's symbols and CFI from the session's
 * caches, and the process's perf map, read only when it is the process's
 * own file (its user's or root's): the map must not be a way to make us
 * read another user's file. Reading the maps again keeps what was learnt
 * of each mapping still there, unchanged.
 */
#include "user/space/space.h"
#include "user/space/space_internal.h"
#include "user/proc/proc.h"
#include "user/proc/proc_maps.h"
#include "user/symbolize/elf_syms.h"
#include "user/symbolize/perfmap.h"
#include "user/unwind/cfi_cache.h"
#include "user/util/clock.h"
#include "user/util/mem_share.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ELF_REFUSED: its tenant's load budget was spent (counted once); tried again once it is not. */
enum elf_state { ELF_UNTRIED = 0, ELF_LOADED, ELF_FAILED, ELF_REFUSED };

/* What was learnt of the file behind one mapping. */
struct map_elf {
	enum elf_state state;
	struct elf_syms *syms;
	enum elf_state cfi_state;
	struct cfi_ref *cfi;
};

struct space_gen {
	struct space_caches *c;
	struct bounded *b;         /* the opens' bounded calls */
	pid_t pid;
	__u64 tenant;              /* its process's (proc__tenant): whose loads it pays */
	pid_t ns_pid;              /* the pid the process knows itself by: names its perf map */
	uid_t uid;
	int root_fd;
	struct proc_maps *maps;
	struct map_elf *elfs;      /* one per mapping */
	struct perfmap *perfmap;   /* kept across re-reads of the maps while its file is unchanged */
	struct stat perfmap_st;    /* its file's, when read */
	bool perfmap_tried;        /* looked at since the maps were last read */
	size_t maps_bytes, perfmap_bytes; /* what hold counts: the maps' tables, the perf map */
	unsigned long perfmap_reads; /* perf maps read (an unchanged one is not read again) */
	__u64 refreshed_ns;        /* when the last read of the maps began (CLOCK_MONOTONIC) */
	__u64 budget_ns;           /* the re-read budget: when it is whole again (GCRA) */
	unsigned long rereads;     /* maps read again this many times */
	unsigned long moved;       /* of those, the ones that found a mapping gone or changed */
	unsigned long limited;     /* re-reads the budget refused */
	struct mem_hold hold;      /* what it counts against the bound all generations' maps share */
	struct mem_hold *cfi_hold; /* its tenant's: the CFI tables it holds (space_caches__cfi_hold) */
};

/* ------------------------------------------------------------ the maps */

static void space_gen__drop_maps(struct space_gen *g)
{
	for (size_t i = 0; g->elfs && i < proc_maps__count(g->maps); i++) {
		elf_syms__put(g->elfs[i].syms);
		if (g->elfs[i].cfi)
			mem_hold__add(g->cfi_hold, -1);
		cfi_ref__put(g->elfs[i].cfi);
	}
	free(g->elfs);
	g->elfs = NULL;
	proc_maps__destroy(g->maps);
	g->maps = NULL;
	g->perfmap_tried = false; /* looked at again when next needed: read again only if changed */
}

static bool same_map(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->dev == b->dev && a->inode == b->inode && a->kind == b->kind &&
	       a->deleted == b->deleted && !strcmp(a->path, b->path);
}

/*
 * Moves what was learnt of each mapping still there, unchanged, to its
 * place among the new maps (both in address order); true when every old
 * mapping still is: the re-read only added mappings.
 */
static bool carry_over(struct space_gen *g, const struct proc_maps *maps, struct map_elf *elfs)
{
	size_t n_old = g->maps ? proc_maps__count(g->maps) : 0, n_new = proc_maps__count(maps);
	size_t j = 0;
	bool kept = g->maps != NULL;

	for (size_t i = 0; i < n_old; i++) {
		const struct proc_map *o = proc_maps__at(g->maps, i);

		while (j < n_new && proc_maps__at(maps, j)->start < o->start)
			j++;
		if (j == n_new || !same_map(o, proc_maps__at(maps, j))) {
			kept = false;
			continue;
		}
		if (g->elfs) {
			elfs[j] = g->elfs[i];
			memset(&g->elfs[i], 0, sizeof(g->elfs[i]));
		}
		j++;
	}
	return kept;
}

/*
 * Whether the shared bound lets this generation hold bytes (its maps'
 * tables and its perf map) in place of what it counts now; counted when it
 * does. A refusal keeps what it had.
 */
static bool space_gen__count(struct space_gen *g, size_t bytes)
{
	if (bytes > g->hold.held && !mem_hold__allows(&g->hold, bytes - g->hold.held))
		return false;
	mem_hold__add(&g->hold, (long)bytes - (long)g->hold.held);
	return true;
}

/* Reads the maps (again), the perf map to be looked at again; *ret_kept (may be NULL): only added to. */
static int space_gen__read_maps(struct space_gen *g, bool *ret_kept)
{
	struct proc_maps *maps;
	struct map_elf *elfs;
	size_t mb;
	bool kept;
	int err;

	err = proc_maps__load(g->pid, &maps);
	if (err)
		return err;
	elfs = calloc(proc_maps__count(maps) + 1, sizeof(*elfs));
	mb = proc_maps__bytes(maps) + (proc_maps__count(maps) + 1) * sizeof(*elfs);
	if (!elfs || !space_gen__count(g, mb + g->perfmap_bytes)) {
		err = elfs ? -ENOSPC : -ENOMEM;
		free(elfs);
		proc_maps__destroy(maps);
		return err;
	}
	kept = carry_over(g, maps, elfs);
	space_gen__drop_maps(g);
	g->maps_bytes = mb;
	g->maps = maps;
	g->elfs = elfs;
	if (ret_kept)
		*ret_kept = kept;
	return 0;
}

int space_gen__open(struct space_caches *c, struct bounded *b, pid_t pid, const char *root,
		    struct space_gen **ret_gen)
{
	struct space_gen *g;
	char root_path[64];
	int err;

	if (!c || !b || pid <= 0 || !ret_gen)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->b = b;
	g->pid = pid;
	g->root_fd = -1;
	g->refreshed_ns = clock_ns(CLOCK_MONOTONIC);
	err = space_caches__get(c);
	if (err)
		goto err_free;
	g->c = c;
	mem_hold__join(&g->hold, space_caches__maps_share(c));
	g->tenant = proc__tenant(pid);
	g->cfi_hold = space_caches__cfi_hold(c, g->tenant);
	err = proc__status_ids(pid, &g->ns_pid, &g->uid);
	if (err)
		goto err_destroy;
	if (!root) {
		snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
		root = root_path;
	}
	g->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	err = g->root_fd < 0 ? -errno : space_gen__read_maps(g, NULL);
	if (err)
		goto err_destroy;
	*ret_gen = g;
	return 0;

err_destroy:
	space_gen__destroy(g);
	return err;
err_free:
	free(g);
	return err;
}

void space_gen__destroy(struct space_gen *g)
{
	if (!g)
		return;
	space_gen__drop_maps(g);
	perfmap__destroy(g->perfmap);
	mem_hold__leave(&g->hold);
	if (g->root_fd >= 0)
		close(g->root_fd);
	space_caches__put(g->c);
	free(g);
}

/* ------------------------------------------------------------ reading them again */

/*
 * Every re-read of a process's maps on an address in none of them draws on
 * one budget (DESIGN.md invariant 8): the process chooses those addresses
 * (a stack of garbage, a mapping made and unmapped between two launches),
 * and a read of large maps costs milliseconds. At most SPACE_REREAD_BURST
 * at once, then one per SPACE_REREAD_EVERY_NS.
 */
static bool space_gen__budget(struct space_gen *g, __u64 now)
{
	__u64 at = g->budget_ns > now ? g->budget_ns : now;

	if (at - now > (SPACE_REREAD_BURST - 1) * SPACE_REREAD_EVERY_NS) {
		g->limited++;
		return false;
	}
	g->budget_ns = at + SPACE_REREAD_EVERY_NS;
	return true;
}

static bool space_gen__reread(struct space_gen *g)
{
	bool kept;

	if (space_gen__read_maps(g, &kept))
		return false;
	g->rereads++;
	g->moved += !kept;
	return true;
}

/* Re-reading maps costs a /proc read: at most once per SPACE_REREAD_NS on a miss. */
static bool space_gen__refresh(struct space_gen *g)
{
	__u64 now = clock_ns(CLOCK_MONOTONIC);

	if (now - g->refreshed_ns < SPACE_REREAD_NS || !space_gen__budget(g, now))
		return false;
	g->refreshed_ns = now;
	return space_gen__reread(g);
}

bool space_gen__refresh_if_older(struct space_gen *g, __u64 ts_ns)
{
	__u64 now = clock_ns(CLOCK_MONOTONIC);

	/* Taken before each read begins: a read at or after ts_ns saw what was mapped then. */
	if (!g || g->refreshed_ns >= ts_ns || !space_gen__budget(g, now))
		return false;
	g->refreshed_ns = now;
	return space_gen__reread(g);
}

unsigned long space_gen__rereads(const struct space_gen *g)
{
	return g ? g->rereads : 0;
}

unsigned long space_gen__moved(const struct space_gen *g)
{
	return g ? g->moved : 0;
}

unsigned long space_gen__limited(const struct space_gen *g)
{
	return g ? g->limited : 0;
}

/* ------------------------------------------------------------ the files mapped */

/*
 * The exact file mapped at m: by path inside the root when that path still
 * names it (same device and inode: cheap, and a deleted-and-replaced file is
 * told apart), else through map_files (overlayfs shows the real layer's
 * device, memfds and deleted files have no path; needs root).
 */
static int space_gen__open_mapped(struct space_gen *g, const struct proc_map *m, int *ret_fd)
{
	struct proc_file_id id = { .dev = m->dev, .ino = m->inode };

	if (m->kind == PROC_MAP_FILE && !m->deleted &&
	    proc__open_file_at(g->b, g->pid, g->root_fd, m->path, &id, ret_fd) == 0)
		return 0;
	return proc__open_mapped(g->b, g->pid, m->start, m->end, &id, O_RDONLY, ret_fd);
}

/*
 * Whether a file of g's whose load is in state may be loaded now: one not
 * tried yet, or refused before, while g's tenant may load (a refusal
 * counted once per file of a generation).
 */
static bool space_gen__may_load(struct space_gen *g, enum elf_state *state)
{
	if (*state != ELF_UNTRIED && *state != ELF_REFUSED)
		return false;
	if (!space_caches__may_load(g->c, g->tenant, *state == ELF_UNTRIED)) {
		*state = ELF_REFUSED;
		return false;
	}
	*state = ELF_FAILED;
	return true;
}

static struct elf_syms *space_gen__elf(struct space_gen *g, size_t idx)
{
	struct map_elf *me = &g->elfs[idx];
	int fd;

	if (!space_gen__may_load(g, &me->state))
		return me->syms;
	if (space_gen__open_mapped(g, proc_maps__at(g->maps, idx), &fd) == 0) {
		if (space_caches__elf(g->c, g->tenant, fd, &me->syms) == 0)
			me->state = ELF_LOADED;
		close(fd);
	}
	return me->syms;
}

static const struct cfi_table *space_gen__cfi_of(struct space_gen *g, size_t idx)
{
	struct map_elf *me = &g->elfs[idx];
	int fd;

	if (space_gen__may_load(g, &me->cfi_state)) {
		/* Its tenant past its share of the tables held: none more (counted there). */
		if (mem_hold__allows(g->cfi_hold, 1) &&
		    space_gen__open_mapped(g, proc_maps__at(g->maps, idx), &fd) == 0) {
			if (space_caches__cfi(g->c, g->tenant, fd, &me->cfi) == 0) {
				me->cfi_state = ELF_LOADED;
				mem_hold__add(g->cfi_hold, 1);
			}
			close(fd);
		}
	}
	return cfi_ref__table(me->cfi);
}

static void space_gen__forget_perfmap(struct space_gen *g)
{
	perfmap__destroy(g->perfmap);
	g->perfmap = NULL;
	if (g->perfmap_bytes) {
		g->perfmap_bytes = 0;
		space_gen__count(g, g->maps_bytes); /* less: always allowed */
	}
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * The perf map, if the process's own: looked at once per reading of the
 * maps, and read again only when its file changed (a process that makes
 * its maps be read again and again does not make a large perf map be
 * parsed each time). Counted with the maps against the share all
 * generations hold: past it, none (maps_over_share); its reading is a load
 * of its tenant's (space_caches__may_load): past that budget, none.
 */
static struct perfmap *space_gen__perfmap(struct space_gen *g)
{
	struct perfmap *m = NULL;
	char path[64];
	struct stat st;
	__u64 t0;
	int fd;

	if (g->perfmap_tried)
		return g->perfmap;
	g->perfmap_tried = true;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)g->ns_pid);
	if (proc__open_file_at(g->b, g->pid, g->root_fd, path, NULL, &fd)) {
		space_gen__forget_perfmap(g);
		return NULL;
	}
	if (fstat(fd, &st) || (st.st_uid != g->uid && st.st_uid != 0)) {
		close(fd);
		space_gen__forget_perfmap(g);
		return NULL;
	}
	if (g->perfmap && same_file(&g->perfmap_st, &st)) {
		close(fd);
		return g->perfmap;
	}
	space_gen__forget_perfmap(g);
	if (!space_caches__may_load(g->c, g->tenant, true)) {
		close(fd); /* its tenant's load budget spent: JIT frames unnamed until the next read */
		return NULL;
	}
	g->perfmap_reads++;
	t0 = clock_ns(CLOCK_MONOTONIC);
	if (!perfmap__load_fd(fd, &m) && space_gen__count(g, g->maps_bytes + perfmap__bytes(m))) {
		g->perfmap = m;
		g->perfmap_bytes = perfmap__bytes(m);
		g->perfmap_st = st;
	} else {
		perfmap__destroy(m);
	}
	space_caches__loaded(g->c, g->tenant, t0);
	close(fd);
	return g->perfmap;
}

unsigned long space_gen__perfmap_reads(const struct space_gen *g)
{
	return g ? g->perfmap_reads : 0;
}

/* ------------------------------------------------------------ lookups */

static int space_gen__cfi_now(struct space_gen *g, __u64 addr, const struct cfi_table **ret_table,
			      __u64 *ret_bias)
{
	const struct proc_map *m;
	uint64_t file_off;
	__u64 vaddr;
	size_t idx;

	if (proc_maps__find(g->maps, addr, &idx, &file_off))
		return -ENOENT;
	m = proc_maps__at(g->maps, idx);
	if (m->kind != PROC_MAP_FILE && m->kind != PROC_MAP_MEMFD) {
		*ret_table = NULL; /* JIT code, trampolines: frame pointers */
		*ret_bias = 0;
		return 0;
	}
	/* The table's own segments: the symbols wait for naming, not for the ring's drain. */
	*ret_table = space_gen__cfi_of(g, idx);
	if (!*ret_table || cfi_table__file_to_vaddr(*ret_table, file_off, &vaddr))
		vaddr = file_off;
	*ret_bias = addr - vaddr;
	return 0;
}

int space_gen__cfi(struct space_gen *g, __u64 addr, const struct cfi_table **ret_table,
		   __u64 *ret_bias)
{
	int err;

	if (!g || !ret_table || !ret_bias)
		return -EINVAL;
	err = space_gen__cfi_now(g, addr, ret_table, ret_bias);
	if (err == -ENOENT && space_gen__refresh(g))
		err = space_gen__cfi_now(g, addr, ret_table, ret_bias);
	return err;
}

static int space_gen__name_now(struct space_gen *g, __u64 addr, struct symbolized_frame *f)
{
	const struct proc_map *m = NULL;
	uint64_t file_off = 0;
	size_t idx;

	if (proc_maps__find(g->maps, addr, &idx, &file_off) == 0)
		m = proc_maps__at(g->maps, idx);
	if (m && (m->kind == PROC_MAP_FILE || m->kind == PROC_MAP_MEMFD)) {
		symbolize__native(m->path, space_gen__elf(g, idx), file_off, f);
		return 0;
	}
	if (symbolize__jit(space_gen__perfmap(g), addr, f))
		return 0;
	if (m && m->kind == PROC_MAP_SPECIAL) {
		symbolize__special(m->path, m->start, addr, f);
		return 0;
	}
	return -ENOENT;
}

bool space_gen__mapless(const struct space_gen *g)
{
	return g && g->maps && proc_maps__count(g->maps) == 0;
}

int space_gen__name(struct space_gen *g, __u64 addr, struct symbolized_frame *ret_frame)
{
	struct symbolized_frame f;
	int err;

	if (!g || !ret_frame)
		return -EINVAL;
	err = space_gen__name_now(g, addr, &f);
	/* A library loaded since the maps were read: read them again, once. */
	if (err == -ENOENT && space_gen__refresh(g))
		err = space_gen__name_now(g, addr, &f);
	if (err)
		return err;
	*ret_frame = f;
	return 0;
}
