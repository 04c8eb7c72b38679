/* SPDX-License-Identifier: MIT */
/*
 * The libcuda files the launch probes are attached to (probe_files.h):
 * every entry point a file defines gets the one uprobe program, as one
 * uprobe_multi link or a perf-event uprobe each; look-alikes are refused
 * and remembered; slots of files no target maps any more are freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "user/probe/probe_files.h"
#include "user/probe/entry_points.h"
#include "user/probe/libbpf_log.h"
#include "user/probe/probe_links.h"
#include "user/probe/uprobe_multi.h"
#include "user/util/grow.h"

/* Scans in a row that found no target mapping a file before its slot is freed. */
#define SWEEP_MISSES 2
/* Slots freed per sweep at most: each detach waits for a kernel grace period. */
#define SWEEP_MAX 8

/*
 * Exports of the CUDA driver itself, beside its entry points (a one-function
 * look-alike named libcuda.so.1 has none of them); each row is one name or
 * its alternative. Every libcuda.so.1 exports them, the stub vendor's too.
 */
static const char *const driver_exports[][2] = {
	{ "cuInit", NULL }, { "cuDriverGetVersion", NULL },
	{ "cuGetProcAddress", "cuGetProcAddress_v2" }, { "cuDeviceGet", NULL },
	{ "cuCtxGetCurrent", NULL }, { "cuModuleGetFunction", NULL },
};
#define NR_DRIVER_EXPORTS (sizeof(driver_exports) / sizeof(driver_exports[0]))

static int push_link(struct probe_files *pf, struct bpf_link *link)
{
	struct bpf_link **n = grow__array(pf->links, &pf->cap_links, pf->nr_links + 1,
					  sizeof(*n), 32);

	if (!n)
		return -ENOMEM;
	pf->links = n;
	pf->links[pf->nr_links++] = link;
	return 0;
}

/* One probe to attach: its symbol (or the alternative name), cookie, and whether it launches. */
struct probe_row {
	const char *name[2];
	__u32 probe;
	bool launch;
	bool windowed; /* off between the duty cycle's windows (GP_PROBE_WINDOWED) */
};

/* The rows of a file of kind: the driver's entry points, or the autograd engine's. */
static size_t probe_rows(enum probe_file_kind kind, struct probe_row *rows)
{
	size_t n = 0;

	if (kind == PROBE_FILE_AUTOGRAD) {
		for (size_t i = 0; i < NR_AUTOGRAD_POINTS; i++)
			rows[n++] = (struct probe_row){ .name = { autograd_points[i].symbol, NULL },
							.probe = autograd_points[i].probe,
							.windowed = autograd_points[i].windowed };
		return n;
	}
	for (__u32 p = 0; p < GP_PROBE_MAX; p++)
		rows[n++] = (struct probe_row){ .name = { entry_points[p].symbol,
							  entry_points[p].alt_symbol },
						.probe = p, .launch = entry_points[p].launch,
						.windowed = GP_PROBE_WINDOWED(p) };
	return n;
}

/*
 * Each row's file offset in path (0: the file defines neither of its
 * names), by our own bounded reader of the file (uprobe_multi__offsets):
 * the number of names found, or -errno.
 */
static int row_offsets(const char *path, const struct probe_row *rows, size_t nrows, __u64 *ret_off)
{
	const char *names[2 * GP_PROBE_MAX];
	__u64 off[2 * GP_PROBE_MAX];
	int err;

	for (size_t i = 0; i < nrows; i++) {
		names[i] = rows[i].name[0];
		names[nrows + i] = rows[i].name[1];
	}
	err = uprobe_multi__offsets(path, names, 2 * nrows, off);
	for (size_t i = 0; err >= 0 && i < nrows; i++)
		ret_off[i] = off[i] ? off[i] : off[nrows + i];
	return err;
}

