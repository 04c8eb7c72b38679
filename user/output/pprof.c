/* SPDX-License-Identifier: MIT */
/*
 * pprof writer. Field numbers follow profile.proto as encoded by pprof's own
 * Go package (profile/encode.go). Every interned object is kept as the bytes
 * of its protobuf encoding (pbuf.h) without its id: equal content gives
 * equal bytes, so the loader's interning table (util/blobtab.h) of those
 * bytes de-duplicates strings, functions, mappings, locations and sample
 * keys alike, and writing the profile is a copy. Ids are the tables' ids,
 * 1-based positions.
 */
#include "user/output/pprof.h"
#include "user/util/atomic_file.h"
#include "user/output/pbuf.h"
#include "user/util/blobtab.h"
#include "user/util/grow.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Bounds: a profile this large is a bug upstream; refuse rather than swap. */
#define PPROF_MAX_ENTRIES (1u << 24)
#define PPROF_MAX_ARENA ((size_t)1 << 30) /* bytes of one table */
#define PPROF_MAX_SAMPLE_TYPES 16
#define PPROF_MAX_STACK 4096
#define PPROF_MAX_LABELS 64
#define PPROF_MAX_LINES 256

/* Profile fields. */
enum {
	F_PROFILE_SAMPLE_TYPE = 1,
	F_PROFILE_SAMPLE = 2,
	F_PROFILE_MAPPING = 3,
	F_PROFILE_LOCATION = 4,
	F_PROFILE_FUNCTION = 5,
	F_PROFILE_STRING_TABLE = 6,
	F_PROFILE_TIME_NANOS = 9,
	F_PROFILE_DURATION_NANOS = 10,
	F_PROFILE_COMMENT = 13,
	F_PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { F_VT_TYPE = 1, F_VT_UNIT = 2 };
enum { F_SAMPLE_LOCATION_ID = 1, F_SAMPLE_VALUE = 2, F_SAMPLE_LABEL = 3 };
enum { F_LABEL_KEY = 1, F_LABEL_STR = 2, F_LABEL_NUM = 3, F_LABEL_NUM_UNIT = 4 };
enum {
	F_MAPPING_ID = 1,
	F_MAPPING_START = 2,
	F_MAPPING_LIMIT = 3,
	F_MAPPING_OFFSET = 4,
	F_MAPPING_FILENAME = 5,
	F_MAPPING_BUILD_ID = 6,
	F_MAPPING_HAS_FUNCTIONS = 7,
};
enum { F_LOC_ID = 1, F_LOC_MAPPING_ID = 2, F_LOC_ADDRESS = 3, F_LOC_LINE = 4 };
enum { F_LINE_FUNCTION_ID = 1, F_LINE_LINE = 2 };
enum {
	F_FUNC_ID = 1,
	F_FUNC_NAME = 2,
	F_FUNC_SYSTEM_NAME = 3,
	F_FUNC_FILENAME = 4,
	F_FUNC_START_LINE = 5,
};

struct value_type {
	uint64_t type;
	uint64_t unit;
};

/* Each table interns the id-less encodings of its objects: an object's id is its blobtab id. */
struct pprof {
	struct blobtab *strings; /* string_table[i] is id i + 1 */
	struct blobtab *functions;
	struct blobtab *mappings;
	uint64_t main_mapping; /* written first; 0: none */
	struct blobtab *locations;
	struct blobtab *samples;
	int64_t *values; /* samples.n * n_types */
	size_t values_cap;
	struct value_type types[PPROF_MAX_SAMPLE_TYPES];
	size_t n_types;
	uint64_t default_type; /* string index, 0 = first type */
	int64_t time_nanos;
	int64_t duration_nanos;
	uint64_t *comments;
	size_t n_comments;
	size_t comments_cap;
};

/* ---------------------------------------------------------------- objects */

/* Finds or adds a blob: its 0-based index, and (ret_added may be NULL) whether it is new. */
static int table__intern(struct blobtab *t, const void *d, size_t len, size_t *ret_index,
			 bool *ret_added)
{
	size_t before = blobtab__count(t);
	__u32 id;
	int err;

	/* An empty encoding (a sample with no location and no label) has no buffer. */
	err = blobtab__intern(t, d ? d : "", len, &id);
	if (err)
		return err;
	*ret_index = id - 1;
	if (ret_added)
		*ret_added = id > before;
	return 0;
}

/* The bytes of the entry at 0-based index i. */
static const void *table__at(const struct blobtab *t, size_t i, size_t *ret_len)
{
	return blobtab__get(t, (__u32)(i + 1), ret_len);
}

struct pprof *pprof__new(void)
{
	struct pprof *p = calloc(1, sizeof(*p));
	uint64_t idx;

