/* SPDX-License-Identifier: MIT */
/*
 * Tests for user/output/pprof: profiles are read back by an independent
 * reader, `go tool pprof`, and checked value by value; file writes are
 * checked to be all-or-nothing under real failures (EACCES, EFBIG from a
 * file-size limit that cuts a write short). A profile built by
 * user/profile is decoded field by field to check that each kernel's
 * location lies in the mapping of the cubin defining it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <zlib.h>
#include <cmocka.h>

#include "tests/skip.h"
#include "user/output/pprof.h"
#include "user/profile/profile.h"
#include "user/profile/profile_internal.h" /* MAX_PC_ENTRIES_PER_PROC */
#include "tests/progs/cubin.h"
#include "tests/line_image.h"

static char go_bin[PATH_MAX];
static char tmp_dir[PATH_MAX];

static bool find_go(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	bool found = false;

	if (!path)
		return false;
	copy = strdup(path);
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		snprintf(go_bin, sizeof(go_bin), "%s/go", dir);
		found = access(go_bin, X_OK) == 0;
	}
	free(copy);
	return found;
}

/* Runs `go tool pprof -symbolize=none <mode> <file>` and returns its stdout. */
static char *go_pprof(const char *mode, const char *file)
{
	char cmd[PATH_MAX * 3];
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	FILE *f;
	size_t n;
	int rc;

	assert_non_null(out);
	snprintf(cmd, sizeof(cmd), "'%s' tool pprof -symbolize=none %s '%s' 2>&1",
		 go_bin, mode, file);
	f = popen(cmd, "r");
	assert_non_null(f);
	while ((n = fread(out + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[len] = '\0';
	rc = pclose(f);
	if (rc != 0)
		fail_msg("go tool pprof %s failed (%d):\n%s", mode, rc, out);
	return out;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("expected to find \"%s\" in:\n%s", needle, hay);
}

static void path_in_tmp(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmp_dir, name);
}

/* The reference profile: two stacks, one hit twice with labels in either order. */
static struct pprof *build_profile(void)
{
	struct pprof *p = pprof__new();
	uint64_t f_main, f_launch, f_kernel, map, l_main, l_launch, l_kernel;
	struct pprof_mapping m = {
		.start = 0x1000, .limit = 0x9000, .offset = 0x200,
		.filename = "/usr/lib/libfoo.so", .build_id = "abcdef0123",
		.has_functions = true,
	};
	struct pprof_line ln;
	uint64_t stack[3];
	const int64_t v1[] = { 100, 1 }, v2[] = { 50, 2 }, v3[] = { 7, 1 };
	const struct pprof_label labels[] = {
		{ .key = "kernel", .str = "k1" },
		{ .key = "pid", .num = 42 },
	};
	const struct pprof_label labels_swapped[] = { labels[1], labels[0] };

	assert_non_null(p);
	assert_int_equal(pprof__add_sample_type(p, "gpu_time", "nanoseconds"), 0);
	assert_int_equal(pprof__add_sample_type(p, "launches", "count"), 0);
	assert_int_equal(pprof__add_function(p, "main", NULL, "app.c", 10, &f_main), 0);
	assert_int_equal(pprof__add_function(p, "launch", NULL, "app.c", 20, &f_launch), 0);
	assert_int_equal(pprof__add_function(p, "kernel(float*, int)", "_Z6kernelPfi",
					     "k.cu", 0, &f_kernel), 0);
	assert_int_equal(pprof__add_mapping(p, &m, &map), 0);
	ln = (struct pprof_line){ f_main, 11 };
	assert_int_equal(pprof__add_location(p, map, 0x1100, &ln, 1, &l_main), 0);
	ln = (struct pprof_line){ f_launch, 22 };
	assert_int_equal(pprof__add_location(p, map, 0x1200, &ln, 1, &l_launch), 0);
	ln = (struct pprof_line){ f_kernel, 0 };
	assert_int_equal(pprof__add_location(p, 0, 0, &ln, 1, &l_kernel), 0);
	stack[0] = l_kernel;
	stack[1] = l_launch;
	stack[2] = l_main;
	assert_int_equal(pprof__add_sample(p, stack, 3, v1, labels, 2), 0);
	assert_int_equal(pprof__add_sample(p, stack, 3, v2, labels_swapped, 2), 0);
	assert_int_equal(pprof__add_sample(p, stack + 1, 2, v3, labels, 1), 0);
	pprof__set_time(p, 1700000000000000000LL, 5000000000LL);
	assert_int_equal(pprof__add_comment(p, "gpuprobe test"), 0);
	return p;
}

static void require_go(void)
{
	if (!go_bin[0])
		SKIP_BECAUSE("`go` not found in PATH: the go tool pprof checks need it (make deps installs golang-go)");
}

static void test_go_pprof_reads_exact_values_labels_and_build_id(void **state)
{
	struct pprof *p;
	char path[PATH_MAX];
	char *raw;

	require_go();
	p = build_profile();
	path_in_tmp(path, sizeof(path), "ref.pb.gz");
	assert_int_equal(pprof__write_file(p, path), 0);
	pprof__destroy(p);

	raw = go_pprof("-raw", path);
	assert_contains(raw, "gpu_time/nanoseconds[dflt] launches/count");
	/* Merged: 100+50 and 1+2, leaf first. */
	assert_contains(raw, "        150          3: 1 2 3 \n                kernel:[k1]\n                pid:[42]\n");
	assert_contains(raw, "          7          1: 2 3 \n                kernel:[k1]\n");
	assert_contains(raw, "     1: 0x0 kernel(float*, int) k.cu:0 s=0(_Z6kernelPfi)\n");
	assert_contains(raw, "     2: 0x1200 M=1 launch app.c:22 s=20\n");
	assert_contains(raw, "     3: 0x1100 M=1 main app.c:11 s=10\n");
	assert_contains(raw, "1: 0x1000/0x9000/0x200 /usr/lib/libfoo.so abcdef0123 [FN]\n");
	assert_contains(raw, "Comment: gpuprobe test\n");
	assert_contains(raw, "Duration: 5s\n");
	free(raw);
}

static void test_go_pprof_traces_and_top_show_the_merged_stacks(void **state)
{
	struct pprof *p;
	char path[PATH_MAX];
	char *out;

	require_go();
	p = build_profile();
	path_in_tmp(path, sizeof(path), "traces.pb.gz");
	assert_int_equal(pprof__write_file(p, path), 0);
	pprof__destroy(p);

	out = go_pprof("-traces", path);
	assert_contains(out, "Build ID: abcdef0123");
	assert_contains(out, "     150ns   kernel(float*, int)\n             launch\n             main\n");
	assert_contains(out, "       7ns   launch\n             main\n");
	free(out);

	out = go_pprof("-top", path);
	assert_contains(out, "Total samples = 157ns");
	assert_contains(out, "     150ns 95.54% 95.54%      150ns 95.54%  kernel(float*, int)");
	assert_contains(out, "       7ns  4.46%   100%      157ns   100%  launch");
	free(out);

	/* The second sample type, chosen by name. */
	out = go_pprof("-top -sample_index=launches", path);
	assert_contains(out, "Showing nodes accounting for 4, 100% of 4 total");
	free(out);
}

static void test_default_sample_type_can_be_changed(void **state)
{
	struct pprof *p;
	char path[PATH_MAX];
	char *out;

	require_go();
	p = build_profile();
	assert_int_equal(pprof__set_default_sample_type(p, "launches"), 0);
	assert_int_equal(pprof__set_default_sample_type(p, "nope"), -ENOENT);
	path_in_tmp(path, sizeof(path), "dflt.pb.gz");
	assert_int_equal(pprof__write_file(p, path), 0);
	pprof__destroy(p);
	out = go_pprof("-raw", path);
	assert_contains(out, "gpu_time/nanoseconds launches/count[dflt]");
	free(out);
}

/* Minimal protobuf walk over the decompressed profile, independent of pprof.c. */
static size_t gunzip(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	z_stream zs = { 0 };

	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (uint8_t *)in;
	zs.avail_in = (unsigned)len;
	zs.next_out = out;
	zs.avail_out = (unsigned)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	inflateEnd(&zs);
	return zs.total_out;
}

static uint64_t read_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		shift += 7;
		assert_true(shift < 64);
	}
	fail_msg("truncated varint");
	return 0;
}

