/* SPDX-License-Identifier: MIT */
/*
 * The symbolization facade. For a native address: mapping -> file offset
 * -> ELF virtual address (PT_LOAD) -> symbol. The file is opened by path
 * inside the process's root; when that path now names another file than
 * the one mapped (replaced, deleted, memfd), /proc/<pid>/map_files gives
 * the mapped file itself. Anonymous code is looked up in the perf map,
 * which is only read when owned by the process's user or root: the map
 * is the process's own file, and must not be a way to make us read others'.
 */
#include "user/symbolize/symbolize.h"
#include "user/symbolize/demangle.h"
#include "user/symbolize/elf_syms.h"
#include "user/symbolize/perfmap.h"
#include "user/proc/proc_maps.h"
#include "user/proc/proc.h"
#include "user/unwind/cfi_cache.h"
#include "user/util/clock.h"

#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYMBOLIZE_MAX_FILES 512
/* CFI tables kept for files no process maps any more, at most. */
#define SYMBOLIZE_CFI_BYTES (256u << 20)

struct symbolize {
	struct elf_cache *cache;
	struct cfi_cache *cfi;
};

enum elf_state { ELF_UNTRIED = 0, ELF_LOADED, ELF_FAILED };

struct map_elf {
	enum elf_state state;
	struct elf_syms *syms;
	enum elf_state cfi_state;
	struct cfi_ref *cfi;
};

struct symbolize_pid {
	struct symbolize *s;
	pid_t pid;
	pid_t ns_pid; /* the pid the process knows itself by: names its perf map */
	uid_t uid;
	int root_fd;
	struct proc_maps *maps;
	struct map_elf *elfs; /* one per mapping */
	struct perfmap *perfmap;
	bool perfmap_tried;
};

struct symbolize *symbolize__new(void)
{
	struct symbolize *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cache = elf_cache__new(SYMBOLIZE_MAX_FILES);
	s->cfi = cfi_cache__new(SYMBOLIZE_MAX_FILES, SYMBOLIZE_CFI_BYTES);
	if (!s->cache || !s->cfi) {
		symbolize__destroy(s);
		return NULL;
	}
	return s;
}

void symbolize__destroy(struct symbolize *s)
{
	if (!s)
		return;
	elf_cache__destroy(s->cache);
	cfi_cache__destroy(s->cfi);
	free(s);
}

void symbolize__stats(const struct symbolize *s, size_t *ret_sym_bytes, size_t *ret_cfi_bytes)
{
	size_t files;

	elf_cache__stats(s->cache, &files, ret_sym_bytes);
	cfi_cache__stats(s->cfi, &files, ret_cfi_bytes);
}

/* NSpid's last field and Uid's first (real) field from /proc/<pid>/status. */
static int proc_status__read(pid_t pid, pid_t *ret_ns_pid, uid_t *ret_uid)
{
	char path[64], line[512];
	long ns_pid = pid, uid = -1;
	char *last, *end;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			last = strrchr(line, '\t');
			if (last) {
				errno = 0;
				ns_pid = strtol(last + 1, &end, 10);
				if (errno || ns_pid <= 0 || ns_pid > INT32_MAX)
					ns_pid = pid;
			}
		} else if (!strncmp(line, "Uid:", 4)) {
			errno = 0;
			uid = strtol(line + 4, &end, 10);
			if (errno || end == line + 4)
				uid = -1;
		}
	}
	fclose(f);
	if (uid < 0)
		return -EINVAL;
	*ret_ns_pid = (pid_t)ns_pid;
	*ret_uid = (uid_t)uid;
	return 0;
}

