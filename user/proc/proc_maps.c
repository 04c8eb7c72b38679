/* SPDX-License-Identifier: MIT */
/*
 * /proc/<pid>/maps, read once and parsed by one parser for every user: the
 * libraries and memfds a process maps (proc.h) and the table of its
 * executable mappings (proc_maps.h). Each line is "start-end perms offset
 * maj:min inode   path"; the path runs to the end of the line, may hold
 * spaces, and is chosen by the process (the kernel escapes only '\n', as
 * "\012"). A line the parser refuses, or one longer than any the kernel
 * writes for a path of PATH_MAX, is skipped (the table counts it dropped):
 * it costs that mapping, never the rest of the file. Reads and entries are
 * capped (the kernel's default vm.max_map_count is 65530).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"
#include "user/proc/proc_maps.h"
#include "user/util/grow.h"

#define PROC_MAPS_MAX_ENTRIES (1u << 18)
#define PROC_MAPS_MAX_BYTES ((size_t)64 << 20)
/* About 75 bytes and a path of PATH_MAX, each '\n' in it written as four. */
#define PROC_MAPS_MAX_LINE 8192

/* ------------------------------------------------------------ one line */

/* Next token ending at sep; *pos moves past sep. */
static bool next_field(const char *line, size_t len, size_t *pos, char sep,
		       const char **ret_s, size_t *ret_n)
{
	size_t i = *pos;

	while (i < len && line[i] != sep)
		i++;
	if (i >= len)
		return false;
	*ret_s = line + *pos;
	*ret_n = i - *pos;
	*pos = i + 1;
	return true;
}

static bool perms_ok(const char *s, size_t n)
{
	return n == 4 && (s[0] == 'r' || s[0] == '-') && (s[1] == 'w' || s[1] == '-') &&
	       (s[2] == 'x' || s[2] == '-') && (s[3] == 'p' || s[3] == 's');
}

/* "maj:min inode": the device and the inode, which ends at a space or the line's end. */
static int parse_dev_ino(const char *line, size_t len, size_t *pos, struct proc_mapping *m)
{
	__u64 major, minor, ino;
	const char *s;
	size_t n;

	if (!next_field(line, len, pos, ':', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT32_MAX, &major))
		return -EINVAL;
	if (!next_field(line, len, pos, ' ', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT32_MAX, &minor))
		return -EINVAL;
	m->dev = makedev((unsigned)major, (unsigned)minor);
	s = line + *pos;
	n = 0;
	while (*pos + n < len && line[*pos + n] != ' ')
		n++;
	if (proc__parse_u64(s, n, 10, UINT64_MAX, &ino))
		return -EINVAL;
	m->ino = (ino_t)ino;
	*pos += n;
	return 0;
}

int proc__parse_maps_line(const char *line, size_t len, struct proc_maps_line *ret)
{
	struct proc_maps_line out;
	const char *s;
	size_t n, pos = 0;

	if (!line || !ret)
		return -EINVAL;
	if (len > 0 && line[len - 1] == '\n')
		len--;
	memset(&out, 0, sizeof(out));
	if (!next_field(line, len, &pos, '-', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT64_MAX, &out.map.start))
		return -EINVAL;
	if (!next_field(line, len, &pos, ' ', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT64_MAX, &out.map.end) || out.map.end < out.map.start)
		return -EINVAL;
	if (!next_field(line, len, &pos, ' ', &s, &n) || !perms_ok(s, n))
		return -EINVAL;
	memcpy(out.map.perms, s, 4);
	out.map.perms[4] = '\0';
	if (!next_field(line, len, &pos, ' ', &s, &n) ||
	    proc__parse_u64(s, n, 16, UINT64_MAX, &out.map.offset) ||
	    parse_dev_ino(line, len, &pos, &out.map))
		return -EINVAL;
	while (pos < len && line[pos] == ' ')
		pos++;
	if (pos < len) {
		out.path = line + pos;
		out.path_len = len - pos;
		if (memchr(out.path, '\0', out.path_len) || memchr(out.path, '\n', out.path_len))
			return -EINVAL;
	}
	*ret = out;
	return 0;
}

/* ------------------------------------------------------------ the file */

/*
 * The whole of pid's maps, up to PROC_MAPS_MAX_BYTES (what is past that is
 * not read), in a buffer with one spare byte after them.
 */