static void test_string_table_starts_with_the_empty_string(void **state)
{
	static uint8_t raw[1 << 16];
	struct pprof *p = build_profile();
	const uint8_t *cur, *end;
	uint8_t *gz;
	size_t gz_len, len;
	uint64_t key, n;
	int strings = 0;

	assert_int_equal(pprof__write_buf(p, &gz, &gz_len), 0);
	pprof__destroy(p);
	len = gunzip(gz, gz_len, raw, sizeof(raw));
	free(gz);
	cur = raw;
	end = raw + len;
	while (cur < end) {
		key = read_varint(&cur, end);
		if ((key & 7) == 0) {
			read_varint(&cur, end);
			continue;
		}
		assert_int_equal(key & 7, 2);
		n = read_varint(&cur, end);
		assert_true(n <= (uint64_t)(end - cur));
		if ((key >> 3) == 6 && strings++ == 0)
			assert_int_equal(n, 0); /* string_table[0] == "" */
		cur += n;
	}
	assert_true(strings > 5);
}

static void test_interning_returns_the_same_id_for_the_same_content(void **state)
{
	struct pprof *p = pprof__new();
	struct pprof_mapping m = { .start = 1, .limit = 2, .filename = "a", .build_id = "b" };
	struct pprof_line ln;
	uint64_t a, b, s0;

	assert_int_equal(pprof__intern_string(p, "", &s0), 0);
	assert_int_equal(s0, 0);
	assert_int_equal(pprof__add_function(p, "f", NULL, "x.c", 1, &a), 0);
	assert_int_equal(pprof__add_function(p, "f", NULL, "x.c", 1, &b), 0);
	assert_int_equal(a, b);
	assert_int_equal(pprof__add_function(p, "f", NULL, "y.c", 1, &b), 0);
	assert_int_not_equal(a, b);
	assert_int_equal(pprof__add_mapping(p, &m, &a), 0);
	assert_int_equal(pprof__add_mapping(p, &m, &b), 0);
	assert_int_equal(a, b);
	ln = (struct pprof_line){ 1, 3 };
	assert_int_equal(pprof__add_location(p, 1, 0x10, &ln, 1, &a), 0);
	assert_int_equal(pprof__add_location(p, 1, 0x10, &ln, 1, &b), 0);
	assert_int_equal(a, b);
	/* Dangling references are refused, not written. */
	assert_int_equal(pprof__add_location(p, 7, 0x10, &ln, 1, &a), -ENOENT);
	ln.function_id = 99;
	assert_int_equal(pprof__add_location(p, 1, 0x10, &ln, 1, &a), -ENOENT);
	pprof__destroy(p);
	pprof__destroy(NULL);
}

static void test_samples_need_types_first_and_valid_locations(void **state)
{
	struct pprof *p = pprof__new();
	const int64_t v[] = { 1 };
	uint64_t loc = 1;

	assert_int_equal(pprof__add_sample(p, NULL, 0, v, NULL, 0), -ENODATA);
	assert_int_equal(pprof__add_sample_type(p, "t", "count"), 0);
	assert_int_equal(pprof__add_sample(p, &loc, 1, v, NULL, 0), -ENOENT);
	assert_int_equal(pprof__add_sample(p, NULL, 0, v, NULL, 0), 0);
	assert_int_equal(pprof__add_sample_type(p, "u", "count"), -EBUSY);
	pprof__destroy(p);
}

/* 200k samples over 1000 stacks: merged, summed, and fast (a hash, not a scan). */
static void test_many_samples_merge_by_stack_and_sum(void **state)
{
	struct pprof *p = pprof__new();
	uint64_t fn, locs[1000], stack[2];
	struct pprof_line ln;
	char name[32], path[PATH_MAX];
	const int64_t one[] = { 1 };
	char *out;
	int i;

	assert_int_equal(pprof__add_sample_type(p, "launches", "count"), 0);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "fn%d", i);
		assert_int_equal(pprof__add_function(p, name, NULL, NULL, 0, &fn), 0);
		ln = (struct pprof_line){ fn, 0 };
		assert_int_equal(pprof__add_location(p, 0, 0x1000 + i, &ln, 1, &locs[i]), 0);
	}
	for (i = 0; i < 200000; i++) {
		stack[0] = locs[i % 1000];
		stack[1] = locs[0];
		assert_int_equal(pprof__add_sample(p, stack, 2, one, NULL, 0), 0);
	}
	assert_int_equal(pprof__sample_count(p), 1000);
	if (go_bin[0]) {
		path_in_tmp(path, sizeof(path), "many.pb.gz");
		assert_int_equal(pprof__write_file(p, path), 0);
		out = go_pprof("-top -nodecount=1 -focus=^fn7$", path);
		assert_contains(out, "Showing nodes accounting for 200, ");
		free(out);
	}
	pprof__destroy(p);
}

/* ---------------------------------------------------- decoding a profile */

#define DEC_MAX 64

struct dec_mapping { uint64_t id, start, limit, file, build_id; };
struct dec_location { uint64_t id, mapping, address, function, line; };
struct dec_function { uint64_t id, name, filename; };
struct dec_sample { uint64_t leaf, pid, value[3]; int nvalue; };

struct decoded {
	struct dec_mapping map[DEC_MAX];
	struct dec_location loc[DEC_MAX];
	struct dec_function fn[DEC_MAX];
	struct dec_sample sample[DEC_MAX];
	const char *str[4 * DEC_MAX];
	size_t str_len[4 * DEC_MAX];
	int nmap, nloc, nfn, nsample, nstr;
	uint8_t raw[1 << 16];
};

/* One field of the message in [*cur, end): a varint in *val or bytes in *sub. */
static bool pb_next(const uint8_t **cur, const uint8_t *end, uint64_t *field, uint64_t *val,
		    const uint8_t **sub, size_t *sub_len)
{
	uint64_t key;

	if (*cur >= end)
		return false;
	key = read_varint(cur, end);
	*field = key >> 3;
	if ((key & 7) == 0) {
		*val = read_varint(cur, end);
		*sub = NULL;
		return true;
	}
	assert_int_equal(key & 7, 2);
	*sub_len = read_varint(cur, end);
	assert_true(*sub_len <= (uint64_t)(end - *cur));
	*sub = *cur;
	*cur += *sub_len;
	return true;
}

static const char *dec_str(const struct decoded *d, uint64_t idx)
{
	static char buf[256];

	assert_true(idx < (uint64_t)d->nstr);
	snprintf(buf, sizeof(buf), "%.*s", (int)d->str_len[idx], d->str[idx]);
	return buf;
}