static void symbolize_pid__drop_maps(struct symbolize_pid *sp)
{
	size_t i;

	for (i = 0; sp->elfs && i < proc_maps__count(sp->maps); i++) {
		elf_syms__put(sp->elfs[i].syms);
		cfi_ref__put(sp->elfs[i].cfi);
	}
	free(sp->elfs);
	sp->elfs = NULL;
	proc_maps__destroy(sp->maps);
	sp->maps = NULL;
	perfmap__destroy(sp->perfmap);
	sp->perfmap = NULL;
	sp->perfmap_tried = false;
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
static bool carry_over(struct symbolize_pid *sp, const struct proc_maps *maps,
		       struct map_elf *elfs)
{
	size_t n_old = sp->maps ? proc_maps__count(sp->maps) : 0, n_new = proc_maps__count(maps);
	size_t j = 0;
	bool kept = sp->maps != NULL;

	for (size_t i = 0; i < n_old; i++) {
		const struct proc_map *o = proc_maps__at(sp->maps, i);

		while (j < n_new && proc_maps__at(maps, j)->start < o->start)
			j++;
		if (j == n_new || !same_map(o, proc_maps__at(maps, j))) {
			kept = false;
			continue;
		}
		if (sp->elfs) {
			elfs[j] = sp->elfs[i];
			memset(&sp->elfs[i], 0, sizeof(sp->elfs[i]));
		}
		j++;
	}
	return kept;
}

int symbolize_pid__refresh(struct symbolize_pid *sp, bool *ret_kept)
{
	struct proc_maps *maps;
	struct map_elf *elfs;
	bool kept;
	int err;

	if (!sp)
		return -EINVAL;
	err = proc_maps__load(sp->pid, &maps);
	if (err)
		return err;
	elfs = calloc(proc_maps__count(maps) + 1, sizeof(*elfs));
	if (!elfs) {
		proc_maps__destroy(maps);
		return -ENOMEM;
	}
	kept = carry_over(sp, maps, elfs);
	symbolize_pid__drop_maps(sp);
	sp->maps = maps;
	sp->elfs = elfs;
	if (ret_kept)
		*ret_kept = kept;
	return 0;
}

int symbolize__pid_new(struct symbolize *s, pid_t pid, const char *root,
		       struct symbolize_pid **ret_sp)
{
	struct symbolize_pid *sp;
	char root_path[64];
	int err;

	if (!s || pid <= 0 || !ret_sp)
		return -EINVAL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->s = s;
	sp->pid = pid;
	sp->root_fd = -1;
	err = proc_status__read(pid, &sp->ns_pid, &sp->uid);
	if (err)
		goto err_free;
	if (!root) {
		snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)pid);
		root = root_path;
	}
	sp->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sp->root_fd < 0) {
		err = -errno;
		goto err_free;
	}
	err = symbolize_pid__refresh(sp, NULL);
	if (err)
		goto err_close_root;
	*ret_sp = sp;
	return 0;

err_close_root:
	close(sp->root_fd);
err_free:
	free(sp);
	return err;
}

void symbolize_pid__destroy(struct symbolize_pid *sp)
{
	if (!sp)
		return;
	symbolize_pid__drop_maps(sp);
	if (sp->root_fd >= 0)
		close(sp->root_fd);
	free(sp);
}

/* The exact file mapped, whatever its path names now (needs root or ptrace access). */
static int symbolize_pid__open_map_file(struct symbolize_pid *sp, const struct proc_map *m,
					int *ret_fd)
{
	struct proc_file_id id = { .dev = m->dev, .ino = m->inode };

	return proc__open_mapped(sp->pid, m->start, m->end, &id, O_RDONLY, ret_fd);
}

/*
 * The exact file mapped at m: by path inside the root when that path still
 * names it (same device and inode: cheap, and a deleted-and-replaced file is
 * told apart), else through map_files (overlayfs shows the real layer's
 * device, memfds and deleted files have no path).
 */