static int maps__read(pid_t pid, char **ret_text, size_t *ret_len)
{
	size_t len = 0, cap = 65536;
	char *buf, *nb;
	ssize_t n;
	int fd, err = 0;

	fd = proc__open_in_pid_dir(pid, "maps", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < PROC_MAPS_MAX_BYTES) {
		if (len == cap) {
			nb = realloc(buf, 2 * cap + 1);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*ret_text = buf;
	*ret_len = len;
	return 0;
}

/* Called for each line the parser takes: 0 goes on, > 0 stops (success), < 0 fails. */
typedef int (*maps_line_fn)(void *ctx, const struct proc_maps_line *ml);

/*
 * Each line of text through the parser to fn; empty lines are passed over,
 * refused ones (an embedded NUL, too long, not the kernel's format) counted
 * in *dropped. Returns fn's first nonzero value, or 0.
 */
static int maps__each_line(const char *text, size_t len, maps_line_fn fn, void *ctx,
			   size_t *dropped)
{
	const char *line, *nl, *end = text + len;
	struct proc_maps_line ml;
	int rc;

	for (line = text; line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			nl = end;
		if (nl == line)
			continue;
		if ((size_t)(nl - line) > PROC_MAPS_MAX_LINE ||
		    proc__parse_maps_line(line, (size_t)(nl - line), &ml)) {
			(*dropped)++;
			continue;
		}
		rc = fn(ctx, &ml);
		if (rc)
			return rc;
	}
	return 0;
}

/* Returns 1 if fn stopped, 0 at the end, or -errno. */
static int for_each_maps_line(pid_t pid, maps_line_fn fn, void *ctx)
{
	size_t len, dropped = 0;
	char *text;
	int err;

	err = maps__read(pid, &text, &len);
	if (err)
		return err;
	err = maps__each_line(text, len, fn, ctx, &dropped);
	free(text);
	return err;
}

/* ------------------------------------------------------------ libraries, memfds */

static const char deleted_suffix[] = " (deleted)";

static bool ends_with(const char *s, size_t n, const char *suffix, size_t sn)
{
	return n >= sn && memcmp(s + n - sn, suffix, sn) == 0;
}

/* The kernel escapes only '\n' in maps paths (as "\012"). 0, or -ENAMETOOLONG. */
static int unescape_maps_path(const char *s, size_t n, char *buf, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && n - i >= 4 && memcmp(s + i, "\\012", 4) == 0) {
			c = '\n';
			i += 3;
		}
		if (o + 1 >= cap)
			return -ENAMETOOLONG;
		buf[o++] = c;
	}
	buf[o] = '\0';
	return 0;
}

struct find_libs_ctx {
	pid_t pid;
	const char *prefix;
	size_t prefix_len;
	struct proc_lib *libs;
	size_t n, cap;
};

static bool find_libs__seen(const struct find_libs_ctx *ctx, const struct proc_mapping *m,
			    const char *path)
{
	for (size_t i = 0; i < ctx->n; i++) {
		const struct proc_lib *lib = &ctx->libs[i];

		if (lib->dev == m->dev && lib->ino == m->ino && !strcmp(lib->path, path))
			return true;
	}
	return false;
}

static int find_libs__grow(struct find_libs_ctx *ctx)
{
	struct proc_lib *nl;

	if (ctx->n >= PROC_LIBS_MAX)
		return -E2BIG;
	nl = grow__array_max(ctx->libs, &ctx->cap, ctx->n + 1, sizeof(*nl), 4, PROC_LIBS_MAX);
	if (!nl)
		return -ENOMEM;
	ctx->libs = nl;
	return 0;
}

static int find_libs_line(void *p, const struct proc_maps_line *ml)
{
	struct find_libs_ctx *ctx = p;
	struct proc_lib *lib;
	const char *base;
	char path[PATH_MAX];
	int len, err;

	if (ml->map.perms[2] != 'x' || ml->path_len == 0 || ml->path[0] != '/' ||
	    ml->map.ino == 0)
		return 0;
	if (ends_with(ml->path, ml->path_len, deleted_suffix, sizeof(deleted_suffix) - 1))
		return 0;
	if (unescape_maps_path(ml->path, ml->path_len, path, sizeof(path)))
		return 0;   /* longer than any path we could open */
	base = strrchr(path, '/') + 1;
	if (strlen(base) < ctx->prefix_len || memcmp(base, ctx->prefix, ctx->prefix_len) != 0 ||
	    find_libs__seen(ctx, &ml->map, path))
		return 0;
	err = find_libs__grow(ctx);
	if (err)
		return err;
	lib = &ctx->libs[ctx->n];
	len = snprintf(lib->host_path, sizeof(lib->host_path), "/proc/%d/root%s",
		       (int)ctx->pid, path);
	if (len < 0 || (size_t)len >= sizeof(lib->host_path))
		return 0;   /* unreachable from the host by name */
	memcpy(lib->path, path, strlen(path) + 1);
	lib->dev = ml->map.dev;
	lib->ino = ml->map.ino;
	lib->start = ml->map.start;
	lib->end = ml->map.end;
	ctx->n++;
	return 0;
}