/* The leaf location id and the pid label of a sample message. */
static void dec_sample(struct decoded *d, const uint8_t *cur, const uint8_t *end)
{
	struct dec_sample *s = &d->sample[d->nsample++];
	const uint8_t *sub, *lc;
	uint64_t f, v, lf, lv, key = 0, num = 0;
	size_t n, ln;

	while (pb_next(&cur, end, &f, &v, &sub, &n)) {
		if (f == 1 && sub) /* packed location ids: the first is the leaf */
			s->leaf = read_varint(&sub, sub + n);
		if (f == 2 && sub) /* packed values */
			for (const uint8_t *vc = sub; vc < sub + n && s->nvalue < 3;)
				s->value[s->nvalue++] = read_varint(&vc, sub + n);
		if (f != 3 || !sub)
			continue;
		for (lc = sub; pb_next(&lc, sub + n, &lf, &lv, &(const uint8_t *){ NULL }, &ln);) {
			if (lf == 1)
				key = lv;
			else if (lf == 3)
				num = lv;
		}
		if (!strcmp(dec_str(d, key), "pid"))
			s->pid = num;
	}
}

static void decode_profile(const char *path, struct decoded *d)
{
	static uint8_t gz[1 << 16];
	const uint8_t *cur, *end, *sub, *c2, *s2;
	uint64_t f, v, f2, v2;
	size_t n, n2, len;
	FILE *fp = fopen(path, "rb");

	assert_non_null(fp);
	len = fread(gz, 1, sizeof(gz), fp);
	fclose(fp);
	memset(d, 0, offsetof(struct decoded, raw));
	len = gunzip(gz, len, d->raw, sizeof(d->raw));
	/* Strings first: samples name their labels through them. */
	for (cur = d->raw, end = d->raw + len; pb_next(&cur, end, &f, &v, &sub, &n);) {
		if (f == 6) {
			assert_true(d->nstr < 4 * DEC_MAX);
			d->str[d->nstr] = (const char *)sub;
			d->str_len[d->nstr++] = n;
		}
	}
	for (cur = d->raw; pb_next(&cur, end, &f, &v, &sub, &n);) {
		if (!sub || f < 2 || f > 5)
			continue;
		if (f == 2) {
			assert_true(d->nsample < DEC_MAX);
			dec_sample(d, sub, sub + n);
			continue;
		}
		assert_true(d->nmap < DEC_MAX && d->nloc < DEC_MAX && d->nfn < DEC_MAX);
		for (c2 = sub; pb_next(&c2, sub + n, &f2, &v2, &s2, &n2);) {
			if (f == 3) {
				struct dec_mapping *m = &d->map[d->nmap];
				uint64_t *at[] = { NULL, &m->id, &m->start, &m->limit, NULL, &m->file, &m->build_id };

				if (f2 < 7 && at[f2])
					*at[f2] = v2;
			} else if (f == 4) {
				struct dec_location *l = &d->loc[d->nloc];

				if (f2 == 1)
					l->id = v2;
				else if (f2 == 2)
					l->mapping = v2;
				else if (f2 == 3)
					l->address = v2;
				else if (f2 == 4) /* Line: function_id is field 1, line 2 */
					for (const uint8_t *c3 = s2; pb_next(&c3, s2 + n2, &f2, &v2,
									     &(const uint8_t *){ NULL }, &n2);) {
						if (f2 == 1)
							l->function = v2;
						else if (f2 == 2)
							l->line = v2;
					}
			} else if (f == 5) {
				if (f2 == 1)
					d->fn[d->nfn].id = v2;
				else if (f2 == 2)
					d->fn[d->nfn].name = v2;
				else if (f2 == 4)
					d->fn[d->nfn].filename = v2;
			}
		}
		d->nmap += f == 3;
		d->nloc += f == 4;
		d->nfn += f == 5;
	}
}

static const struct dec_location *dec_loc(const struct decoded *d, uint64_t id)
{
	for (int i = 0; i < d->nloc; i++)
		if (d->loc[i].id == id)
			return &d->loc[i];
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const struct dec_mapping *dec_map(const struct decoded *d, uint64_t id)
{
	for (int i = 0; i < d->nmap; i++)
		if (d->map[i].id == id)
			return &d->map[i];
	return NULL;
}

static const char *dec_fn_name(const struct decoded *d, uint64_t id)
{
	for (int i = 0; i < d->nfn; i++)
		if (d->fn[i].id == id)
			return dec_str(d, d->fn[i].name);
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

/* The leaf location of the sample of kernel name in process pid. */
static const struct dec_location *kernel_leaf(const struct decoded *d, const char *name, uint64_t pid)
{
	for (int i = 0; i < d->nsample; i++) {
		const struct dec_location *l = dec_loc(d, d->sample[i].leaf);

		if (d->sample[i].pid == pid && !strcmp(dec_fn_name(d, l->function), name))
			return l;
	}
	fail_msg("no sample of %s in pid %llu", name, (unsigned long long)pid);
	return NULL;
}

/* The leaf's mapping must be the cubin one with this build id. */
static const struct dec_mapping *assert_in_cubin(const struct decoded *d,
						 const struct dec_location *l, const char *build_id)
{
	const struct dec_mapping *m = dec_map(d, l->mapping);
	char file[64];

	assert_non_null(m);
	assert_string_equal(dec_str(d, m->build_id), build_id);
	snprintf(file, sizeof(file), "[cubin %s]", build_id);
	assert_string_equal(dec_str(d, m->file), file);
	assert_true(m->start >= 1ull << 63);
	assert_true(l->address >= m->start && l->address < m->limit);
	return m;
}

static void add_kernel(struct profile *p, __u32 pid, const char *name)
{
	struct profile_activity a = { .name = name, .ns = 1000 };

	assert_int_equal(profile__add(p, pid, 1, "cuLaunchKernel", NULL, &a), 0);
}

/* A profile with these processes and one stack per frame, ids 1..nf (short_id: the flagged one). */
static struct profile *profile_with(const struct profile_proc *procs, size_t np,
				    const struct profile_frame *frames, size_t nf, __u32 short_id)
{
	struct profile *p;

	assert_int_equal(profile__new(&p), 0);
	for (size_t i = 0; i < np; i++)
		assert_int_equal(profile__set_proc(p, &procs[i]), 0);
	for (__u32 i = 0; i < nf; i++)
		assert_int_equal(profile__set_stack(p, i + 1, &frames[i], 1, i + 1 == short_id), 0);
	return p;
}

/*
 * A cubin that does not parse takes no room in the cubin table, and a
 * process that loads cubins without end fills its share of the table
 * (half of it, alone), not every other's: another's cubin is still kept.
 */
static void test_a_process_loading_cubins_without_end_leaves_room_for_others(void **state)
{
	static const char *const ka[] = { "evil" }, *const kb[] = { "good" };
	uint8_t a[1024], b[1024], junk[256] = { 1, 2, 3 };
	size_t alen = cubin_build(a, sizeof(a), "a", ka, 1), blen = cubin_build(b, sizeof(b), "b", kb, 1);
	struct profile_cubin_stats cs;
	struct profile *p;

	(void)state;
	assert_int_equal(profile__new(&p), 0);
	for (__u64 crc = 1; crc <= 1000; crc++)
		assert_int_equal(profile__add_cubin(p, 100, crc, junk, sizeof(junk)), -ENOEXEC);
	profile__cubin_stats(p, &cs);
	assert_int_equal(cs.cubins, 0);
	assert_int_equal(cs.cubins_bad, 1000);
	for (__u64 crc = 1; crc <= MAX_CUBINS; crc++)
		profile__add_cubin(p, 100, 0x100000 + crc, a, alen);
	profile__cubin_stats(p, &cs);
	assert_int_equal(cs.cubins, CUBINS_SHARED);
	assert_int_equal(cs.cubins_over_share, MAX_CUBINS - CUBINS_SHARED);
	assert_int_equal(profile__add_cubin(p, 200, 0xb2, b, blen), 0);
	profile__cubin_stats(p, &cs);
	assert_int_equal(cs.cubins, CUBINS_SHARED + 1);
	assert_int_equal(cs.kernels_dropped, 0);
	profile__destroy(p);
}

static void test_profile_puts_each_kernel_in_the_mapping_of_its_cubin(void **state)
{
	static const char *const ka[] = { "gemm", "softmax" }, *const kb[] = { "relu", "softmax" };
	struct profile_frame frame = { .name = "main", .file = "/bin/app", .build_id = "cafe",
				       .addr = 0x1234 };
	struct profile_proc procs[] = { { .pid = 100, .comm = "app" }, { .pid = 200, .comm = "other" } };
	struct profile_cubin_stats cs;
	uint8_t a[1024], b[1024], junk[256] = { 1, 2, 3 };
	size_t alen = cubin_build(a, sizeof(a), "a", ka, 2), blen = cubin_build(b, sizeof(b), "b", kb, 2);
	const struct dec_mapping *ma, *mb, *mb2;
	const struct dec_location *gemm, *relu;
	struct profile *p;
	static struct decoded d;
	char path[PATH_MAX];

	p = profile_with(procs, 2, &frame, 1, 0);
	/* pid 100 loads both (softmax is then ambiguous), pid 200 only b. */
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, a, alen), 0);
	assert_int_equal(profile__add_cubin(p, 100, 0xb2, b, blen), 0);
	assert_int_equal(profile__add_cubin(p, 100, 0xb2, b, blen), 0); /* again: no change */
	assert_int_equal(profile__add_cubin(p, 200, 0xb2, b, blen), 0);
	assert_int_equal(profile__add_cubin(p, 200, 0xc3, junk, sizeof(junk)), -ENOEXEC);
	assert_int_equal(profile__add_cubin(p, 200, 0, b, blen), -EINVAL);
	profile__cubin_stats(p, &cs);
	assert_int_equal(cs.kernels, 5);
	assert_int_equal(cs.kernels_ambiguous, 1);
	assert_int_equal(cs.cubins_bad, 1);
	assert_int_equal(cs.kernels_dropped, 0);
	add_kernel(p, 100, "gemm");
	add_kernel(p, 100, "relu");
	add_kernel(p, 100, "softmax");
	add_kernel(p, 100, "unknown_kernel");
	add_kernel(p, 100, "[memcpy HtoD]");
	add_kernel(p, 200, "softmax");
	add_kernel(p, 200, "relu");
	path_in_tmp(path, sizeof(path), "cubins.pb.gz");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);

	decode_profile(path, &d);
	assert_int_equal(d.nsample, 7);
	gemm = kernel_leaf(&d, "gemm", 100);
	ma = assert_in_cubin(&d, gemm, "00000000000000a1");
	relu = kernel_leaf(&d, "relu", 100);
	mb = assert_in_cubin(&d, relu, "00000000000000b2");
	/* The same cubin in another process: the same mapping, the same location. */
	mb2 = assert_in_cubin(&d, kernel_leaf(&d, "relu", 200), "00000000000000b2");
	assert_int_equal(mb->id, mb2->id);
	assert_int_equal(kernel_leaf(&d, "relu", 200)->id, relu->id);
	/* softmax: ambiguous in 100 (two cubins define it), b's alone in 200. */
	assert_int_equal(kernel_leaf(&d, "softmax", 100)->mapping, 0);
	assert_in_cubin(&d, kernel_leaf(&d, "softmax", 200), "00000000000000b2");
	assert_int_not_equal(kernel_leaf(&d, "softmax", 200)->address, relu->address);
	assert_int_equal(kernel_leaf(&d, "unknown_kernel", 100)->mapping, 0);
	assert_int_equal(kernel_leaf(&d, "[memcpy HtoD]", 100)->mapping, 0);
	/* Cubin ranges do not overlap each other (nor the CPU mapping below 2^63). */
	assert_int_not_equal(ma->id, mb->id);
	assert_true(ma->limit <= mb->start || mb->limit <= ma->start);
	assert_int_equal(d.nmap, 3);

	if (go_bin[0]) {
		char *raw = go_pprof("-raw", path);

		assert_contains(raw, "[cubin 00000000000000a1] 00000000000000a1 [FN]\n");
		assert_contains(raw, "[cubin 00000000000000b2] 00000000000000b2 [FN]\n");
		free(raw);
	}
}