/* A perf-event uprobe at offset o of path for row r. */
static int attach_one(struct probe_files *pf, const struct probe_row *r, const char *path, __u64 o)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = false, .bpf_cookie = (__u64)r->probe);
	struct bpf_link *link;
	int err;

	libbpf_log__quiet(true);
	link = bpf_program__attach_uprobe_opts(pf->prog, -1, path, (size_t)o, &uo);
	libbpf_log__quiet(false);
	if (!link)
		return -errno;
	err = push_link(pf, link);
	if (err)
		bpf_link__destroy(link);
	return err;
}

/*
 * A perf-event uprobe for each row the file defines, at the offsets our own
 * reader finds (uprobe_multi__offsets: pread, bounded): never by name,
 * which has libbpf map and parse the target's file itself, where a file
 * truncated under it would be a SIGBUS in the loader.
 */
static int attach_file_each(struct probe_files *pf, const char *path, const struct probe_row *rows,
			    size_t nrows, struct launch_attach_result *res, unsigned *launches)
{
	__u64 off[GP_PROBE_MAX];
	int err = row_offsets(path, rows, nrows, off);

	if (err < 0)
		return err;
	for (size_t i = 0; i < nrows; i++) {
		__u64 o = off[i];

		if (!o) {
			res->missing++;
			continue;
		}
		err = attach_one(pf, &rows[i], path, o);
		if (err)
			return err;
		res->attached++;
		*launches += rows[i].launch;
	}
	return 0;
}

/* Whether f's windowed link belongs attached now: in a window, and for an engine, not quiet. */
static bool windowed_wanted(const struct probe_files *pf, const struct attached_file *f)
{
	return !pf->paused && !(f->autograd && pf->nodes_quiet);
}

/* The windowed link of f, made from its file again (the path it was found by may be gone). */
static int attach_windowed(struct probe_files *pf, struct attached_file *f)
{
	char path[64];
	int fd;

	if (!f->nr_win || f->win_fd >= 0 || f->file_fd < 0 || !windowed_wanted(pf, f))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->file_fd);
	fd = uprobe_multi__attach(bpf_program__fd(pf->prog), path, f->win_off, f->win_cookie,
				  f->nr_win);
	if (fd < 0)
		return fd;
	f->win_fd = fd;
	return 0;
}

/*
 * Every row the file defines in uprobe_multi links (cookie: probe id): the
 * windowed rows in one of their own (made now unless paused), the rest in
 * another.
 */
static int attach_file_multi(struct probe_files *pf, const char *path, const struct probe_row *rows,
			     size_t nrows, struct launch_attach_result *res, unsigned *launches)
{
	struct attached_file *f = &pf->files[pf->nr_files];
	__u64 off[GP_PROBE_MAX], offsets[GP_PROBE_MAX], cookies[GP_PROBE_MAX];
	size_t n = 0;
	int err = row_offsets(path, rows, nrows, off), fd;

	if (err < 0)
		return err;
	for (size_t i = 0; i < nrows; i++) {
		__u64 o = off[i];

		if (!o) {
			res->missing++;
			continue;
		}
		res->attached++;
		*launches += rows[i].launch;
		if (rows[i].windowed) {
			f->win_off[f->nr_win] = o;
			f->win_cookie[f->nr_win++] = rows[i].probe;
			continue;
		}
		offsets[n] = o;
		cookies[n++] = rows[i].probe;
	}
	if (!n && !f->nr_win)
		return -ENOENT;
	if (f->nr_win) {
		f->file_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (f->file_fd < 0)
			return -errno;
		if ((err = attach_windowed(pf, f)))
			return err;
	}
	if (!n)
		return 0;
	fd = uprobe_multi__attach(bpf_program__fd(pf->prog), path, offsets, cookies, n);
	if (fd < 0)
		return fd;
	f->multi_fd = fd;
	return 0;
}

/* Every file's windowed link made or taken away as windowed_wanted says. */
static unsigned follow_windowed(struct probe_files *pf)
{
	unsigned failed = 0;

	for (unsigned i = 0; i < pf->nr_files; i++) {
		struct attached_file *f = &pf->files[i];

		if (!windowed_wanted(pf, f) && f->win_fd >= 0) {
			close(f->win_fd);
			f->win_fd = -1;
		} else if (attach_windowed(pf, f)) {
			failed++;
		}
	}
	pf->win_errors += failed;
	return failed;
}