static int symbolize_pid__open_mapped(struct symbolize_pid *sp, const struct proc_map *m,
				      int *ret_fd)
{
	struct proc_file_id id = { .dev = m->dev, .ino = m->inode };

	if (m->kind == PROC_MAP_FILE && !m->deleted &&
	    proc__open_file_at(sp->pid, sp->root_fd, m->path, &id, ret_fd) == 0)
		return 0;
	return symbolize_pid__open_map_file(sp, m, ret_fd);
}

static int symbolize_pid__load_elf(struct symbolize_pid *sp, const struct proc_map *m,
				   struct elf_syms **ret_syms)
{
	int fd, err;

	err = symbolize_pid__open_mapped(sp, m, &fd);
	if (err)
		return err;
	err = elf_cache__get_fd(sp->s->cache, fd, ret_syms);
	close(fd);
	return err;
}

static struct elf_syms *symbolize_pid__elf(struct symbolize_pid *sp, size_t idx)
{
	struct map_elf *me = &sp->elfs[idx];

	if (me->state == ELF_UNTRIED)
		me->state = symbolize_pid__load_elf(sp, proc_maps__at(sp->maps, idx), &me->syms)
				    ? ELF_FAILED : ELF_LOADED;
	return me->syms;
}

int symbolize_pid__cfi(struct symbolize_pid *sp, uint64_t addr, const struct cfi_table **ret_table,
		       uint64_t *ret_bias)
{
	const struct proc_map *m;
	struct elf_syms *syms;
	struct map_elf *me;
	uint64_t file_off, vaddr;
	size_t idx;
	int fd;

	if (!sp || !ret_table || !ret_bias)
		return -EINVAL;
	if (proc_maps__find(sp->maps, addr, &idx, &file_off))
		return -ENOENT;
	m = proc_maps__at(sp->maps, idx);
	if (m->kind != PROC_MAP_FILE && m->kind != PROC_MAP_MEMFD) {
		*ret_table = NULL; /* JIT code, trampolines: frame pointers */
		*ret_bias = 0;
		return 0;
	}
	me = &sp->elfs[idx];
	if (me->cfi_state == ELF_UNTRIED) {
		me->cfi_state = ELF_FAILED;
		if (symbolize_pid__open_mapped(sp, m, &fd) == 0) {
			if (cfi_cache__get_fd(sp->s->cfi, fd, &me->cfi) == 0)
				me->cfi_state = ELF_LOADED;
			close(fd);
		}
	}
	vaddr = file_off;
	syms = symbolize_pid__elf(sp, idx);
	if (syms)
		elf_syms__file_to_vaddr(syms, file_off, &vaddr);
	*ret_table = cfi_ref__table(me->cfi);
	*ret_bias = addr - vaddr;
	return 0;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

static const char *path__base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static void symbolize__native(const struct proc_map *m, struct elf_syms *syms,
			      uint64_t file_off, struct symbolize_frame *f)
{
	const char *name;
	uint64_t vaddr = file_off, off;
	char *pretty;

	copy_str(f->file, sizeof(f->file), m->path);
	if (syms) {
		copy_str(f->build_id, sizeof(f->build_id), elf_syms__build_id(syms));
		elf_syms__file_to_vaddr(syms, file_off, &vaddr);
	}
	f->elf_addr = vaddr;
	if (syms && elf_syms__lookup(syms, vaddr, &name, &off) == 0) {
		pretty = demangle__or_copy(name);
		copy_str(f->function, sizeof(f->function), pretty ? pretty : name);
		free(pretty);
		f->has_symbol = true;
		return;
	}
	snprintf(f->function, sizeof(f->function), "%s+0x%" PRIx64, path__base(m->path), vaddr);
}

static struct perfmap *symbolize_pid__perfmap(struct symbolize_pid *sp)
{
	char path[64];
	struct stat st;
	int fd;

	if (sp->perfmap_tried)
		return sp->perfmap;
	sp->perfmap_tried = true;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)sp->ns_pid);
	if (proc__open_file_at(sp->pid, sp->root_fd, path, NULL, &fd))
		return NULL;
	if (fstat(fd, &st) == 0 && (st.st_uid == sp->uid || st.st_uid == 0))
		perfmap__load_fd(fd, &sp->perfmap);
	close(fd);
	return sp->perfmap;
}

