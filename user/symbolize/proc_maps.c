/* SPDX-License-Identifier: MIT */
/*
 * /proc/<pid>/maps parsing. Each line is "start-end perms offset maj:min
 * inode   path"; the path runs to the end of the line and may contain
 * spaces (the kernel escapes only '\n'). Entries are capped (the kernel's
 * default vm.max_map_count is 65530) and strings live in one arena.
 */
#include "user/symbolize/proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PROC_MAPS_MAX_ENTRIES (1u << 18)
#define PROC_MAPS_MAX_BYTES ((size_t)64 << 20)
#define PROC_MAPS_MAX_LINE 8192

struct proc_maps {
	struct proc_map *maps;
	size_t n;
	size_t cap;
	size_t dropped;
	char *text; /* the arena the paths point into */
};

/* Parses a hex field ending at a delimiter; false on garbage or overflow. */
static bool parse_hex(const char **p, const char *end, char delim, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0, c;

	while (s < end && *s != delim) {
		c = *s;
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c -= 'a' - 10;
		else if (c >= 'A' && c <= 'F')
			c -= 'A' - 10;
		else
			return false;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)c;
		s++;
	}
	if (!digits || s >= end)
		return false;
	*p = s + 1;
	*ret = v;
	return true;
}

static bool parse_dec(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 19)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (!digits)
		return false;
	*p = s;
	*ret = v;
	return true;
}

static void map__classify(struct proc_map *m, char *path)
{
	static const char deleted[] = " (deleted)";
	size_t len = strlen(path);

	if (len >= sizeof(deleted) - 1 &&
	    !strcmp(path + len - (sizeof(deleted) - 1), deleted)) {
		path[len - (sizeof(deleted) - 1)] = '\0';
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

/* Parses one NUL-terminated line in place; false if malformed. */
static bool map__parse_line(char *line, struct proc_map *m, bool *ret_exec)
{
	const char *p = line, *end = line + strlen(line);
	uint64_t major, minor;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(&p, end, '-', &m->start) || !parse_hex(&p, end, ' ', &m->end) ||
	    m->end <= m->start)
		return false;
	if (end - p < 5 || p[4] != ' ')
		return false;
	*ret_exec = p[2] == 'x';
	p += 5;
	if (!parse_hex(&p, end, ' ', &m->offset) || !parse_hex(&p, end, ':', &major) ||
	    !parse_hex(&p, end, ' ', &minor) || major > 0xfffff || minor > 0xfffff ||
	    !parse_dec(&p, end, &m->inode))
		return false;
	m->dev = makedev((unsigned)major, (unsigned)minor);
	while (*p == ' ' || *p == '\t')
		p++;
	map__classify(m, line + (p - line));
	return true;
}

static int proc_maps__push(struct proc_maps *pm, const struct proc_map *m)
{
	struct proc_map *n;
	size_t cap;

	if (pm->n >= PROC_MAPS_MAX_ENTRIES) {
		pm->dropped++;
		return 0;
	}
	if (pm->n == pm->cap) {
		cap = pm->cap ? pm->cap * 2 : 64;
		n = realloc(pm->maps, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		pm->maps = n;
		pm->cap = cap;
	}
	pm->maps[pm->n++] = *m;
	return 0;
}

static int proc_map__cmp(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int proc_maps__parse(const char *text, size_t len, struct proc_maps **ret_maps)
{
	struct proc_maps *pm;
	struct proc_map m;
	char *line, *nl, *end;
	size_t i, k;
	bool exec;
	int err = 0;

	if ((!text && len) || !ret_maps)
		return -EINVAL;
	if (len > PROC_MAPS_MAX_BYTES)
		len = PROC_MAPS_MAX_BYTES;
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->text = malloc(len + 1);
	if (!pm->text) {
		free(pm);
		return -ENOMEM;
	}
	if (len)
		memcpy(pm->text, text, len);
	pm->text[len] = '\0';
	end = pm->text + len;
	for (line = pm->text; line < end && !err; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			nl = end;
		*nl = '\0';
		if (nl == line)
			continue;
		/* An embedded NUL or an absurd length is not the kernel's output. */
		if (strlen(line) != (size_t)(nl - line) || nl - line > PROC_MAPS_MAX_LINE ||
		    !map__parse_line(line, &m, &exec)) {
			pm->dropped++;
			continue;
		}
		if (exec)
			err = proc_maps__push(pm, &m);
	}
	if (err) {
		proc_maps__destroy(pm);
		return err;
	}
	if (pm->n)
		qsort(pm->maps, pm->n, sizeof(*pm->maps), proc_map__cmp);
	/* Overlaps cannot come from the kernel; keep the first, count the rest. */
	for (i = 0, k = 0; i < pm->n; i++) {
		if (k && pm->maps[i].start < pm->maps[k - 1].end) {
			pm->dropped++;
			continue;
		}
		pm->maps[k++] = pm->maps[i];
	}
	pm->n = k;
	*ret_maps = pm;
	return 0;
}

int proc_maps__load(pid_t pid, struct proc_maps **ret_maps)
{
	char path[64], *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, err;

	if (pid <= 0 || !ret_maps)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len == cap) {
			if (cap >= PROC_MAPS_MAX_BYTES)
				break;
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				goto err_free;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto err_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	err = proc_maps__parse(buf, len, ret_maps);
	free(buf);
	return err;

err_free:
	close(fd);
	free(buf);
	return err;
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