int proc__find_libs(pid_t pid, const char *basename_prefix,
		    struct proc_lib **ret_libs, size_t *ret_n)
{
	struct find_libs_ctx ctx = { .pid = pid, .prefix = basename_prefix };
	int err;

	if (!basename_prefix || !ret_libs || !ret_n || strchr(basename_prefix, '/'))
		return -EINVAL;
	ctx.prefix_len = strlen(basename_prefix);
	err = for_each_maps_line(pid, find_libs_line, &ctx);
	if (err < 0) {
		free(ctx.libs);
		return err;
	}
	if (ctx.n == 0) {
		free(ctx.libs);
		ctx.libs = NULL;
	}
	*ret_libs = ctx.libs;
	*ret_n = ctx.n;
	return 0;
}

struct find_memfd_ctx {
	const char *name;
	size_t name_len;
	struct proc_mapping found;
};

static int find_memfd_line(void *p, const struct proc_maps_line *ml)
{
	static const char prefix[] = "/memfd:";
	struct find_memfd_ctx *ctx = p;
	const size_t pn = sizeof(prefix) - 1, dn = sizeof(deleted_suffix) - 1;
	size_t n = ml->path_len;

	if (n < pn || memcmp(ml->path, prefix, pn) != 0)
		return 0;
	if (n == pn + ctx->name_len + dn && ends_with(ml->path, n, deleted_suffix, dn))
		n -= dn;
	if (n != pn + ctx->name_len || memcmp(ml->path + pn, ctx->name, ctx->name_len) != 0)
		return 0;
	ctx->found = ml->map;
	return 1;
}

int proc__find_memfd(pid_t pid, const char *memfd_name, struct proc_mapping *ret)
{
	struct find_memfd_ctx ctx = { .name = memfd_name };
	int err;

	if (!memfd_name || !ret)
		return -EINVAL;
	ctx.name_len = strlen(memfd_name);
	err = for_each_maps_line(pid, find_memfd_line, &ctx);
	if (err < 0)
		return err;
	if (err == 0)
		return -ENOENT;
	*ret = ctx.found;
	return 0;
}

int proc__map_files_path(pid_t pid, const struct proc_mapping *m, char *buf, size_t len)
{
	char tmp[96];
	int n;

	if (pid <= 0 || !m || !buf)
		return -EINVAL;
	n = snprintf(tmp, sizeof(tmp), "/proc/%d/map_files/%llx-%llx", (int)pid,
		     (unsigned long long)m->start, (unsigned long long)m->end);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	if ((size_t)n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, tmp, (size_t)n + 1);
	return 0;
}

/* ------------------------------------------------------------ the executable mappings */

struct proc_maps {
	struct proc_map *maps;
	size_t n;
	size_t cap;
	size_t dropped;
	char *text; /* the executable mappings' paths (at first the file's text, ended in place) */
	size_t bytes; /* what the table holds */
};

/* Its kind from its path, which is ended in place (without " (deleted)"). */
static void map__classify(struct proc_map *m, char *path, size_t len)
{
	const size_t dn = sizeof(deleted_suffix) - 1;

	path[len] = '\0';
	if (ends_with(path, len, deleted_suffix, dn)) {
		path[len - dn] = '\0';
		m->deleted = true;
	}
	m->path = path;
	if (!*path)
		m->kind = PROC_MAP_ANON;
	else if (!strncmp(path, "/memfd:", 7))
		m->kind = PROC_MAP_MEMFD;
	else if (*path == '/')
		m->kind = PROC_MAP_FILE;
	else
		m->kind = PROC_MAP_SPECIAL;
}

static int proc_maps__push(struct proc_maps *pm, const struct proc_map *m)
{
	struct proc_map *n;

	if (pm->n >= PROC_MAPS_MAX_ENTRIES) {
		pm->dropped++;
		return 0;
	}
	n = grow__array(pm->maps, &pm->cap, pm->n + 1, sizeof(*n), 64);
	if (!n)
		return -ENOMEM;
	pm->maps = n;
	pm->maps[pm->n++] = *m;
	return 0;
}