static bool symbolize__jit(struct perfmap *pm, uint64_t addr, struct symbolize_frame *f)
{
	struct perfmap_entry e;

	if (!pm || perfmap__lookup(pm, addr, &e))
		return false;
	f->elf_addr = addr;
	f->has_symbol = true;
	f->is_python = perfmap__python_name(e.name, f->function, sizeof(f->function),
					    f->file, sizeof(f->file));
	if (!f->is_python) {
		copy_str(f->function, sizeof(f->function), e.name);
		copy_str(f->file, sizeof(f->file), "[jit]");
	}
	return true;
}

int symbolize_pid__lookup(struct symbolize_pid *sp, uint64_t addr,
			  struct symbolize_frame *ret_frame)
{
	struct symbolize_frame f = { 0 };
	const struct proc_map *m = NULL;
	uint64_t file_off = 0;
	size_t idx;

	if (!sp || !ret_frame)
		return -EINVAL;
	if (proc_maps__find(sp->maps, addr, &idx, &file_off) == 0)
		m = proc_maps__at(sp->maps, idx);
	if (m && (m->kind == PROC_MAP_FILE || m->kind == PROC_MAP_MEMFD)) {
		symbolize__native(m, symbolize_pid__elf(sp, idx), file_off, &f);
	} else if (symbolize__jit(symbolize_pid__perfmap(sp), addr, &f)) {
		/* filled in */
	} else if (m && m->kind == PROC_MAP_SPECIAL) {
		copy_str(f.file, sizeof(f.file), m->path);
		f.elf_addr = addr - m->start;
		snprintf(f.function, sizeof(f.function), "%s+0x%" PRIx64, m->path, f.elf_addr);
	} else {
		return -ENOENT;
	}
	*ret_frame = f;
	return 0;
}

/* ---------------------------------------------------------------- per-process handle */

struct symbolizer {
	struct symbolize_pid *sp;
	uint64_t refreshed_ns;     /* when the last read of the maps began (CLOCK_MONOTONIC) */
	uint64_t budget_ns;        /* the re-read budget: when it is whole again (GCRA) */
	unsigned long generation;  /* maps read again this many times */
	unsigned long moved;       /* of those, the ones that found a mapping gone or changed */
	unsigned long limited;     /* re-reads the budget refused */
};

/*
 * Every re-read of a process's maps on an address in none of them draws on
 * one budget per process (DESIGN.md invariant 8): the process chooses those
 * addresses (a stack of garbage, a mapping made and unmapped between two
 * launches), and a read of large maps costs milliseconds. At most
 * SYMBOLIZE_REREAD_BURST at once, then one per SYMBOLIZE_REREAD_EVERY_NS.
 */
static bool symbolizer__budget(struct symbolizer *sym, uint64_t now)
{
	uint64_t at = sym->budget_ns > now ? sym->budget_ns : now;

	if (at - now > (SYMBOLIZE_REREAD_BURST - 1) * SYMBOLIZE_REREAD_EVERY_NS) {
		sym->limited++;
		return false;
	}
	sym->budget_ns = at + SYMBOLIZE_REREAD_EVERY_NS;
	return true;
}

/* Re-reading maps costs a /proc read: at most once per SYMBOLIZE_REREAD_NS per process. */
static bool symbolizer__may_refresh(struct symbolizer *sym)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (now - sym->refreshed_ns < SYMBOLIZE_REREAD_NS || !symbolizer__budget(sym, now))
		return false;
	sym->refreshed_ns = now;
	return true;
}

static bool symbolizer__reread(struct symbolizer *sym)
{
	bool kept;

	if (symbolize_pid__refresh(sym->sp, &kept))
		return false;
	sym->generation++;
	sym->moved += !kept;
	return true;
}