unsigned probe_files__pause(struct probe_files *pf, bool paused)
{
	if (pf->paused == paused)
		return 0;
	pf->paused = paused;
	return follow_windowed(pf);
}

/* Whether an engine's node link that belongs attached is missing (it could not be made again). */
static bool node_link_missing(const struct probe_files *pf)
{
	for (unsigned i = 0; i < pf->nr_files; i++) {
		const struct attached_file *f = &pf->files[i];

		if (f->autograd && f->nr_win && f->win_fd < 0 && windowed_wanted(pf, f))
			return true;
	}
	return false;
}

unsigned probe_files__quiet_nodes(struct probe_files *pf, bool quiet)
{
	if (!pf->multi)
		return 0; /* perf links: the probe stays */
	if (pf->nodes_quiet == quiet && !node_link_missing(pf))
		return 0;
	pf->nodes_quiet = quiet;
	return follow_windowed(pf);
}

/* Closes f's multi links and the fd its windowed link is made from. */
static void file__close_fds(const struct attached_file *f)
{
	if (f->multi_fd >= 0)
		close(f->multi_fd);
	if (f->win_fd >= 0)
		close(f->win_fd);
	if (f->file_fd >= 0)
		close(f->file_fd);
}

/* Undoes what attaching file i did, and frees its slot. */
static void file__detach(struct probe_files *pf, unsigned i)
{
	struct attached_file *f = &pf->files[i];

	if (f->autograd && pf->nr_autograd)
		pf->nr_autograd--;

	file__close_fds(f);
	probe_links__detach(pf->links + f->first_link, f->nr_links);
	memmove(pf->links + f->first_link, pf->links + f->first_link + f->nr_links,
		(pf->nr_links - f->first_link - f->nr_links) * sizeof(*pf->links));
	pf->nr_links -= f->nr_links;
	for (unsigned k = i + 1; k < pf->nr_files; k++)
		if (pf->files[k].first_link > f->first_link)
			pf->files[k].first_link -= f->nr_links;
	memmove(f, f + 1, (pf->nr_files - i - 1) * sizeof(*f));
	pf->nr_files--;
}

static int file__find(const struct probe_files *pf, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < pf->nr_files; i++)
		if (pf->files[i].dev == dev && pf->files[i].ino == ino)
			return (int)i;
	return -1;
}

static bool file__refused(const struct probe_files *pf, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < pf->nr_refused; i++)
		if (pf->refused[i].dev == dev && pf->refused[i].ino == ino)
			return true;
	return false;
}

static void file__refuse(struct probe_files *pf, dev_t dev, ino_t ino)
{
	pf->refused[pf->next_refused] = (struct probe_file_id){ .dev = dev, .ino = ino };
	pf->next_refused = (pf->next_refused + 1) % PROBE_FILES_REFUSED_MAX;
	if (pf->nr_refused < PROBE_FILES_REFUSED_MAX)
		pf->nr_refused++;
	pf->fst.refused++;
}

/* Whether the ELF file at path exports the driver's own functions (driver_exports). */
static bool is_driver(const char *path)
{
	const char *names[2 * NR_DRIVER_EXPORTS];
	__u64 off[2 * NR_DRIVER_EXPORTS];

	for (size_t i = 0; i < NR_DRIVER_EXPORTS; i++) {
		names[i] = driver_exports[i][0];
		names[NR_DRIVER_EXPORTS + i] = driver_exports[i][1];
	}
	if (uprobe_multi__offsets(path, names, 2 * NR_DRIVER_EXPORTS, off) < 0)
		return false;
	for (size_t i = 0; i < NR_DRIVER_EXPORTS; i++)
		if (!off[i] && !off[NR_DRIVER_EXPORTS + i])
			return false;
	return true;
}

