/* SPDX-License-Identifier: MIT */
/*
 * perf map parsing. Lines are read streaming with a fixed line buffer, so
 * a line longer than it is skipped (and counted) without growing anything;
 * entries and name bytes are capped. After parsing, entries are sorted by
 * start (stable on line order), so lookup is a binary search: O(n log n)
 * to load, O(log n) to query. When ranges overlap, the line written last
 * describes the code that is there now, so it wins.
 */
#include "user/symbolize/perfmap.h"
#include "user/util/grow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PERFMAP_MAX_ENTRIES (1u << 20)
#define PERFMAP_MAX_NAME_BYTES ((size_t)32 << 20)
#define PERFMAP_MAX_LINE 4096
#define PERFMAP_MAX_FILE ((uint64_t)64 << 20)
#define PERFMAP_OVERLAP_SCAN 16 /* entries looked at behind a miss */

struct pm_entry {
	uint64_t start;
	uint64_t size;
	uint64_t seq;  /* line order, for "later wins" */
	size_t name;   /* offset in names */
};

struct perfmap {
	struct pm_entry *ents;
	size_t n;
	size_t cap;
	char *names;
	size_t names_len;
	size_t names_cap;
	size_t dropped;
	uint64_t seq;
};

static bool pm__hex(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0, c;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while (s < end) {
		c = *s;
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c -= 'a' - 10;
		else if (c >= 'A' && c <= 'F')
			c -= 'A' - 10;
		else
			break;
		if (++digits > 16)
			return false;
		v = v << 4 | (uint64_t)c;
		s++;
	}
	if (!digits)
		return false;
	*p = s;
	*ret = v;
	return true;
}

static const char *pm__skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static int perfmap__push(struct perfmap *m, uint64_t start, uint64_t size,
			 const char *name, size_t name_len)
{
	struct pm_entry *ents;
	char *names;

	if (m->n >= PERFMAP_MAX_ENTRIES || name_len + 1 > PERFMAP_MAX_NAME_BYTES - m->names_len) {
		m->dropped++;
		return 0;
	}
	ents = grow__array(m->ents, &m->cap, m->n + 1, sizeof(*ents), 256);
	if (!ents)
		return -ENOMEM;
	m->ents = ents;
	names = grow__array(m->names, &m->names_cap, m->names_len + name_len + 1, 1, 4096);
	if (!names)
		return -ENOMEM;
	m->names = names;
	memcpy(m->names + m->names_len, name, name_len);
	m->names[m->names_len + name_len] = '\0';
	m->ents[m->n++] = (struct pm_entry){
		.start = start, .size = size, .seq = m->seq, .name = m->names_len,
	};
	m->names_len += name_len + 1;
	return 0;
}

/* One line without its '\n'. Malformed lines are counted, not fatal. */
static int perfmap__line(struct perfmap *m, const char *line, size_t len)
{
	const char *p = line, *end = line + len, *name;
	uint64_t start, size;

	m->seq++;
	while (end > p && (end[-1] == '\r' || end[-1] == ' '))
		end--;
	if (p == end)
		return 0;
	p = pm__skip_blanks(p, end);
	if (!pm__hex(&p, end, &start) || p == end || (*p != ' ' && *p != '\t'))
		goto bad;
	p = pm__skip_blanks(p, end);
	if (!pm__hex(&p, end, &size) || p == end || (*p != ' ' && *p != '\t'))
		goto bad;
	name = pm__skip_blanks(p, end);
	if (name == end || !size || size > UINT64_MAX - start ||
	    memchr(name, '\0', (size_t)(end - name)))
		goto bad;
	return perfmap__push(m, start, size, name, (size_t)(end - name));
bad:
	m->dropped++;
	return 0;
}

static int pm_entry__cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void perfmap__finish(struct perfmap *m)
{
	size_t i, k;

	if (m->n)
		qsort(m->ents, m->n, sizeof(*m->ents), pm_entry__cmp);
	/* Same start: only the last line matters. */
	for (i = 0, k = 0; i < m->n; i++) {
		if (k && m->ents[k - 1].start == m->ents[i].start) {
			m->ents[k - 1] = m->ents[i];
			m->dropped++;
			continue;
		}
		m->ents[k++] = m->ents[i];
	}
	m->n = k;
}

/* Feeds buffered text; carries a partial last line in *carry. */
struct pm_reader {
	char line[PERFMAP_MAX_LINE];
	size_t len;
	bool overlong;
};