/* Reads the maps again, at most every 50 ms: true when they were. */
static bool symbolizer__refresh(struct symbolizer *sym)
{
	return symbolizer__may_refresh(sym) && symbolizer__reread(sym);
}

bool symbolizer__refresh_if_older(struct symbolizer *sym, uint64_t ts_ns)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	/* Taken before each read begins: a read at or after ts_ns saw what was mapped then. */
	if (!sym || sym->refreshed_ns >= ts_ns || !symbolizer__budget(sym, now))
		return false;
	sym->refreshed_ns = now;
	return symbolizer__reread(sym);
}

static struct symbolize *shared_symbolize;
static unsigned long shared_users;

int symbolizer__new(pid_t pid, struct symbolizer **ret_sym)
{
	struct symbolizer *sym;
	int err;

	if (!ret_sym)
		return -EINVAL;
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	if (!shared_symbolize) {
		shared_symbolize = symbolize__new();
		if (!shared_symbolize) {
			free(sym);
			return -ENOMEM;
		}
	}
	shared_users++;
	sym->refreshed_ns = clock_ns(CLOCK_MONOTONIC);
	err = symbolize__pid_new(shared_symbolize, pid, NULL, &sym->sp);
	if (err) {
		symbolizer__destroy(sym);
		return err;
	}
	*ret_sym = sym;
	return 0;
}

void symbolizer__destroy(struct symbolizer *sym)
{
	if (!sym)
		return;
	symbolize_pid__destroy(sym->sp);
	free(sym);
	if (shared_users && --shared_users == 0) {
		symbolize__destroy(shared_symbolize);
		shared_symbolize = NULL;
	}
}

void symbolizer__stats(size_t *ret_sym_bytes, size_t *ret_cfi_bytes)
{
	*ret_sym_bytes = *ret_cfi_bytes = 0;
	if (shared_symbolize)
		symbolize__stats(shared_symbolize, ret_sym_bytes, ret_cfi_bytes);
}

int symbolizer__cfi(struct symbolizer *sym, uint64_t addr, const struct cfi_table **ret_table,
		    uint64_t *ret_bias)
{
	int err;

	if (!sym)
		return -EINVAL;
	err = symbolize_pid__cfi(sym->sp, addr, ret_table, ret_bias);
	if (err == -ENOENT && symbolizer__refresh(sym))
		err = symbolize_pid__cfi(sym->sp, addr, ret_table, ret_bias);
	return err;
}

unsigned long symbolizer__generation(const struct symbolizer *sym)
{
	return sym ? sym->generation : 0;
}

unsigned long symbolizer__moved(const struct symbolizer *sym)
{
	return sym ? sym->moved : 0;
}

unsigned long symbolizer__limited(const struct symbolizer *sym)
{
	return sym ? sym->limited : 0;
}

int symbolizer__lookup(struct symbolizer *sym, uint64_t addr,
		       struct symbolized_frame *ret_frame)
{
	struct symbolize_frame f;
	int err;

	if (!sym || !ret_frame)
		return -EINVAL;
	err = symbolize_pid__lookup(sym->sp, addr, &f);
	/* A library loaded since the maps were read: read them again, once. */
	if (err == -ENOENT && symbolizer__refresh(sym))
		err = symbolize_pid__lookup(sym->sp, addr, &f);
	if (err)
		return err;
	memset(ret_frame, 0, sizeof(*ret_frame));
	copy_str(ret_frame->name, sizeof(ret_frame->name), f.function);
	copy_str(ret_frame->file, sizeof(ret_frame->file), f.file);
	copy_str(ret_frame->build_id, sizeof(ret_frame->build_id), f.build_id);
	ret_frame->addr = f.elf_addr;
	ret_frame->is_python = f.is_python;
	return 0;
}