/* An executable mapping into the table; an empty one holds no address and is dropped. */
static int table_line(void *p, const struct proc_maps_line *ml)
{
	struct proc_maps *pm = p;
	struct proc_map m = { .start = ml->map.start, .end = ml->map.end,
			      .offset = ml->map.offset, .dev = ml->map.dev, .inode = ml->map.ino,
			      .kind = PROC_MAP_ANON, .path = "" };

	if (ml->map.end == ml->map.start) {
		pm->dropped++;
		return 0;
	}
	if (ml->map.perms[2] != 'x')
		return 0;
	/* The path lies in the text the table owns: it is ended there, in place. */
	if (ml->path)
		map__classify(&m, pm->text + (ml->path - pm->text), ml->path_len);
	return proc_maps__push(pm, &m);
}

static int proc_map__cmp(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorted by address; overlaps cannot come from the kernel: the first stays, the rest count. */
static void proc_maps__sort(struct proc_maps *pm)
{
	size_t i, k;

	if (pm->n)
		qsort(pm->maps, pm->n, sizeof(*pm->maps), proc_map__cmp);
	for (i = 0, k = 0; i < pm->n; i++) {
		if (k && pm->maps[i].start < pm->maps[k - 1].end) {
			pm->dropped++;
			continue;
		}
		pm->maps[k++] = pm->maps[i];
	}
	pm->n = k;
}

/*
 * Keeps only the executable mappings' paths: the text of a process's maps is
 * mostly its other mappings (and a process chooses how much of it there is).
 */
static int proc_maps__compact(struct proc_maps *pm)
{
	size_t need = 1, at = 1;
	char *paths;

	for (size_t i = 0; i < pm->n; i++)
		need += *pm->maps[i].path ? strlen(pm->maps[i].path) + 1 : 0;
	paths = malloc(need);
	if (!paths)
		return -ENOMEM;
	paths[0] = '\0'; /* every empty path */
	for (size_t i = 0; i < pm->n; i++) {
		struct proc_map *m = &pm->maps[i];
		size_t n = strlen(m->path);

		if (!n) {
			m->path = paths;
			continue;
		}
		memcpy(paths + at, m->path, n + 1);
		m->path = paths + at;
		at += n + 1;
	}
	free(pm->text);
	pm->text = paths;
	pm->bytes = sizeof(*pm) + need + pm->cap * sizeof(*pm->maps);
	return 0;
}

/* The table of text (len bytes, one spare byte after them), which it takes over. */
static int proc_maps__from_text(char *text, size_t len, struct proc_maps **ret_maps)
{
	struct proc_maps *pm = calloc(1, sizeof(*pm));
	int err;

	if (!pm) {
		free(text);
		return -ENOMEM;
	}
	pm->text = text;
	pm->text[len] = '\0';
	err = maps__each_line(text, len, table_line, pm, &pm->dropped);
	if (err) {
		proc_maps__destroy(pm);
		return err;
	}
	proc_maps__sort(pm);
	err = proc_maps__compact(pm);
	if (err) {
		proc_maps__destroy(pm);
		return err;
	}
	*ret_maps = pm;
	return 0;
}

int proc_maps__parse(const char *text, size_t len, struct proc_maps **ret_maps)
{
	char *copy;

	if ((!text && len) || !ret_maps)
		return -EINVAL;
	if (len > PROC_MAPS_MAX_BYTES)
		len = PROC_MAPS_MAX_BYTES;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, text, len);
	return proc_maps__from_text(copy, len, ret_maps);
}

int proc_maps__load(pid_t pid, struct proc_maps **ret_maps)
{
	size_t len;
	char *text;
	int err;

	if (pid <= 0 || !ret_maps)
		return -EINVAL;
	err = maps__read(pid, &text, &len);
	if (err)
		return err;
	return proc_maps__from_text(text, len, ret_maps);
}

void proc_maps__destroy(struct proc_maps *m)
{
	if (!m)
		return;
	free(m->maps);
	free(m->text);
	free(m);
}

size_t proc_maps__count(const struct proc_maps *m)
{
	return m ? m->n : 0;
}

size_t proc_maps__bytes(const struct proc_maps *m)
{
	return m ? m->bytes : 0;
}

size_t proc_maps__dropped(const struct proc_maps *m)
{
	return m ? m->dropped : 0;
}

const struct proc_map *proc_maps__at(const struct proc_maps *m, size_t i)
{
	return m && i < m->n ? &m->maps[i] : NULL;
}

int proc_maps__find(const struct proc_maps *m, uint64_t addr, size_t *ret_index,
		    uint64_t *ret_file_offset)
{
	size_t lo = 0, hi, mid;
	const struct proc_map *pm;

	if (!m || !ret_index || !ret_file_offset)
		return -EINVAL;
	hi = m->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->maps[lo - 1].end)
		return -ENOENT;
	pm = &m->maps[lo - 1];
	*ret_index = lo - 1;
	*ret_file_offset = addr - pm->start + pm->offset;
	return 0;
}