int probe_files__attach(struct probe_files *pf, const char *path, enum probe_file_kind kind,
			struct launch_attach_result *ret_res)
{
	struct launch_attach_result res = {};
	struct probe_row rows[GP_PROBE_MAX];
	bool driver_only = kind == PROBE_FILE_DRIVER;
	size_t nrows = probe_rows(kind, rows);
	struct attached_file *f;
	struct stat st;
	unsigned launches = 0;
	int err, i;

	if (stat(path, &st))
		return -errno;
	if ((i = file__find(pf, st.st_dev, st.st_ino)) >= 0) {
		pf->files[i].seen = true;
		res.already = true;
		*ret_res = res;
		return 0;
	}
	if (driver_only && file__refused(pf, st.st_dev, st.st_ino))
		return -ENOEXEC;
	/* Before reading its symbols: a full table costs no ELF read per scan. */
	if (pf->nr_files == PROBE_FILES_MAX ||
	    (kind == PROBE_FILE_AUTOGRAD && pf->nr_autograd == PROBE_FILES_AUTOGRAD_MAX)) {
		pf->fst.no_slot++;
		return -E2BIG;
	}
	if (driver_only && !is_driver(path)) {
		file__refuse(pf, st.st_dev, st.st_ino);
		return -ENOEXEC;
	}
	f = &pf->files[pf->nr_files];
	*f = (struct attached_file){ .dev = st.st_dev, .ino = st.st_ino, .multi_fd = -1,
				     .win_fd = -1, .file_fd = -1,
				     .first_link = pf->nr_links,
				     .swept = driver_only || kind == PROBE_FILE_AUTOGRAD,
				     .autograd = kind == PROBE_FILE_AUTOGRAD, .seen = true };
	err = pf->multi ? attach_file_multi(pf, path, rows, nrows, &res, &launches)
			: attach_file_each(pf, path, rows, nrows, &res, &launches);
	f->nr_links = pf->nr_links - f->first_link;
	if (!err && kind != PROBE_FILE_AUTOGRAD && !launches)
		err = -ENOENT; /* not a CUDA driver: nothing launches through it */
	if (!err && kind == PROBE_FILE_AUTOGRAD && res.missing)
		err = -ENOENT; /* not the engine we know: half of it would mislead */
	if (err) {
		f->autograd = false; /* not counted yet */
		pf->nr_files++;
		file__detach(pf, pf->nr_files - 1); /* what attached before the failure */
		return err;
	}
	pf->nr_files++;
	pf->nr_autograd += f->autograd;
	*ret_res = res;
	return 0;
}

void probe_files__refuse(struct probe_files *pf, dev_t dev, ino_t ino)
{
	if (file__find(pf, dev, ino) < 0 && !file__refused(pf, dev, ino))
		file__refuse(pf, dev, ino);
}

int probe_files__seen(struct probe_files *pf, dev_t dev, ino_t ino)
{
	int i = file__find(pf, dev, ino);

	if (i >= 0) {
		pf->files[i].seen = true;
		return 1;
	}
	return file__refused(pf, dev, ino) ? -ENOEXEC : 0;
}

unsigned probe_files__sweep(struct probe_files *pf)
{
	unsigned freed = 0;

	for (unsigned i = 0; i < pf->nr_files;) {
		struct attached_file *f = &pf->files[i];

		f->missed = f->seen ? 0 : f->missed + 1;
		f->seen = false;
		if (f->swept && f->missed >= SWEEP_MISSES && freed < SWEEP_MAX) {
			file__detach(pf, i);
			freed++;
			continue;
		}
		i++;
	}
	pf->fst.detached += freed;
	return freed;
}

void probe_files__init(struct probe_files *pf, struct bpf_program *prog, bool multi)
{
	memset(pf, 0, sizeof(*pf));
	pf->prog = prog;
	pf->multi = multi;
}

void probe_files__fini(struct probe_files *pf)
{
	probe_links__detach(pf->links, pf->nr_links);
	free(pf->links);
	pf->links = NULL;
	pf->nr_links = pf->cap_links = 0;
	for (unsigned i = 0; i < pf->nr_files; i++)
		file__close_fds(&pf->files[i]);
	pf->nr_files = 0;
	pf->nr_autograd = 0;
}