static int pm_reader__feed(struct perfmap *m, struct pm_reader *r, const char *d, size_t n)
{
	const char *nl;
	size_t take;
	int err;

	while (n) {
		nl = memchr(d, '\n', n);
		take = nl ? (size_t)(nl - d) : n;
		if (r->overlong || take > sizeof(r->line) - r->len) {
			r->overlong = true;
		} else {
			memcpy(r->line + r->len, d, take);
			r->len += take;
		}
		if (!nl)
			return 0;
		if (r->overlong) {
			m->seq++;
			m->dropped++;
			err = 0;
		} else {
			err = perfmap__line(m, r->line, r->len);
		}
		if (err)
			return err;
		r->len = 0;
		r->overlong = false;
		d = nl + 1;
		n -= take + 1;
	}
	return 0;
}

static int pm_reader__end(struct perfmap *m, struct pm_reader *r)
{
	if (r->overlong) {
		m->dropped++;
		return 0;
	}
	return r->len ? perfmap__line(m, r->line, r->len) : 0;
}

/*
 * Ends a load fed so far with err: the reader's last line, then the map
 * sorted into *ret_map; on an error the map goes. Frees r either way.
 */
static int perfmap__close(struct perfmap *m, struct pm_reader *r, int err,
			  struct perfmap **ret_map)
{
	if (!err)
		err = pm_reader__end(m, r);
	free(r);
	if (err) {
		perfmap__destroy(m);
		return err;
	}
	perfmap__finish(m);
	*ret_map = m;
	return 0;
}

int perfmap__parse(const char *text, size_t len, struct perfmap **ret_map)
{
	struct pm_reader *r;
	struct perfmap *m;

	if ((!text && len) || !ret_map)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	r = calloc(1, sizeof(*r));
	if (!m || !r) {
		free(r);
		free(m);
		return -ENOMEM;
	}
	return perfmap__close(m, r, pm_reader__feed(m, r, text, len), ret_map);
}

int perfmap__load_fd(int fd, struct perfmap **ret_map)
{
	struct pm_reader *r;
	struct perfmap *m;
	uint64_t total = 0;
	char *buf;
	ssize_t n;
	int err = 0;

	if (fd < 0 || !ret_map)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	r = calloc(1, sizeof(*r));
	buf = malloc(65536);
	if (!m || !r || !buf) {
		err = -ENOMEM;
		goto out;
	}
	while (!err && total < PERFMAP_MAX_FILE) {
		n = read(fd, buf, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		err = pm_reader__feed(m, r, buf, (size_t)n);
	}
	free(buf);
	return perfmap__close(m, r, err, ret_map);
out:
	free(buf);
	free(r);
	perfmap__destroy(m);
	return err;
}

size_t perfmap__bytes(const struct perfmap *m)
{
	return m ? sizeof(*m) + m->cap * sizeof(*m->ents) + m->names_cap : 0;
}

void perfmap__destroy(struct perfmap *m)
{
	if (!m)
		return;
	free(m->ents);
	free(m->names);
	free(m);
}

size_t perfmap__count(const struct perfmap *m)
{
	return m ? m->n : 0;
}

size_t perfmap__dropped(const struct perfmap *m)
{
	return m ? m->dropped : 0;
}

int perfmap__lookup(const struct perfmap *m, uint64_t addr, struct perfmap_entry *ret_entry)
{
	const struct pm_entry *e, *best = NULL;
	size_t lo = 0, hi, mid, i;

	if (!m || !ret_entry)
		return -EINVAL;
	hi = m->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * A range starting earlier may still cover addr when ranges overlap;
	 * look a bounded distance back and take the latest line that covers it.
	 */
	for (i = lo; i > 0 && lo - i < PERFMAP_OVERLAP_SCAN; i--) {
		e = &m->ents[i - 1];
		if (addr - e->start < e->size && (!best || e->seq > best->seq))
			best = e;
	}
	if (!best)
		return -ENOENT;
	*ret_entry = (struct perfmap_entry){
		.start = best->start, .size = best->size, .name = m->names + best->name,
	};
	return 0;
}

static void copy_trunc(char *dst, size_t cap, const char *src, size_t len)
{
	if (!cap)
		return;
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

bool perfmap__python_name(const char *name, char *func, size_t func_len,
			  char *file, size_t file_len)
{
	const char *colon;

	if (!name || strncmp(name, "py::", 4))
		return false;
	name += 4;
	/* Qualified names hold no ':'; paths may. */
	colon = strchr(name, ':');
	if (!colon)
		return false;
	copy_trunc(func, func_len, name, (size_t)(colon - name));
	copy_trunc(file, file_len, colon + 1, strlen(colon + 1));
	return true;
}