/* The pc_samples of the samples whose leaf is a function named name. */
static uint64_t pc_of(const struct decoded *d, const char *name, int *ret_samples)
{
	uint64_t sum = 0;

	*ret_samples = 0;
	for (int i = 0; i < d->nsample; i++) {
		const struct dec_location *l = dec_loc(d, d->sample[i].leaf);

		if (!strcmp(dec_fn_name(d, l->function), name)) {
			assert_int_equal(d->sample[i].nvalue, 3);
			assert_int_equal(d->sample[i].value[0], 0); /* no GPU time, no launches */
			assert_int_not_equal(d->sample[i].value[2], 0); /* no empty share written */
			sum += d->sample[i].value[2];
			(*ret_samples)++;
		}
	}
	return sum;
}

/*
 * PC samples are shared among a kernel's launch stacks by their GPU time
 * of it, and the shares of each instruction add up to its samples exactly
 * (10 samples over three equal stacks: 3, 3 and 4; 1 sample: one stack).
 * A kernel without GPU time in the profile keeps its samples whole, under a
 * marker. No pc_samples type unless asked or present.
 */
static void test_pc_samples_are_shared_by_gpu_time_exactly(void **state)
{
	static const char *const k[] = { "gemm" };
	struct profile_frame frames[3] = { { .name = "site_a", .file = "/bin/app" },
					   { .name = "site_b", .file = "/bin/app" },
					   { .name = "site_c", .file = "/bin/app" } };
	struct profile_proc proc = { .pid = 100, .comm = "app" };
	struct profile_activity act = { .name = "gemm", .ns = 1000, .device = 0 };
	uint8_t cubin[1024];
	size_t clen = cubin_build(cubin, sizeof(cubin), "a", k, 1);
	static struct decoded d;
	char path[PATH_MAX];
	struct profile *p;
	int n;

	(void)state;
	p = profile_with(&proc, 1, frames, 3, 0);
	assert_false(profile__has_pc(p));
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, cubin, clen), 0);
	for (__u32 st = 1; st <= 3; st++)
		assert_int_equal(profile__add(p, 100, st, "cuLaunchKernel", NULL, &act), 0);
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "gemm", 0x10, "smsp__pcsamp_warps_issue_stalled_wait",
					 6), 0);
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "gemm", 0x10, "smsp__pcsamp_warps_issue_stalled_wait",
					 4), 0); /* the same instruction and stall: summed */
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "gemm", 0x20, "barrier", 1), 0);
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "orphan", 0x30, "wait", 5), 0);
	assert_true(profile__has_pc(p));
	assert_int_equal(profile__pc_unplaced(p), 5); /* orphan: in no cubin of the process */
	path_in_tmp(path, sizeof(path), "pc.pb.gz");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);

	decode_profile(path, &d);
	assert_int_equal(pc_of(&d, "gemm+0x10", &n), 10);
	assert_int_equal(n, 3);
	assert_int_equal(pc_of(&d, "gemm+0x20", &n), 1);
	assert_int_equal(n, 1);
	assert_int_equal(pc_of(&d, "orphan+0x30", &n), 5);
	assert_int_equal(n, 1);
	/* The instruction lies in the kernel's cubin mapping, past the kernels' addresses. */
	for (int i = 0; i < d.nsample; i++) {
		const struct dec_location *l = dec_loc(&d, d.sample[i].leaf);

		if (!strcmp(dec_fn_name(&d, l->function), "gemm+0x10")) {
			const struct dec_location *kl = kernel_leaf(&d, "gemm", 100);
			__u64 start = assert_in_cubin(&d, l, "00000000000000a1")->start;

			/* its kernel's symbol index (the kernel's own address) << 24, then the offset */
			assert_int_equal(kl->mapping, l->mapping);
			assert_int_equal(l->address - start, (1ull << 45) + ((kl->address - start) << 24) + 0x10);
		}
	}
	if (go_bin[0]) {
		char *tags = go_pprof("-sample_index=pc_samples -tags", path);

		assert_contains(tags, "stall: Total 16");
		assert_contains(tags, "15.0 (93.75%): wait"); /* the prefix left out */
		assert_contains(tags, "1.0 ( 6.25%): barrier");
		free(tags);
	}
}