	if (!p)
		return NULL;
	/* string_table[0] must be "". */
	if (blobtab__new(PPROF_MAX_ENTRIES, PPROF_MAX_ARENA, &p->strings) ||
	    blobtab__new(PPROF_MAX_ENTRIES, PPROF_MAX_ARENA, &p->functions) ||
	    blobtab__new(PPROF_MAX_ENTRIES, PPROF_MAX_ARENA, &p->mappings) ||
	    blobtab__new(PPROF_MAX_ENTRIES, PPROF_MAX_ARENA, &p->locations) ||
	    blobtab__new(PPROF_MAX_ENTRIES, PPROF_MAX_ARENA, &p->samples) ||
	    pprof__intern_string(p, "", &idx)) {
		pprof__destroy(p);
		return NULL;
	}
	return p;
}

void pprof__destroy(struct pprof *p)
{
	if (!p)
		return;
	blobtab__destroy(p->strings);
	blobtab__destroy(p->functions);
	blobtab__destroy(p->mappings);
	blobtab__destroy(p->locations);
	blobtab__destroy(p->samples);
	free(p->values);
	free(p->comments);
	free(p);
}

int pprof__intern_string(struct pprof *p, const char *s, uint64_t *ret_index)
{
	size_t idx;
	int err;

	if (!p || !ret_index)
		return -EINVAL;
	if (!s)
		s = "";
	err = table__intern(p->strings, s, strlen(s), &idx, NULL);
	if (err)
		return err;
	*ret_index = idx;
	return 0;
}

int pprof__add_sample_type(struct pprof *p, const char *type, const char *unit)
{
	struct value_type vt;
	int err;

	if (!p || !type || !unit)
		return -EINVAL;
	if (blobtab__count(p->samples))
		return -EBUSY;
	if (p->n_types >= PPROF_MAX_SAMPLE_TYPES)
		return -E2BIG;
	err = pprof__intern_string(p, type, &vt.type);
	if (!err)
		err = pprof__intern_string(p, unit, &vt.unit);
	if (err)
		return err;
	p->types[p->n_types++] = vt;
	return 0;
}

int pprof__set_default_sample_type(struct pprof *p, const char *type)
{
	uint64_t idx;
	size_t i;
	int err;

	if (!p || !type)
		return -EINVAL;
	err = pprof__intern_string(p, type, &idx);
	if (err)
		return err;
	for (i = 0; i < p->n_types; i++) {
		if (p->types[i].type == idx) {
			p->default_type = idx;
			return 0;
		}
	}
	return -ENOENT;
}

void pprof__set_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos)
{
	if (!p)
		return;
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
}

int pprof__add_comment(struct pprof *p, const char *comment)
{
	uint64_t idx, *c;
	int err;

	if (!p || !comment)
		return -EINVAL;
	if (p->n_comments >= PPROF_MAX_LABELS * 16)
		return -E2BIG;
	err = pprof__intern_string(p, comment, &idx);
	if (err)
		return err;
	c = grow__array(p->comments, &p->comments_cap, p->n_comments + 1, sizeof(*c), 8);
	if (!c)
		return -ENOMEM;
	p->comments = c;
	p->comments[p->n_comments++] = idx;
	return 0;
}

/* Interns the id-less encoding in b; the id is the 1-based position. */
static int pprof__intern_encoded(struct blobtab *t, struct pbuf *b, uint64_t *ret_id)
{
	size_t idx;
	int err = b->err;

	if (!err)
		err = table__intern(t, b->data, b->len, &idx, NULL);
	pbuf__free(b);
	if (err)
		return err;
	*ret_id = idx + 1;
	return 0;
}