/* The source file of the instruction named name in d ("" when none), and its line. */
static const char *instr_source(const struct decoded *d, const char *name, uint64_t *ret_line)
{
	for (int i = 0; i < d->nloc; i++) {
		if (strcmp(dec_fn_name(d, d->loc[i].function), name))
			continue;
		*ret_line = d->loc[i].line;
		for (int k = 0; k < d->nfn; k++)
			if (d->fn[k].id == d->loc[i].function)
				return dec_str(d, d->fn[k].filename);
	}
	fail_msg("no instruction %s", name);
	return NULL;
}

/*
 * A cubin with a line table (-lineinfo): each sampled instruction names its
 * source file and line in the profile (the function's filename, the
 * location's line), the report's hottest instruction says it, an offset
 * past the kernel's rows names none, and a cubin's lines are read only
 * when PC samples are wanted.
 */
static void test_pc_samples_carry_their_source_lines(void **state)
{
	static const char *const dirs[] = { "/src", NULL };
	static const struct file_spec files[] = { { "k.cu", 1 }, { NULL, 0 } };
	struct profile_frame frame = { .name = "site", .file = "/bin/app" };
	struct profile_proc proc = { .pid = 100, .comm = "app" };
	struct profile_activity act = { .name = "kern_a", .ns = 1000, .device = 0 };
	struct rel_spec rel = { .sym = SYM_A, .type = R_CUDA_64 };
	struct dw line = { 0 };
	struct unit_at u;
	static struct decoded d;
	char path[PATH_MAX], *report = NULL;
	size_t len, rlen = 0;
	uint64_t at;
	struct profile *p;
	FILE *f;
	__u8 *img;

	(void)state;
	unit__begin(&line, &u, 2, 10, dirs, files, false);
	rel.at = op__set_address(&line, 0);
	op__advance_line(&line, 9);
	op__copy(&line);                    /* +0x0: line 10 */
	op__special(&line, &u, 0x10, 2);    /* +0x10: line 12 */
	op__advance_pc(&line, 0x10);
	op__end_sequence(&line);            /* +0x20: none */
	unit__end(&line, &u);
	img = image__build(&line, &rel, 1, true, "kern_a", "kern_b", &len);

	/* Not wanted: not read. */
	p = profile_with(&proc, 1, &frame, 1, 0);
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, img, len), 0);
	assert_int_equal(profile__lines_held(p), 0);
	profile__destroy(p);

	p = profile_with(&proc, 1, &frame, 1, 0);
	profile__want_pc(p);
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, img, len), 0);
	assert_int_equal(profile__lines_held(p), 3);
	assert_int_equal(profile__lines_cut(p), 0);
	assert_int_equal(profile__add(p, 100, 1, "cuLaunchKernel", NULL, &act), 0);
	/* First at the hottest offset, a record of another build: the report's line is the heavier's. */
	assert_int_equal(profile__add_pc(p, 100, 0xb2, "kern_a", 0x18, "wait", 1), 0);
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "kern_a", 0x4, "wait", 1), 0);
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "kern_a", 0x18, "wait", 5), 0);
	assert_int_equal(profile__add_pc(p, 100, 0xa1, "kern_a", 0x28, "wait", 1), 0);
	/* A record of another cubin (its CRC differs): not this one's lines. */
	assert_int_equal(profile__add_pc(p, 100, 0xb2, "kern_a", 0x1c, "wait", 1), 0);
	assert_int_equal(profile__pc_unplaced(p), 2);
	f = open_memstream(&report, &rlen);
	assert_non_null(f);
	profile__report(p, f, 5);
	fclose(f);
	assert_non_null(strstr(report, "; hottest +0x18 66.7% (k.cu:12)"));
	assert_non_null(strstr(report, "cubin lines: rows=3 cubins_cut=0"));
	free(report);
	path_in_tmp(path, sizeof(path), "lines.pb.gz");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);
	free(img);
	free(line.b);

	decode_profile(path, &d);
	assert_string_equal(instr_source(&d, "kern_a+0x4", &at), "/src/k.cu");
	assert_int_equal(at, 10);
	assert_string_equal(instr_source(&d, "kern_a+0x18", &at), "/src/k.cu");
	assert_int_equal(at, 12);
	assert_string_equal(instr_source(&d, "kern_a+0x28", &at), "");
	assert_int_equal(at, 0);
	assert_string_equal(instr_source(&d, "kern_a+0x1c", &at), "");
	assert_int_equal(at, 0);
}

/* One sequence a kernel: kern_a's n_a rows at line 10, kern_b's at 21, 22, ..., a byte apart. */
static __u8 *lines_cubin(size_t n_a, size_t n_b, bool b_broken, size_t *ret_len)
{
	static const char *const dirs[] = { "/src", NULL };
	static const struct file_spec files[] = { { "k.cu", 1 }, { NULL, 0 } };
	struct rel_spec rel[2] = { { .sym = SYM_A, .type = R_CUDA_64 },
				   { .sym = SYM_B, .type = R_CUDA_64 } };
	struct dw line = { 0 };
	struct unit_at u;
	__u8 *img;

	unit__begin(&line, &u, 2, 10, dirs, files, false);
	rel[0].at = op__set_address(&line, 0);
	op__advance_line(&line, 9);
	for (size_t i = 0; i < n_a; i++)
		op__special(&line, &u, i ? 1 : 0, 0);
	op__end_sequence(&line);
	rel[1].at = op__set_address(&line, 0);
	op__advance_line(&line, 19);
	for (size_t i = 0; i < n_b; i++)
		op__special(&line, &u, i ? 1 : 0, 1);
	if (b_broken) { /* an extended opcode longer than the unit */
		dw__u8(&line, 0);
		dw__uleb(&line, 1000);
	} else {
		op__end_sequence(&line);
	}
	unit__end(&line, &u);
	img = image__build(&line, rel, 2, true, "kern_a", "kern_b", ret_len);
	free(line.b);
	return img;
}

/*
 * A line table broken inside a sequence keeps only its whole sequences
 * (the cut one would lend its last line to the rest of its kernel), and
 * is counted; a process past its own row bound keeps no row of a cubin,
 * which another process then reads whole.
 */
static void test_cubin_lines_keep_whole_sequences_and_leave_what_a_process_cannot_pay_for(void **state)
{
	struct profile_proc proc = { .pid = 100, .comm = "app" };
	struct profile_frame frame = { .name = "site", .file = "/bin/app" };
	const char *file;
	size_t len, big_len;
	__u8 *img, *big;
	struct profile *p;
	__u32 line;

	(void)state;
	img = lines_cubin(3, 3, true, &len);
	p = profile_with(&proc, 1, &frame, 1, 0);
	profile__want_pc(p);
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, img, len), 0);
	assert_int_equal(profile__lines_held(p), 3); /* kern_a's, its end on its last (one kept an address) */
	assert_int_equal(profile__lines_cut(p), 1);
	assert_true(profile__line_of(p, 0xa1, IDX_A, 0x1, &file, &line));
	assert_int_equal(line, 10);
	assert_false(profile__line_of(p, 0xa1, IDX_B, 0x1, &file, &line));
	assert_false(profile__line_of(p, 0xa1, IDX_B, 0x40, &file, &line));
	free(img);

	/* Process 100 fills its share with one cubin; its next is left for 200. */
	big = lines_cubin(MAX_LINE_ROWS_PER_PROC - 16, 1, false, &big_len);
	img = lines_cubin(8, 8, false, &len);
	assert_int_equal(profile__add_cubin(p, 100, 0xb1, big, big_len), 0);
	assert_int_equal(profile__lines_cut(p), 1);
	assert_int_equal(profile__add_cubin(p, 100, 0xc1, img, len), 0);
	assert_int_equal(profile__lines_cut(p), 2);
	assert_false(profile__line_of(p, 0xc1, IDX_B, 0x2, &file, &line));
	assert_int_equal(profile__add_cubin(p, 200, 0xc1, img, len), 0);
	assert_true(profile__line_of(p, 0xc1, IDX_B, 0x2, &file, &line));
	assert_string_equal(file, "/src/k.cu");
	assert_int_equal(line, 23); /* kern_b's rows: 21, 22, 23... a byte apart */
	assert_int_equal(profile__lines_cut(p), 2);
	profile__destroy(p);
	free(img);
	free(big);
}

/*
 * The PC table is bounded per process: one that makes up instructions
 * fills its own share (MAX_PC_ENTRIES_PER_PROC, 524,288 entries), then
 * adds nothing more (its strings are not interned either: the string table
 * is everyone's), counted, and another process's samples still go in.
 */
static void test_pc_entries_are_bounded_per_process(void **state)
{
	struct profile *p;

	(void)state;
	assert_int_equal(profile__new(&p), 0);
	for (__u64 off = 0; off < MAX_PC_ENTRIES_PER_PROC; off++)
		assert_int_equal(profile__add_pc(p, 1, 0xa1, "k", off, "wait", 1), 0);
	assert_int_equal(profile__add_pc(p, 1, 0xa1, "k", MAX_PC_ENTRIES_PER_PROC, "wait", 7), -E2BIG);
	assert_int_equal(profile__pc_dropped(p), 7);
	/* at its bound a process adds nothing, not even to a known one: no string is looked up */
	assert_int_equal(profile__add_pc(p, 1, 0xa1, "k", 5, "wait", 1), -E2BIG);
	assert_int_equal(profile__pc_dropped(p), 8);
	assert_int_equal(profile__add_pc(p, 2, 0xa1, "k", MAX_PC_ENTRIES_PER_PROC, "wait", 1), 0);
	profile__reset_samples(p);
	assert_int_equal(profile__add_pc(p, 1, 0xa1, "k", MAX_PC_ENTRIES_PER_PROC, "wait", 1), 0); /* a new window */
	profile__destroy(p);
}

/*
 * A process whose PC samples name a new function (and stall) each fills its
 * share of the profile's strings with them (PC_NAMES_SHARED), not the
 * table: another process's new function is still named.
 */
static void test_pc_function_names_are_held_to_a_share_of_the_strings(void **state)
{
	char fn[32], stall[32];
	struct profile *p;

	(void)state;
	assert_int_equal(profile__new(&p), 0);
	for (__u64 off = 0; off < MAX_PC_ENTRIES_PER_PROC; off++) {
		snprintf(fn, sizeof(fn), "f%llu", (unsigned long long)off);
		snprintf(stall, sizeof(stall), "s%llu", (unsigned long long)off);
		profile__add_pc(p, 1, 0xa1, fn, off, stall, 1);
	}
	assert_int_equal(profile__pc_dropped(p), MAX_PC_ENTRIES_PER_PROC - PC_NAMES_SHARED);
	assert_int_equal(profile__add_pc(p, 2, 0xa1, "good_kernel", 0, "wait", 1), 0);
	profile__destroy(p);
}

static bool dec_has_fn(const struct decoded *d, const char *name)
{
	for (int i = 0; i < d->nfn; i++)
		if (!strcmp(dec_str(d, d->fn[i].name), name))
			return true;
	return false;
}

static bool keep_pid_100(void *ctx, __u32 pid)
{
	(void)ctx;
	return pid == 100;
}

/*
 * Continuous mode's compaction: a gone process (200) and the stacks no
 * window needs (1, 3) are freed with their frames, strings and cubins; the
 * kept stack (2) is renumbered (to 1) and still names its frames; the kept
 * process keeps its cubin.
 */
static void test_compact_forgets_gone_processes_and_renumbers_kept_stacks(void **state)
{
	static const char *const ka[] = { "gemm", "softmax" }, *const kb[] = { "relu" };
	struct profile_frame fr[] = {
		{ .name = "main", .file = "/bin/app", .build_id = "cafe", .addr = 0x1234 },
		{ .name = "worker", .file = "/lib/w.so", .build_id = "beef", .addr = 0x10 },
		{ .name = "gone_fn", .file = "/bin/gone", .build_id = "dead", .addr = 0x20 },
	};
	struct profile_proc procs[] = { { .pid = 100, .comm = "app" }, { .pid = 200, .comm = "gone" } };
	__u32 remap[] = { 0, 0, 1, 0 };
	uint8_t a[1024], b[1024];
	size_t alen = cubin_build(a, sizeof(a), "a", ka, 2), blen = cubin_build(b, sizeof(b), "b", kb, 1);
	struct profile_sizes before, after;
	struct profile_cubin_stats cs;
	struct profile *p;
	static struct decoded d;
	char path[PATH_MAX];

	p = profile_with(procs, 2, fr, 3, 2);
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, a, alen), 0);
	assert_int_equal(profile__add_cubin(p, 200, 0xb2, b, blen), 0);
	add_kernel(p, 100, "gemm");
	/* Samples still name the old ids: refused, nothing changes. */
	assert_int_equal(profile__compact(p, remap, 3, keep_pid_100, NULL), -EBUSY);
	profile__reset_samples(p);
	profile__sizes(p, &before);
	assert_int_equal(profile__compact(p, remap, 3, keep_pid_100, NULL), 0);
	profile__sizes(p, &after);
	assert_int_equal(before.stacks, 3);
	assert_int_equal(after.stacks, 1);
	assert_int_equal(before.procs, 2);
	assert_int_equal(after.procs, 1);
	assert_int_equal(before.cubins, 2);
	assert_int_equal(after.cubins, 1);
	assert_int_equal(after.frames, 1);
	assert_true(after.strings < before.strings);
	assert_true(profile__has_stack(p, 1));
	assert_false(profile__has_stack(p, 2));
	profile__cubin_stats(p, &cs);
	assert_int_equal(cs.kernels, 2);
	assert_int_equal(cs.cubins, 1);

	add_kernel(p, 100, "gemm"); /* stack 1: the old stack 2, worker */
	path_in_tmp(path, sizeof(path), "compact.pb.gz");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);
	decode_profile(path, &d);
	assert_int_equal(d.nsample, 1);
	assert_in_cubin(&d, kernel_leaf(&d, "gemm", 100), "00000000000000a1");
	assert_true(dec_has_fn(&d, "worker"));
	assert_true(dec_has_fn(&d, "[truncated stack]"));
	assert_false(dec_has_fn(&d, "main"));
	assert_false(dec_has_fn(&d, "gone_fn"));
}

static void add_named(struct profile *p, __u32 name_id, const char *name)
{
	struct profile_activity a = { .name = name, .name_id = name_id, .ns = 1000 };

	assert_int_equal(profile__add(p, 100, 1, "cuLaunchKernel", NULL, &a), 0);
}