int pprof__add_function(struct pprof *p, const char *name, const char *system_name,
			const char *filename, int64_t start_line, uint64_t *ret_id)
{
	uint64_t name_x, sys_x, file_x;
	struct pbuf b = { 0 };
	int err;

	if (!p || !ret_id)
		return -EINVAL;
	err = pprof__intern_string(p, name, &name_x);
	if (!err)
		err = pprof__intern_string(p, system_name ? system_name : name, &sys_x);
	if (!err)
		err = pprof__intern_string(p, filename, &file_x);
	if (err)
		return err;
	pbuf__uint_field(&b, F_FUNC_NAME, name_x);
	pbuf__uint_field(&b, F_FUNC_SYSTEM_NAME, sys_x);
	pbuf__uint_field(&b, F_FUNC_FILENAME, file_x);
	pbuf__uint_field(&b, F_FUNC_START_LINE, (uint64_t)start_line);
	return pprof__intern_encoded(p->functions, &b, ret_id);
}

int pprof__add_mapping(struct pprof *p, const struct pprof_mapping *m, uint64_t *ret_id)
{
	uint64_t file_x, build_x;
	struct pbuf b = { 0 };
	int err;

	if (!p || !m || !ret_id)
		return -EINVAL;
	err = pprof__intern_string(p, m->filename, &file_x);
	if (!err)
		err = pprof__intern_string(p, m->build_id, &build_x);
	if (err)
		return err;
	pbuf__uint_field(&b, F_MAPPING_START, m->start);
	pbuf__uint_field(&b, F_MAPPING_LIMIT, m->limit);
	pbuf__uint_field(&b, F_MAPPING_OFFSET, m->offset);
	pbuf__uint_field(&b, F_MAPPING_FILENAME, file_x);
	pbuf__uint_field(&b, F_MAPPING_BUILD_ID, build_x);
	pbuf__uint_field(&b, F_MAPPING_HAS_FUNCTIONS, m->has_functions);
	return pprof__intern_encoded(p->mappings, &b, ret_id);
}

void pprof__set_main_mapping(struct pprof *p, uint64_t mapping_id)
{
	p->main_mapping = mapping_id;
}

int pprof__add_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			const struct pprof_line *lines, size_t n_lines, uint64_t *ret_id)
{
	struct pbuf b = { 0 }, l = { 0 };
	size_t i;

	if (!p || !ret_id || (n_lines && !lines) || n_lines > PPROF_MAX_LINES)
		return -EINVAL;
	if (mapping_id > blobtab__count(p->mappings))
		return -ENOENT;
	for (i = 0; i < n_lines; i++)
		if (!lines[i].function_id || lines[i].function_id > blobtab__count(p->functions))
			return -ENOENT;
	pbuf__uint_field(&b, F_LOC_MAPPING_ID, mapping_id);
	pbuf__uint_field(&b, F_LOC_ADDRESS, address);
	for (i = 0; i < n_lines; i++) {
		l.len = 0;
		pbuf__uint_field(&l, F_LINE_FUNCTION_ID, lines[i].function_id);
		pbuf__uint_field(&l, F_LINE_LINE, (uint64_t)lines[i].line);
		pbuf__message(&b, F_LOC_LINE, &l);
	}
	pbuf__free(&l);
	return pprof__intern_encoded(p->locations, &b, ret_id);
}

struct label_x {
	uint64_t key;
	uint64_t str;
	int64_t num;
	uint64_t unit;
};

static int label_x__cmp(const struct label_x *a, const struct label_x *b)
{
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->str != b->str)
		return a->str < b->str ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->unit != b->unit)
		return a->unit < b->unit ? -1 : 1;
	return 0;
}

/* Labels in a canonical order, so the same set merges whatever the call order. */
static int pprof__labels_x(struct pprof *p, const struct pprof_label *labels, size_t n,
			   struct label_x *out)
{
	struct label_x tmp;
	size_t i, j;
	int err;

	for (i = 0; i < n; i++) {
		if (!labels[i].key)
			return -EINVAL;
		memset(&out[i], 0, sizeof(out[i]));
		err = pprof__intern_string(p, labels[i].key, &out[i].key);
		if (!err && labels[i].str)
			err = pprof__intern_string(p, labels[i].str, &out[i].str);
		if (!err && !labels[i].str) {
			out[i].num = labels[i].num;
			if (labels[i].num_unit)
				err = pprof__intern_string(p, labels[i].num_unit, &out[i].unit);
		}
		if (err)
			return err;
	}
	for (i = 1; i < n; i++) {
		tmp = out[i];
		for (j = i; j > 0 && label_x__cmp(&out[j - 1], &tmp) > 0; j--)
			out[j] = out[j - 1];
		out[j] = tmp;
	}
	return 0;
}

static void pbuf__label(struct pbuf *b, const struct label_x *x)
{
	struct pbuf l = { 0 };

	pbuf__uint_field(&l, F_LABEL_KEY, x->key);
	pbuf__uint_field(&l, F_LABEL_STR, x->str);
	pbuf__uint_field(&l, F_LABEL_NUM, (uint64_t)x->num);
	pbuf__uint_field(&l, F_LABEL_NUM_UNIT, x->unit);
	pbuf__message(b, F_SAMPLE_LABEL, &l);
	pbuf__free(&l);
}

static int64_t add_saturating(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int pprof__values_reserve(struct pprof *p, size_t n_samples)
{
	int64_t *v = grow__array(p->values, &p->values_cap, n_samples * p->n_types, sizeof(*v), 64);

	if (!v)
		return -ENOMEM;
	p->values = v;
	return 0;
}

int pprof__add_sample(struct pprof *p, const uint64_t *loc_ids, size_t n_locs,
		      const int64_t *values, const struct pprof_label *labels,
		      size_t n_labels)
{
	struct label_x lx[PPROF_MAX_LABELS];
	struct pbuf b = { 0 };
	int64_t *dst;
	size_t i, idx;
	bool added;
	int err;

	if (!p || (n_locs && !loc_ids) || !values || (n_labels && !labels))
		return -EINVAL;
	if (!p->n_types)
		return -ENODATA;
	if (n_locs > PPROF_MAX_STACK || n_labels > PPROF_MAX_LABELS)
		return -E2BIG;
	for (i = 0; i < n_locs; i++)
		if (!loc_ids[i] || loc_ids[i] > blobtab__count(p->locations))
			return -ENOENT;
	err = pprof__labels_x(p, labels, n_labels, lx);
	if (err)
		return err;
	err = pprof__values_reserve(p, blobtab__count(p->samples) + 1);
	if (err)
		return err;
	/* The key is the sample's encoding without its values. */
	pbuf__packed(&b, F_SAMPLE_LOCATION_ID, loc_ids, n_locs);
	for (i = 0; i < n_labels; i++)
		pbuf__label(&b, &lx[i]);
	err = b.err;
	if (!err)
		err = table__intern(p->samples, b.data, b.len, &idx, &added);
	pbuf__free(&b);
	if (err)
		return err;
	dst = p->values + idx * p->n_types;
	for (i = 0; i < p->n_types; i++)
		dst[i] = added ? values[i] : add_saturating(dst[i], values[i]);
	return 0;
}

size_t pprof__sample_count(const struct pprof *p)
{
	return p ? blobtab__count(p->samples) : 0;
}

/* ---------------------------------------------------------------- encoding */

static void pbuf__value_type(struct pbuf *b, unsigned field, const struct value_type *vt)
{
	struct pbuf m = { 0 };

	pbuf__uint_field(&m, F_VT_TYPE, vt->type);
	pbuf__uint_field(&m, F_VT_UNIT, vt->unit);
	pbuf__message(b, field, &m);
	pbuf__free(&m);
}

/*
 * Each entry of t becomes message `field` = {id_field: i+1} + stored bytes;
 * the entry of id first (when nonzero) is written first, the rest in order.
 */
static void pbuf__table(struct pbuf *b, unsigned field, unsigned id_field,
			const struct blobtab *t, uint64_t first)
{
	size_t n = blobtab__count(t), k, i, len;
	struct pbuf head = { 0 };
	const void *d;

	if (first > n)
		first = 0;
	for (k = 0; k < n && !b->err; k++) {
		/* first's entry at k == 0; the ones before it shift up by one */
		i = !first ? k : k == 0 ? first - 1 : k <= first - 1 ? k - 1 : k;
		head.len = 0;
		pbuf__uint_field(&head, id_field, i + 1);
		if (head.err) {
			b->err = head.err;
			break;
		}
		d = table__at(t, i, &len);
		pbuf__tag(b, field, WIRE_LEN);
		pbuf__varint(b, head.len + len);
		pbuf__bytes(b, head.data, head.len);
		pbuf__bytes(b, d, len);
	}
	pbuf__free(&head);
}

static void pbuf__samples(struct pbuf *b, const struct pprof *p)
{
	size_t n = blobtab__count(p->samples), i, len;
	struct pbuf vals = { 0 };
	const int64_t *v;
	const void *d;

	for (i = 0; i < n && !b->err; i++) {
		vals.len = 0;
		v = p->values + i * p->n_types;
		/* int64 on the wire: negatives are 10-byte two's-complement varints. */
		pbuf__packed(&vals, F_SAMPLE_VALUE, (const uint64_t *)v, p->n_types);
		if (vals.err) {
			b->err = vals.err;
			break;
		}
		d = table__at(p->samples, i, &len);
		pbuf__tag(b, F_PROFILE_SAMPLE, WIRE_LEN);
		pbuf__varint(b, vals.len + len);
		pbuf__bytes(b, vals.data, vals.len);
		pbuf__bytes(b, d, len);
	}
	pbuf__free(&vals);
}

static int pprof__encode(const struct pprof *p, struct pbuf *b)
{
	const void *s;
	size_t i, len;

	for (i = 0; i < p->n_types; i++)
		pbuf__value_type(b, F_PROFILE_SAMPLE_TYPE, &p->types[i]);
	pbuf__samples(b, p);
	pbuf__table(b, F_PROFILE_MAPPING, F_MAPPING_ID, p->mappings, p->main_mapping);
	pbuf__table(b, F_PROFILE_LOCATION, F_LOC_ID, p->locations, 0);
	pbuf__table(b, F_PROFILE_FUNCTION, F_FUNC_ID, p->functions, 0);
	for (i = 0; i < blobtab__count(p->strings); i++) {
		s = table__at(p->strings, i, &len);
		pbuf__len_field(b, F_PROFILE_STRING_TABLE, s, len);
	}
	pbuf__uint_field(b, F_PROFILE_TIME_NANOS, (uint64_t)p->time_nanos);
	pbuf__uint_field(b, F_PROFILE_DURATION_NANOS, (uint64_t)p->duration_nanos);
	pbuf__packed(b, F_PROFILE_COMMENT, p->comments, p->n_comments);
	/* Without it readers default to the *last* type; we promise the first. */
	if (p->default_type)
		pbuf__uint_field(b, F_PROFILE_DEFAULT_SAMPLE_TYPE, p->default_type);
	else if (p->n_types)
		pbuf__uint_field(b, F_PROFILE_DEFAULT_SAMPLE_TYPE, p->types[0].type);
	return b->err;
}

static int gzip__compress(const uint8_t *src, size_t len, uint8_t **ret_buf, size_t *ret_len)
{
	z_stream zs = { 0 };
	uint8_t *out;
	size_t cap;
	int zerr;

	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, len);
	out = malloc(cap);
	if (!out || len > UINT_MAX || cap > UINT_MAX) {
		deflateEnd(&zs);
		free(out);
		return out ? -E2BIG : -ENOMEM;
	}
	zs.next_in = (uint8_t *)src;
	zs.avail_in = (unsigned)len;
	zs.next_out = out;
	zs.avail_out = (unsigned)cap;
	zerr = deflate(&zs, Z_FINISH);
	if (zerr != Z_STREAM_END) {
		deflateEnd(&zs);
		free(out);
		return -EIO;
	}
	*ret_len = zs.total_out;
	deflateEnd(&zs);
	*ret_buf = out;
	return 0;
}

int pprof__write_buf(const struct pprof *p, uint8_t **ret_buf, size_t *ret_len)
{
	struct pbuf b = { 0 };
	int err;

	if (!p || !ret_buf || !ret_len)
		return -EINVAL;
	err = pprof__encode(p, &b);
	if (!err)
		err = gzip__compress(b.data ? b.data : (uint8_t *)"", b.len, ret_buf, ret_len);
	pbuf__free(&b);
	return err;
}

/* ---------------------------------------------------------------- files */

int pprof__write_file(const struct pprof *p, const char *path)
{
	char tmp[PATH_MAX];
	uint8_t *buf = NULL;
	size_t len;
	int fd, err;

	if (!p || !path || !*path)
		return -EINVAL;
	err = pprof__write_buf(p, &buf, &len);
	if (err)
		return err;
	fd = atomic_file__open(path, tmp, sizeof(tmp));
	if (fd < 0) {
		free(buf);
		return fd;
	}
	err = atomic_file__write(fd, buf, len);
	if (err)
		atomic_file__abort(fd, tmp);
	else
		err = atomic_file__commit(fd, tmp, path);
	free(buf);
	return err;
}