/* The samples of kernel name in pid 100: their count. */
static uint64_t kernel_count(const struct decoded *d, const char *name)
{
	const struct dec_location *l = kernel_leaf(d, name, 100);

	for (int i = 0; i < d->nsample; i++)
		if (d->sample[i].leaf == l->id)
			return d->sample[i].value[1];
	return 0;
}

/*
 * Names given by the caller's id (profile_activity.name_id) are looked up
 * by it after the first: each sample keeps its own name, and after a
 * compaction renumbers the strings, an id names its string again, not
 * whatever took the old string id.
 */
static void test_names_given_by_id_keep_their_names_across_a_compaction(void **state)
{
	struct profile_frame fr[] = {
		{ .name = "main", .file = "/bin/app", .build_id = "cafe", .addr = 0x1234 },
		{ .name = "gone_fn", .file = "/bin/gone", .build_id = "dead", .addr = 0x20 },
	};
	struct profile_proc procs[] = { { .pid = 100, .comm = "app" }, { .pid = 200, .comm = "gone" } };
	__u32 remap[] = { 0, 1, 0 };
	struct profile *p = profile_with(procs, 2, fr, 2, 0);
	static struct decoded d;
	char path[PATH_MAX];

	(void)state;
	for (int i = 0; i < 3; i++)
		add_named(p, 7, "gemm");
	add_named(p, 9, "relu");
	add_named(p, 9, "relu");
	path_in_tmp(path, sizeof(path), "named.pb.gz");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	decode_profile(path, &d);
	assert_int_equal(d.nsample, 2);
	assert_int_equal(kernel_count(&d, "gemm"), 3);
	assert_int_equal(kernel_count(&d, "relu"), 2);

	profile__reset_samples(p);
	assert_int_equal(profile__compact(p, remap, 2, keep_pid_100, NULL), 0);
	add_named(p, 9, "relu");
	add_named(p, 11, "softmax");
	add_named(p, 7, "gemm");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);
	decode_profile(path, &d);
	assert_int_equal(d.nsample, 3);
	assert_int_equal(kernel_count(&d, "relu"), 1);
	assert_int_equal(kernel_count(&d, "softmax"), 1);
	assert_int_equal(kernel_count(&d, "gemm"), 1);
}

/*
 * Compaction keeps the source lines of the cubins still held (pid 100's)
 * and drops a gone process's (200's), and PC samples stay wanted.
 */
static void test_compact_keeps_the_lines_of_cubins_still_held(void **state)
{
	struct profile_frame fr[] = { { .name = "main", .file = "/bin/app" },
				      { .name = "worker", .file = "/lib/w.so" },
				      { .name = "gone_fn", .file = "/bin/gone" } };
	struct profile_proc procs[] = { { .pid = 100, .comm = "app" }, { .pid = 200, .comm = "gone" } };
	__u32 remap[] = { 0, 0, 1, 0 }, line;
	size_t alen, blen;
	__u8 *a = lines_cubin(4, 1, false, &alen), *b = lines_cubin(6, 1, false, &blen);
	struct profile *p;
	const char *file;

	(void)state;
	p = profile_with(procs, 2, fr, 3, 2);
	profile__want_pc(p);
	assert_int_equal(profile__add_cubin(p, 100, 0xa1, a, alen), 0);
	assert_int_equal(profile__add_cubin(p, 200, 0xb2, b, blen), 0);
	assert_int_equal(profile__lines_held(p), 5 + 7); /* n_a + 1 each: an end replaces its last row */
	profile__reset_samples(p);
	assert_int_equal(profile__compact(p, remap, 3, keep_pid_100, NULL), 0);
	assert_true(profile__has_pc(p));
	assert_int_equal(profile__lines_held(p), 5);
	assert_true(profile__line_of(p, 0xa1, IDX_A, 0x2, &file, &line));
	assert_int_equal(line, 10);
	assert_false(profile__line_of(p, 0xb2, IDX_A, 0x2, &file, &line));
	/* The gone cubin may be read again: its CRC was forgotten with it. */
	assert_int_equal(profile__add_cubin(p, 100, 0xb2, b, blen), 0);
	assert_true(profile__line_of(p, 0xb2, IDX_A, 0x2, &file, &line));
	profile__destroy(p);
	free(a);
	free(b);
}

/*
 * Launches without a GPU record: counted under launches with no GPU time,
 * their own leaf, no device or stream label, apart from the kernels'
 * totals; a kernel launched from the same stack keeps its own sample.
 */
/* Stacks a (pid 100) and b (pid 200) under a_ns and b_ns of GPU time, written to path: its first mapping. */
static const struct dec_mapping *main_binary(const char *path, struct decoded *d,
					     const struct profile_frame *a, __u32 na, __u64 a_ns,
					     const struct profile_frame *b, __u32 nb, __u64 b_ns)
{
	struct profile_proc procs[] = { { .pid = 100, .comm = "a" }, { .pid = 200, .comm = "b" } };
	struct profile_activity act = { .name = "k" };
	struct profile *p;

	assert_int_equal(profile__new(&p), 0);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(profile__set_proc(p, &procs[i]), 0);
	assert_int_equal(profile__set_stack(p, 1, a, na, false), 0);
	assert_int_equal(profile__set_stack(p, 2, b, nb, false), 0);
	act.ns = a_ns;
	assert_int_equal(profile__add(p, 100, 1, "cuLaunchKernel", NULL, &act), 0);
	act.ns = b_ns;
	assert_int_equal(profile__add(p, 200, 2, "cuLaunchKernel", NULL, &act), 0);
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);
	decode_profile(path, d);
	assert_true(d->nmap > 0);
	return &d->map[0];
}

/*
 * The first mapping, which pprof reads as the main binary (its file and
 * build id head `go tool pprof`'s output), is the executable under the
 * most GPU time: the native file nearest a stack's root that is no shared
 * object; never a library, a Python source or a cubin.
 */
static void test_the_executable_under_the_most_gpu_time_is_the_main_binary(void **state)
{
	static const struct profile_frame thread[] = { /* a worker thread of /bin/app */
		{ .name = "site", .file = "/lib/libwork.so.2", .build_id = "aa", .addr = 0x10 },
		{ .name = "worker", .file = "/bin/app", .build_id = "cafe", .addr = 0x20 },
		{ .name = "start_thread", .file = "/lib/libc.so.6", .build_id = "bb", .addr = 0x30 },
	};
	static const struct profile_frame python[] = { /* python3's main thread */
		{ .name = "launch", .file = "/py/_C.cpython-312-x86_64-linux-gnu.so",
		  .build_id = "cc", .addr = 0x40 },
		{ .name = "step", .file = "/w/train.py", .build_id = "", .line = 3 },
		{ .name = "_start", .file = "/usr/bin/python3", .build_id = "dd", .addr = 0x50 },
		{ .name = "main", .file = "/w/run.py", .build_id = "", .line = 1 },
		{ .name = "_run_module_as_main", .file = "<frozen runpy>", .build_id = "", .line = 198 },
	};
	static const char *const file_of[][2] = { { "site", "/lib/libwork.so.2" },
		{ "worker", "/bin/app" }, { "start_thread", "/lib/libc.so.6" },
		{ "launch", "/py/_C.cpython-312-x86_64-linux-gnu.so" }, { "_start", "/usr/bin/python3" } };
	static struct decoded d;
	const struct dec_mapping *m;
	char path[PATH_MAX];

	path_in_tmp(path, sizeof(path), "main.pb.gz");
	m = main_binary(path, &d, thread, 3, 1000, python, 5, 3000);
	assert_string_equal(dec_str(&d, m->file), "/usr/bin/python3");
	assert_string_equal(dec_str(&d, m->build_id), "dd");
	/* Reordered, not renumbered: ids 1..n once each, every location in its file's mapping. */
	for (int i = 0; i < d.nmap; i++)
		for (int j = 0; j < d.nmap; j++)
			assert_true(d.map[j].id >= 1 && d.map[j].id <= (uint64_t)d.nmap &&
				    (i == j || d.map[i].id != d.map[j].id));
	for (size_t i = 0; i < sizeof(file_of) / sizeof(file_of[0]); i++) {
		const struct dec_location *l = NULL;

		for (int j = 0; j < d.nloc && !l; j++)
			if (!strcmp(dec_fn_name(&d, d.loc[j].function), file_of[i][0]))
				l = &d.loc[j];
		assert_non_null(l);
		assert_non_null(dec_map(&d, l->mapping));
		assert_string_equal(dec_str(&d, dec_map(&d, l->mapping)->file), file_of[i][1]);
	}
	m = main_binary(path, &d, thread, 3, 5000, python, 5, 3000);
	assert_string_equal(dec_str(&d, m->file), "/bin/app");
	assert_string_equal(dec_str(&d, m->build_id), "cafe");
	/* Libraries and Python sources alone: no main binary, mappings as first named. */
	m = main_binary(path, &d, thread, 1, 5000, python + 3, 1, 9000);
	assert_string_equal(dec_str(&d, m->file), "/lib/libwork.so.2");
}

static void test_launches_without_a_record_count_apart_with_no_device(void **state)
{
	struct profile_frame fr[] = { { .name = "main", .file = "/bin/app", .addr = 0x1234 } };
	struct profile_proc procs[] = { { .pid = 100, .comm = "app" } };
	struct profile_activity gemm = { .name = "gemm", .ns = 1000, .device = 2, .stream = 7 };
	struct profile_totals t;
	struct profile *p;
	char path[PATH_MAX];
	char *raw;
	const char *at;
	int devices = 0;

	require_go();
	p = profile_with(procs, 1, fr, 1, 0);
	assert_int_equal(profile__add(p, 100, 1, "cuLaunchKernel", NULL, &gemm), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(profile__add_launch(p, 100, 1, "cuLaunchKernel", NULL, NULL), 0);
	profile__totals(p, &t);
	assert_int_equal(t.activities, 1);
	assert_int_equal(t.gpu_ns, 1000);
	assert_int_equal(t.launches_unrecorded, 3);
	path_in_tmp(path, sizeof(path), "unrecorded.pb.gz");
	assert_int_equal(profile__write_pprof(p, path, 1, 1, NULL, 0), 0);
	profile__destroy(p);
	raw = go_pprof("-raw", path);
	assert_contains(raw, "       1000          1: ");
	assert_contains(raw, "          0          3: ");
	assert_contains(raw, GP_PROFILE_NO_RECORD);
	for (at = raw; (at = strstr(at, "device:[")); at++)
		devices++;
	assert_int_equal(devices, 1); /* the kernel's sample only */
	assert_contains(raw, "stream:[7 id]");
	free(raw);
}

static bool dir_has_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool any = false;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			any = true;
	closedir(d);
	return any;
}

static void test_unwritable_directory_gives_eacces_and_no_file(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct pprof *p = build_profile();
	pid_t pid;
	int status;

	path_in_tmp(dir, sizeof(dir), "ro");
	assert_int_equal(mkdir(dir, 0555), 0);
	assert_int_equal(chmod(dir, 0555), 0);
	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	/* Root ignores modes: write as nobody in a child, report its error code. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(100);
		_exit(-pprof__write_file(p, path) & 0xff);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), EACCES);
	assert_int_equal(access(path, F_OK), -1);
	assert_false(dir_has_entries(dir));
	/* A missing directory is an error too, not a crash. */
	snprintf(path, sizeof(path), "%s/missing/out.pb.gz", tmp_dir);
	assert_int_equal(pprof__write_file(p, path), -ENOENT);
	pprof__destroy(p);
}

/* A file-size limit makes write() come back short, then fail: EFBIG. */
static void test_short_write_fails_and_keeps_the_old_profile(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX], name[64];
	struct rlimit old, lim;
	struct pprof *p = pprof__new();
	struct stat st_before, st_after;
	uint64_t fn, loc;
	struct pprof_line ln;
	const int64_t v[] = { 1 };
	int i, err;

	path_in_tmp(dir, sizeof(dir), "full");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	assert_int_equal(pprof__add_sample_type(p, "t", "count"), 0);
	assert_int_equal(pprof__write_file(p, path), 0);
	assert_int_equal(stat(path, &st_before), 0);
	/* Incompressible names so the profile outgrows the limit. */
	srand(1);
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "f%08x%08x", rand(), rand());
		assert_int_equal(pprof__add_function(p, name, NULL, NULL, 0, &fn), 0);
		ln = (struct pprof_line){ fn, 0 };
		assert_int_equal(pprof__add_location(p, 0, 0, &ln, 1, &loc), 0);
		assert_int_equal(pprof__add_sample(p, &loc, 1, v, NULL, 0), 0);
	}
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 5000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	err = pprof__write_file(p, path);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(err, -EFBIG);
	/* The previous profile is untouched and no temp file is left behind. */
	assert_int_equal(stat(path, &st_after), 0);
	assert_int_equal(st_after.st_ino, st_before.st_ino);
	assert_int_equal(st_after.st_size, st_before.st_size);
	assert_int_equal(unlink(path), 0);
	assert_false(dir_has_entries(dir));
	/* Without the limit, the same profile writes fine. */
	assert_int_equal(pprof__write_file(p, path), 0);
	pprof__destroy(p);
}

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmp_dir, sizeof(tmp_dir), "%s/gp_pprof.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmp_dir))
		return -1;
	/* nobody must be able to reach the read-only directory to get EACCES there. */
	chmod(tmp_dir, 0755);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_go_pprof_reads_exact_values_labels_and_build_id),
		cmocka_unit_test(test_go_pprof_traces_and_top_show_the_merged_stacks),
		cmocka_unit_test(test_default_sample_type_can_be_changed),
		cmocka_unit_test(test_string_table_starts_with_the_empty_string),
		cmocka_unit_test(test_interning_returns_the_same_id_for_the_same_content),
		cmocka_unit_test(test_samples_need_types_first_and_valid_locations),
		cmocka_unit_test(test_many_samples_merge_by_stack_and_sum),
		cmocka_unit_test(test_unwritable_directory_gives_eacces_and_no_file),
		cmocka_unit_test(test_short_write_fails_and_keeps_the_old_profile),
		cmocka_unit_test(test_profile_puts_each_kernel_in_the_mapping_of_its_cubin),
		cmocka_unit_test(test_a_process_loading_cubins_without_end_leaves_room_for_others),
		cmocka_unit_test(test_pc_samples_are_shared_by_gpu_time_exactly),
		cmocka_unit_test(test_pc_entries_are_bounded_per_process),
		cmocka_unit_test(test_pc_function_names_are_held_to_a_share_of_the_strings),
		cmocka_unit_test(test_pc_samples_carry_their_source_lines),
		cmocka_unit_test(test_cubin_lines_keep_whole_sequences_and_leave_what_a_process_cannot_pay_for),
		cmocka_unit_test(test_compact_forgets_gone_processes_and_renumbers_kept_stacks),
		cmocka_unit_test(test_names_given_by_id_keep_their_names_across_a_compaction),
		cmocka_unit_test(test_compact_keeps_the_lines_of_cubins_still_held),
		cmocka_unit_test(test_the_executable_under_the_most_gpu_time_is_the_main_binary),
		cmocka_unit_test(test_launches_without_a_record_count_apart_with_no_device),
	};

	if (!find_go()) {
		go_bin[0] = '\0';
		fprintf(stderr, "test_pprof: `go` not found in PATH: skipping the go tool pprof checks\n");
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
