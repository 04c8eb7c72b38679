/* SPDX-License-Identifier: MIT */
/*
 * Tests for user/symbolize and the address space that asks it (user/space):
 * this test binary and libc are symbolized from our own /proc/self/maps and
 * compared with what the dynamic linker says;
 * stripped and replaced files, a fake container root with links pointing
 * out of it, hostile ELF bytes, /proc/<pid>/maps corner cases, demangling.
 */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <elf.h>
#include <cmocka.h>

#include "tests/skip.h"
#include "user/symbolize/demangle.h"
#include "user/symbolize/elf_syms.h"
#include "user/symbolize/elf_symtab.h"
#include "user/proc/proc_maps.h"
#include "user/proc/proc.h"
#include "user/proc/proc_internal.h"
#include "user/space/space.h"
#include "user/space/space_internal.h"
#include "user/util/mem_share.h"
#include "user/symbolize/symbolize.h"
#include "user/util/bounded.h"
#include "user/util/clock.h"

static char tmp_dir[PATH_MAX];
static char exe_copy[PATH_MAX];    /* this binary, with symbols */
static char exe_stripped[PATH_MAX]; /* the same, objcopy --strip-all; "" if no objcopy */

__attribute__((noinline, used)) int gp_test_target_fn(int x)
{
	/* Enough body that +1 stays inside the function. */
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

/* A sized 1-byte function followed by padding no symbol covers. */
__asm__(".text\n"
	".p2align 6\n"
	".globl gp_test_gap_fn\n"
	".hidden gp_test_gap_fn\n"
	".type gp_test_gap_fn, @function\n"
	"gp_test_gap_fn:\n"
	"  ret\n"
	".size gp_test_gap_fn, 1\n"
	".zero 48\n"
	".p2align 6\n");
void gp_test_gap_fn(void);

static uint64_t vaddr_in_exe(const void *addr)
{
	Dl_info info;

	assert_true(dladdr(addr, &info) != 0);
	return (uint64_t)((uintptr_t)addr - (uintptr_t)info.dli_fbase);
}

/* The tables processes share, as a session makes them. */
static struct space_caches *caches(struct bounded *b)
{
	struct space_caches *c = NULL;

	assert_int_equal(space_caches__new(b, &c), 0);
	return c;
}

static int run(const char *cmd)
{
	return system(cmd);
}

static void test_function_of_this_binary_is_named_with_build_id(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *s = caches(bounded);
	struct space_gen *sp;
	struct symbolized_frame f;
	uintptr_t addr = (uintptr_t)&gp_test_target_fn + 1;

	assert_non_null(s);
	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &sp), 0);
	assert_int_equal(space_gen__name(sp, addr, &f), 0);
	assert_string_equal(f.name, "gp_test_target_fn");
	assert_true(f.has_symbol);
	assert_false(f.is_python);
	assert_int_equal(strlen(f.build_id), 40);
	/* PIE: the ELF address is the runtime one less the load base. */
	assert_int_equal(f.addr, vaddr_in_exe((void *)addr));
	assert_non_null(strstr(f.file, "test_symbolize"));
	space_gen__destroy(sp);
	space_caches__destroy(s);
}

/*
 * Every process's maps under one bound (here a map and a half of this
 * process's): the first generation alone within it opens; a second, whose
 * share is half the bound, is refused and counted, naming nothing; once the
 * first goes, the second opens, and the ledger returns to zero.
 */
static void test_many_processes_maps_share_one_bound(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *s = caches(bounded);
	struct space_gen *a, *b;
	size_t one;

	assert_non_null(s);
	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &a), 0);
	one = mem_share__bytes(space_caches__maps_share(s));
	assert_true(one > 0);
	space_gen__destroy(a);
	assert_int_equal(mem_share__bytes(space_caches__maps_share(s)), 0);
	space_caches__set_maps_bound(s, one + one / 2);
	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &a), 0);
	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &b), -ENOSPC);
	assert_int_equal(space_caches__maps_refused(s), 1);
	assert_int_equal(mem_share__bytes(space_caches__maps_share(s)), one);
	space_gen__destroy(a);
	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &b), 0);
	space_gen__destroy(b);
	assert_int_equal(mem_share__bytes(space_caches__maps_share(s)), 0);
	assert_int_equal(space_caches__maps_share(s)->holders, 0);
	space_caches__destroy(s);
}

/*
 * The CFI tables generations hold count against a bound shared by tenants
 * (here 1, this process's cgroup the one tenant): this executable's table
 * is held, libc's is then refused and counted; once the generation is gone
 * its count is given back and libc's loads.
 */
static void test_cfi_tables_held_count_against_their_tenants_share(void **state)
{
	struct bounded *bounded = *state;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct space_caches *s = caches(bounded);
	const struct cfi_table *t;
	struct space_gen *sp;
	__u64 bias;
	void *fn;

	assert_non_null(libc);
	fn = dlsym(libc, "getpid");
	space_caches__set_cfi_refs_bound(s, 1);
	assert_int_equal(space_gen__open(s, bounded, getpid(), NULL, &sp), 0);
	assert_int_equal(space_gen__cfi(sp, (uintptr_t)&gp_test_gap_fn, &t, &bias), 0);
	assert_non_null(t);
	assert_int_equal(space_gen__cfi(sp, (uintptr_t)fn, &t, &bias), 0);
	assert_null(t);
	assert_int_equal(space_caches__cfi_refused(s), 1);
	space_gen__destroy(sp);
	assert_int_equal(space_gen__open(s, bounded, getpid(), NULL, &sp), 0);
	assert_int_equal(space_gen__cfi(sp, (uintptr_t)fn, &t, &bias), 0);
	assert_non_null(t);
	space_gen__destroy(sp);
	space_caches__destroy(s);
	dlclose(libc);
}

static void test_libc_function_is_named_as_the_dynamic_linker_names_it(void **state)
{
	struct bounded *bounded = *state;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct space_caches *s = caches(bounded);
	struct space_gen *sp;
	struct symbolized_frame f;
	void *fn;

	assert_non_null(libc);
	fn = dlsym(libc, "getpid");
	assert_non_null(fn);
	assert_int_equal(space_gen__open(s, bounded, getpid(), NULL, &sp), 0);
	assert_int_equal(space_gen__name(sp, (uintptr_t)fn, &f), 0);
	assert_true(f.has_symbol);
	assert_non_null(strstr(f.file, "libc"));
	/* Aliases (getpid, __getpid) are fine as long as they name this address. */
	assert_ptr_equal(dlsym(libc, f.name), fn);
	assert_true(f.build_id[0] != '\0');
	space_gen__destroy(sp);
	space_caches__destroy(s);
	dlclose(libc);
}

static void test_address_past_a_symbols_size_gives_lib_plus_offset(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *s = caches(bounded);
	struct space_gen *sp;
	struct symbolized_frame f;
	uintptr_t addr = (uintptr_t)&gp_test_gap_fn + 16;
	char expect[128];

	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &sp), 0);
	assert_int_equal(space_gen__name(sp, (uintptr_t)&gp_test_gap_fn, &f), 0);
	assert_string_equal(f.name, "gp_test_gap_fn");
	assert_int_equal(space_gen__name(sp, addr, &f), 0);
	assert_false(f.has_symbol);
	snprintf(expect, sizeof(expect), "%s+0x%llx", strrchr(f.file, '/') + 1,
		 (unsigned long long)vaddr_in_exe((void *)addr));
	assert_string_equal(f.name, expect);
	space_gen__destroy(sp);
	space_caches__destroy(s);
}

static void test_address_in_no_mapping_is_not_found(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *s = caches(bounded);
	struct space_gen *sp;
	struct symbolized_frame f;

	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &sp), 0);
	assert_int_equal(space_gen__name(sp, 16, &f), -ENOENT);
	space_gen__destroy(sp);
	space_caches__destroy(s);
}

/* This process's perf map (its path into path), written (mode "w") or added to ("a"). */
static void perf_map__write(char *path, size_t cap, const char *mode, const char *lines)
{
	FILE *pm;

	snprintf(path, cap, "/tmp/perf-%d.map", (int)getpid());
	pm = fopen(path, mode);
	assert_non_null(pm);
	fputs(lines, pm);
	assert_int_equal(fclose(pm), 0);
}

static void test_python_frames_come_from_the_perf_map(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *s = caches(bounded);
	struct space_gen *sp;
	struct symbolized_frame f;
	char path[64];

	/* CPython's format: hex without 0x. Addresses no mapping covers. */
	perf_map__write(path, sizeof(path), "w",
			"1000 40 py::train_step:/app/train.py\n0x2000 0x10 some_jit_fn\n");
	assert_int_equal(space_gen__open(s, bounded, getpid(), "/", &sp), 0);
	assert_int_equal(space_gen__name(sp, 0x1010, &f), 0);
	assert_true(f.is_python);
	assert_string_equal(f.name, "train_step");
	assert_string_equal(f.file, "/app/train.py");
	assert_int_equal(space_gen__name(sp, 0x200f, &f), 0);
	assert_false(f.is_python);
	assert_string_equal(f.name, "some_jit_fn");
	assert_int_equal(space_gen__name(sp, 0x2010, &f), -ENOENT);
	assert_int_equal(space_gen__perfmap_reads(sp), 1);
	/* The maps read again: the perf map, unchanged, is not read again. */
	assert_true(space_gen__refresh_if_older(sp, UINT64_MAX));
	assert_int_equal(space_gen__name(sp, 0x1010, &f), 0);
	assert_string_equal(f.name, "train_step");
	assert_int_equal(space_gen__perfmap_reads(sp), 1);
	/* Changed (a line more): read again, its new line found. */
	perf_map__write(path, sizeof(path), "a", "3000 10 py::eval_step:/app/train.py\n");
	assert_true(space_gen__refresh_if_older(sp, UINT64_MAX));
	assert_int_equal(space_gen__name(sp, 0x3004, &f), 0);
	assert_string_equal(f.name, "eval_step");
	assert_int_equal(space_gen__perfmap_reads(sp), 2);
	space_gen__destroy(sp);
	space_caches__destroy(s);
	unlink(path);
}

/*
 * A tenant that owes its load budget loads nothing new: with a budget of
 * 1 ns paid back a 4,000,000,000th as fast, the first load (this binary's
 * symbols) goes and spends it; libc's symbols are then refused (its frame
 * named by file and offset, counted once however often asked) and so is
 * the perf map (its JIT frames unnamed). A session without that debt
 * names both.
 */
static void test_a_tenant_owing_its_load_budget_loads_nothing_new(void **state)
{
	struct bounded *bounded = *state;
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct space_caches *s = caches(bounded), *fresh = caches(bounded);
	uintptr_t fn = (uintptr_t)dlsym(libc, "getpid");
	struct space_gen *sp;
	struct symbolized_frame f;
	char path[64];

	perf_map__write(path, sizeof(path), "w", "1000 40 py::train_step:/app/train.py\n");
	space_caches__set_load_budget(s, 1, 4000000000u);
	assert_int_equal(space_gen__open(s, bounded, getpid(), NULL, &sp), 0);
	assert_int_equal(space_gen__name(sp, (uintptr_t)&gp_test_target_fn + 1, &f), 0);
	assert_string_equal(f.name, "gp_test_target_fn");
	assert_int_equal(space_caches__loads_refused(s), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(space_gen__name(sp, fn, &f), 0);
		assert_false(f.has_symbol);
		assert_non_null(strstr(f.name, "libc.so.6+0x"));
	}
	assert_int_equal(space_caches__loads_refused(s), 1);
	assert_int_equal(space_gen__name(sp, 0x1010, &f), -ENOENT);
	assert_int_equal(space_caches__loads_refused(s), 2);
	space_gen__destroy(sp);
	assert_int_equal(space_gen__open(fresh, bounded, getpid(), NULL, &sp), 0);
	assert_int_equal(space_gen__name(sp, fn, &f), 0);
	assert_true(f.has_symbol);
	assert_int_equal(space_gen__name(sp, 0x1010, &f), 0);
	assert_string_equal(f.name, "train_step");
	assert_int_equal(space_caches__loads_refused(fresh), 0);
	space_gen__destroy(sp);
	space_caches__destroy(s);
	space_caches__destroy(fresh);
	unlink(path);
	dlclose(libc);
}

static void test_per_process_handles_share_one_cache_and_miss_cleanly(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *c = caches(bounded);
	struct space_gen *a, *b;
	struct symbolized_frame f;

	assert_int_equal(space_gen__open(c, bounded, getpid(), NULL, &a), 0);
	assert_int_equal(space_gen__open(c, bounded, getpid(), NULL, &b), 0);
	assert_int_equal(space_gen__name(a, (uintptr_t)&gp_test_target_fn, &f), 0);
	assert_string_equal(f.name, "gp_test_target_fn");
	assert_int_equal(f.addr, vaddr_in_exe((void *)&gp_test_target_fn));
	space_gen__destroy(a);
	/* The shared cache outlives the first handle. */
	assert_int_equal(space_gen__name(b, (uintptr_t)&gp_test_target_fn, &f), 0);
	assert_int_equal(space_gen__name(b, 16, &f), -ENOENT);
	space_gen__destroy(b);
	space_gen__destroy(NULL);
	assert_int_equal(space_gen__open(c, bounded, -1, NULL, &a), -EINVAL);
	space_caches__destroy(c);
}

/*
 * A process chooses the addresses that make the loader read its maps again
 * (a stack of garbage, a mapping made and gone between launches): however
 * often it asks, one process gets SPACE_REREAD_BURST re-reads, then one
 * per SPACE_REREAD_EVERY_NS; the rest are refused and counted.
 */
static void test_maps_rereads_of_one_process_are_rate_limited(void **state)
{
	struct bounded *bounded = *state;
	struct space_caches *c = caches(bounded);
	struct space_gen *sym;
	unsigned long reads;
	uint64_t t0, elapsed;

	assert_int_equal(space_gen__open(c, bounded, getpid(), NULL, &sym), 0);
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < 200; i++)
		space_gen__refresh_if_older(sym, UINT64_MAX); /* always older than the launch */
	elapsed = clock_ns(CLOCK_MONOTONIC) - t0;
	reads = space_gen__rereads(sym);
	assert_true(reads >= 1);
	if (reads > SPACE_REREAD_BURST + elapsed / SPACE_REREAD_EVERY_NS + 1)
		fail_msg("%lu re-reads in %llu ms", reads, (unsigned long long)(elapsed / 1000000));
	assert_int_equal(space_gen__limited(sym), 200 - reads);
	space_gen__destroy(sym);
	space_caches__destroy(c);
}

static void test_stripped_copy_has_no_names_but_the_same_build_id(void **state)
{
	struct bounded *bounded = *state;
	struct elf_cache *c = elf_cache__new(bounded, 8);
	struct elf_syms *full, *stripped;
	uint64_t vaddr = vaddr_in_exe((void *)&gp_test_target_fn), off;
	const char *name;
	int root = open("/", O_PATH | O_DIRECTORY);

	if (!exe_stripped[0])
		SKIP_BECAUSE("objcopy could not strip a copy of the test binary (binutils)");
	assert_int_equal(elf_cache__get(c, root, exe_copy, &full), 0);
	assert_int_equal(elf_cache__get(c, root, exe_stripped, &stripped), 0);
	assert_int_equal(elf_syms__lookup(full, vaddr + 1, &name, &off), 0);
	assert_string_equal(name, "gp_test_target_fn");
	assert_int_equal(off, 1);
	assert_int_equal(elf_syms__lookup(stripped, vaddr + 1, &name, &off), -ENOENT);
	assert_string_equal(elf_syms__build_id(full), elf_syms__build_id(stripped));
	assert_int_equal(strlen(elf_syms__build_id(stripped)), 40);
	elf_syms__put(full);
	elf_syms__put(stripped);
	elf_cache__destroy(c);
	close(root);
}

/*
 * A root under dir holding the stripped copy at /bin/exe and, at the debug
 * path of build_id, objcopy --only-keep-debug of this binary (extra: more
 * objcopy arguments).
 */
static int debug_root(const char *dir, const char *build_id, const char *extra)
{
	char cmd[PATH_MAX * 6];

	snprintf(cmd, sizeof(cmd),
		 "set -e; d='%s/usr/lib/debug/.build-id/%.2s'; mkdir -p '%s/bin' \"$d\";"
		 "cp '%s' '%s/bin/exe'; objcopy --only-keep-debug %s '%s' \"$d/%s.debug\"",
		 dir, build_id, dir, exe_stripped, dir, extra, exe_copy, build_id + 2);
	return run(cmd);
}

/*
 * /bin/exe's symbols, as a process whose root is dir sees it, by a new cache
 * whose debug files are looked for under debug_dir ("": none).
 */
static struct elf_syms *syms_in_root(struct bounded *bounded, const char *dir,
				     const char *debug_dir)
{
	struct elf_cache *c = elf_cache__new(bounded, 8);
	struct elf_syms *s = NULL;
	int fd = open(dir, O_PATH | O_DIRECTORY), dfd = -1;

	assert_non_null(c);
	assert_true(fd >= 0);
	if (debug_dir[0])
		assert_true((dfd = open(debug_dir, O_PATH | O_DIRECTORY)) >= 0);
	assert_int_equal(elf_cache__set_debug_root(c, dfd), 0);
	assert_int_equal(elf_cache__get(c, fd, "/bin/exe", &s), 0);
	elf_cache__destroy(c); /* s keeps its own reference */
	close(fd);
	if (dfd >= 0)
		close(dfd);
	return s;
}

static void test_a_stripped_file_takes_names_from_its_debug_file_of_the_same_build(void **state)
{
	struct bounded *bounded = *state;
	static const uint8_t other_id[36] = { 4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0,
		0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
		0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa };
	struct elf_cache *c = elf_cache__new(bounded, 8);
	uint64_t vaddr = vaddr_in_exe((void *)&gp_test_target_fn), off;
	char same[PATH_MAX], other[PATH_MAX], note[PATH_MAX], extra[PATH_MAX * 2], id[64];
	struct elf_syms *full, *s;
	const char *name;
	int root = open("/", O_PATH | O_DIRECTORY);
	FILE *f;

	if (!exe_stripped[0])
		SKIP_BECAUSE("objcopy could not strip a copy of the test binary (binutils)");
	assert_int_equal(elf_cache__get(c, root, exe_copy, &full), 0);
	snprintf(id, sizeof(id), "%s", elf_syms__build_id(full));
	elf_syms__put(full);
	elf_cache__destroy(c);
	close(root);
	if (strlen(id) < 4)
		SKIP_BECAUSE("this toolchain gave the test binary no build id");

	snprintf(same, sizeof(same), "%s/dbg-same", tmp_dir);
	assert_int_equal(debug_root(same, id, ""), 0);
	s = syms_in_root(bounded, same, same);
	assert_int_equal(elf_syms__lookup(s, vaddr + 1, &name, &off), 0);
	assert_string_equal(name, "gp_test_target_fn");
	assert_int_equal(off, 1);
	assert_string_equal(elf_syms__build_id(s), id);
	elf_syms__put(s);

	/* The debug file inside the process's root is not read: only the loader's. */
	s = syms_in_root(bounded, same, "");
	assert_int_equal(elf_syms__lookup(s, vaddr + 1, &name, &off), -ENOENT);
	elf_syms__put(s);
	s = syms_in_root(bounded, same, tmp_dir);
	assert_int_equal(elf_syms__lookup(s, vaddr + 1, &name, &off), -ENOENT);
	elf_syms__put(s);

	/* At the same path, the debug file of another build: its names would lie. */
	snprintf(note, sizeof(note), "%s/other-build-id.note", tmp_dir);
	f = fopen(note, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(other_id, 1, sizeof(other_id), f), sizeof(other_id));
	fclose(f);
	snprintf(extra, sizeof(extra), "--update-section .note.gnu.build-id='%s'", note);
	snprintf(other, sizeof(other), "%s/dbg-other", tmp_dir);
	assert_int_equal(debug_root(other, id, extra), 0);
	s = syms_in_root(bounded, same, other);
	assert_int_equal(elf_syms__lookup(s, vaddr + 1, &name, &off), -ENOENT);
	assert_string_equal(elf_syms__build_id(s), id);
	elf_syms__put(s);
}

static void test_replaced_file_is_reloaded_and_unchanged_one_is_cached(void **state)
{
	struct bounded *bounded = *state;
	struct elf_cache *c = elf_cache__new(bounded, 8);
	struct elf_syms *a, *b, *d;
	char path[PATH_MAX], cmd[PATH_MAX * 3];
	uint64_t vaddr = vaddr_in_exe((void *)&gp_test_target_fn), off;
	const char *name;
	int root = open("/", O_PATH | O_DIRECTORY);

	if (!exe_stripped[0])
		SKIP_BECAUSE("objcopy could not strip a copy of the test binary (binutils)");
	snprintf(path, sizeof(path), "%s/replaced", tmp_dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", exe_copy, path);
	assert_int_equal(run(cmd), 0);
	assert_int_equal(elf_cache__get(c, root, path, &a), 0);
	assert_int_equal(elf_cache__get(c, root, path, &b), 0);
	assert_ptr_equal(a, b);
	elf_syms__put(b);
	/* Replaced by rename: a new inode. */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.new' && mv '%s.new' '%s'", exe_stripped, path,
		 path, path);
	assert_int_equal(run(cmd), 0);
	assert_int_equal(elf_cache__get(c, root, path, &b), 0);
	assert_ptr_not_equal(a, b);
	assert_int_equal(elf_syms__lookup(b, vaddr, &name, &off), -ENOENT);
	/* The old reference stays valid for whoever holds it. */
	assert_int_equal(elf_syms__lookup(a, vaddr, &name, &off), 0);
	/* Rewritten in place: same inode, new size and mtime. */
	snprintf(cmd, sizeof(cmd), "cat '%s' > '%s'", exe_copy, path);
	assert_int_equal(run(cmd), 0);
	assert_int_equal(elf_cache__get(c, root, path, &d), 0);
	assert_int_equal(elf_syms__lookup(d, vaddr, &name, &off), 0);
	assert_string_equal(name, "gp_test_target_fn");
	elf_syms__put(a);
	elf_syms__put(b);
	elf_syms__put(d);
	elf_cache__destroy(c);
	close(root);
}

typedef int (*open_fn)(struct bounded *, int, const char *, int *);

static void check_fake_root(struct bounded *bounded, open_fn fn)
{
	char root[PATH_MAX], p[PATH_MAX * 2];
	static const char *escapes[] = {
		"/lib/passwd",          /* lib -> /etc (absolute: means <root>/etc) */
		"lib/passwd",
		"/up/passwd",           /* up -> ../../../../../../etc */
		"/../../../../etc/passwd",
		"/passwd",              /* passwd -> /etc/passwd */
		"/loop/x",              /* loop -> loop */
		"/real",                /* a directory, not a file */
	};
	struct stat st_in, st_got;
	size_t i;
	int rfd, fd;

	snprintf(root, sizeof(root), "%s/root", tmp_dir);
	for (i = 0; i < sizeof(escapes) / sizeof(*escapes); i++) {
		rfd = open(root, O_PATH | O_DIRECTORY);
		assert_true(rfd >= 0);
		fd = -1;
		if (fn(bounded, rfd, escapes[i], &fd) == 0)
			fail_msg("opened %s outside the root (fd %d)", escapes[i], fd);
		close(rfd);
	}
	/* Links that stay inside resolve as the container would see them. */
	rfd = open(root, O_PATH | O_DIRECTORY);
	snprintf(p, sizeof(p), "%s/real/lib.so", root);
	assert_int_equal(stat(p, &st_in), 0);
	assert_int_equal(fn(bounded, rfd, "/inlink/lib.so", &fd), 0);
	assert_int_equal(fstat(fd, &st_got), 0);
	assert_int_equal(st_got.st_ino, st_in.st_ino);
	close(fd);
	assert_int_equal(fn(bounded, rfd, "/real/../inlink/./lib.so", &fd), 0);
	close(fd);
	assert_int_equal(fn(bounded, rfd, "/rel/lib.so", &fd), 0);
	close(fd);
	close(rfd);
}

static int open_in_root(struct bounded *bounded, int root_fd, const char *path, int *ret_fd)
{
	return proc__open_file_at(bounded, 0, root_fd, path, NULL, ret_fd);
}

/* The kernels without openat2: the walk, then the same checks as above. */
static int walk_in_root(struct bounded *bounded, int root_fd, const char *path, int *ret_fd)
{
	int pfd = proc__root_walk(root_fd, path, O_PATH), err;
	struct stat st;

	if (pfd < 0)
		return pfd;
	err = fstat(pfd, &st) ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (!err) {
		char self[64];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		*ret_fd = open(self, O_RDONLY | O_NOCTTY);
		err = *ret_fd < 0 ? -errno : 0;
	}
	close(pfd);
	return err;
}

static void test_symlinks_out_of_the_root_are_not_followed(void **state)
{
	check_fake_root(*state, open_in_root);
}

static void test_symlinks_out_of_the_root_are_not_followed_by_the_fallback(void **state)
{
	check_fake_root(*state, walk_in_root);
}

static void test_elf_cache_refuses_a_link_out_of_the_root(void **state)
{
	struct bounded *bounded = *state;
	struct elf_cache *c = elf_cache__new(bounded, 4);
	struct elf_syms *s;
	char root[PATH_MAX], cmd[PATH_MAX * 3];
	int rfd;

	/* A link to a real ELF outside: must not be loaded through the root. */
	snprintf(root, sizeof(root), "%s/root", tmp_dir);
	snprintf(cmd, sizeof(cmd), "ln -sfn '%s' '%s/outside_elf'", exe_copy, root);
	assert_int_equal(run(cmd), 0);
	rfd = open(root, O_PATH | O_DIRECTORY);
	assert_int_not_equal(elf_cache__get(c, rfd, "/outside_elf", &s), 0);
	assert_int_equal(elf_cache__get(c, rfd, "/inlink/lib.so", &s), 0);
	assert_true(elf_syms__count(s) > 0);
	elf_syms__put(s);
	close(rfd);
	elf_cache__destroy(c);
}

static uint8_t *read_file(const char *path, size_t *ret_len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

/* Loads a mutated image: any result but a crash or a leak is acceptable. */
static void load_hostile(const uint8_t *img, size_t len)
{
	struct elf_syms *s;
	const char *name;
	uint64_t off, v;

	if (elf_syms__load_mem(img, len, &s) == 0) {
		elf_syms__lookup(s, 0x1000, &name, &off);
		elf_syms__file_to_vaddr(s, 0x1000, &v);
		assert_true(strlen(elf_syms__build_id(s)) <= 128);
		elf_syms__put(s);
	}
}

static void test_hostile_elf_images_are_refused_or_bounded(void **state)
{
	size_t len, i;
	uint8_t *img = read_file(exe_copy, &len), *m = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)m;
	Elf64_Shdr *sh;

	assert_true(len > sizeof(*eh));
	/* Truncations at every header boundary. */
	for (i = 0; i < 256 && i < len; i += 7)
		load_hostile(img, i);
	load_hostile(img, len / 2);
	/* Section headers past the end, and a huge count. */
	memcpy(m, img, len);
	eh->e_shoff = UINT64_MAX - 8;
	load_hostile(m, len);
	memcpy(m, img, len);
	eh->e_shnum = 0xffff;
	load_hostile(m, len);
	/* Every section claiming 2^32 entries of 2^40 bytes, then offsets outside. */
	memcpy(m, img, len);
	for (i = 0; i < eh->e_shnum; i++) {
		sh = (Elf64_Shdr *)(m + eh->e_shoff + i * sizeof(*sh));
		sh->sh_size = (uint64_t)1 << 40;
	}
	load_hostile(m, len);
	memcpy(m, img, len);
	for (i = 0; i < eh->e_shnum; i++) {
		sh = (Elf64_Shdr *)(m + eh->e_shoff + i * sizeof(*sh));
		sh->sh_offset = len - 1;
		sh->sh_link = 0xfffffff0u;
	}
	load_hostile(m, len);
	/* Random bit flips over the whole image. */
	srand(7);
	for (i = 0; i < 40; i++) {
		size_t k;

		memcpy(m, img, len);
		for (k = 0; k < 64; k++)
			m[(size_t)rand() % 4096 % len] ^= (uint8_t)(1u << (rand() % 8));
		load_hostile(m, len);
	}
	/* Not an ELF at all. */
	load_hostile((const uint8_t *)"\x7f" "ELF", 4);
	load_hostile((const uint8_t *)"hello", 5);
	free(m);
	free(img);
}

struct img_sym {
	const char *name;
	uint64_t addr, size;
	int bind;
};

/*
 * An ELF image holding the n function symbols given, in that order: ELF
 * header, .symtab, .strtab (names in the same order), section headers.
 */
static uint8_t *symbols_image(const struct img_sym *syms, size_t n, size_t *ret_len,
			      size_t *ret_strtab)
{
	size_t sym_off = sizeof(Elf64_Ehdr), str_off = sym_off + (n + 1) * sizeof(Elf64_Sym);
	size_t str_len = 1, sh_off, len, i, at = 1;
	uint8_t *img;
	Elf64_Ehdr *eh;
	Elf64_Sym *sym;
	Elf64_Shdr *sh;

	for (i = 0; i < n; i++)
		str_len += strlen(syms[i].name) + 1;
	sh_off = str_off + str_len;
	len = sh_off + 3 * sizeof(Elf64_Shdr);
	img = calloc(1, len);
	assert_non_null(img);
	eh = (Elf64_Ehdr *)img;
	sym = (Elf64_Sym *)(img + sym_off);
	sh = (Elf64_Shdr *)(img + sh_off);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shoff = sh_off;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	for (i = 0; i < n; i++) {
		memcpy(img + str_off + at, syms[i].name, strlen(syms[i].name));
		sym[i + 1] = (Elf64_Sym){ .st_name = (uint32_t)at,
					  .st_info = ELF64_ST_INFO(syms[i].bind, STT_FUNC),
					  .st_shndx = 1, .st_value = syms[i].addr,
					  .st_size = syms[i].size };
		at += strlen(syms[i].name) + 1;
	}
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = sym_off, .sh_link = 2,
			      .sh_size = (n + 1) * sizeof(Elf64_Sym), .sh_entsize = sizeof(Elf64_Sym) };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = str_len };
	*ret_len = len;
	if (ret_strtab)
		*ret_strtab = str_off;
	return img;
}

/*
 * An ELF image of n functions at 0x1000 + 16 i, 16 bytes each, whose names
 * ("fn_<i>_" padded with 'x' to name_len bytes) make a large string table.
 */
static uint8_t *many_names_image(size_t n, size_t name_len, size_t *ret_len, size_t *ret_strtab)
{
	struct img_sym *syms = calloc(n, sizeof(*syms));
	char *names = malloc(n * (name_len + 1));
	uint8_t *img;
	size_t i;

	assert_non_null(syms);
	assert_non_null(names);
	for (i = 0; i < n; i++) {
		char *name = names + i * (name_len + 1);
		int w = snprintf(name, name_len + 1, "fn_%zu_", i);

		memset(name + w, 'x', name_len - (size_t)w);
		name[name_len] = 0;
		syms[i] = (struct img_sym){ name, 0x1000 + 16 * i, 16, STB_GLOBAL };
	}
	img = symbols_image(syms, n, ret_len, ret_strtab);
	free(names);
	free(syms);
	return img;
}

static void expect_name(struct elf_syms *s, size_t i, size_t name_len)
{
	char want[32];
	const char *name;
	uint64_t off;

	snprintf(want, sizeof(want), "fn_%zu_", i);
	assert_int_equal(elf_syms__lookup(s, 0x1000 + 16 * i + 3, &name, &off), 0);
	assert_int_equal(off, 3);
	assert_int_equal(strlen(name), name_len);
	assert_memory_equal(name, want, strlen(want));
}

/*
 * 20,000 functions with 1,000-byte names (a 20 MB string table, as C++
 * libraries have): the loader holds their addresses, not their names.
 */
static void test_function_names_stay_in_the_file(void **state)
{
	size_t n = 20000, name_len = 1000, len, str_off, i;
	uint8_t *img = many_names_image(n, name_len, &len, &str_off);
	struct elf_syms *s;

	assert_int_equal(elf_syms__load_mem(img, len, &s), 0);
	assert_int_equal(elf_syms__count(s), n);
	/* In both directions, so that names sharing a cache slot evict each other. */
	for (i = 0; i < n; i += 7)
		expect_name(s, i, name_len);
	for (i = n; i-- > 0;)
		if (i % 13 == 0)
			expect_name(s, i, name_len);
	assert_true(elf_syms__bytes(s) < n * 16 + 512 * 1024);
	elf_syms__put(s);
	free(img);
}

static void expect_named(struct elf_syms *s, uint64_t addr, const char *want)
{
	const char *name;
	uint64_t off;

	assert_int_equal(elf_syms__lookup(s, addr, &name, &off), 0);
	assert_string_equal(name, want);
	assert_int_equal(off, 0);
}

/*
 * Symbols in no order, at addresses that differ in every byte (the sort
 * goes by the address's digits, low to high, and skips a digit all share),
 * with aliases: of the names at one address the global one is kept, then
 * the larger, then the first in the string table.
 */
static void test_symbols_are_found_whatever_their_order_and_aliases(void **state)
{
	enum { N = 3000 };
	static char names[N][24];
	struct img_sym syms[N + 7];
	struct elf_syms *s;
	size_t len, i, n = 0;
	uint8_t *img;

	for (i = 0; i < N; i++) {
		/* A permutation of 0..N-1 spread over 48 bits: every byte differs somewhere. */
		uint64_t k = (i * 1237) % N;

		snprintf(names[i], sizeof(names[i]), "f%llu", (unsigned long long)k);
		syms[n++] = (struct img_sym){ names[i], 0x10000 + (k << 32) + (k << 12) + 64 * k, 32,
					      STB_GLOBAL };
	}
	syms[n++] = (struct img_sym){ "b_local", 0x500, 64, STB_LOCAL };
	syms[n++] = (struct img_sym){ "z_global_unsized", 0x500, 0, STB_GLOBAL };
	syms[n++] = (struct img_sym){ "c_global_big", 0x500, 48, STB_GLOBAL };
	syms[n++] = (struct img_sym){ "a_global_small", 0x500, 16, STB_GLOBAL };
	syms[n++] = (struct img_sym){ "first_in_strtab", 0x800, 16, STB_WEAK };
	syms[n++] = (struct img_sym){ "second_in_strtab", 0x800, 16, STB_WEAK };
	syms[n++] = (struct img_sym){ "only_local", 0x900, 16, STB_LOCAL };
	img = symbols_image(syms, n, &len, NULL);
	assert_int_equal(elf_syms__load_mem(img, len, &s), 0);
	assert_int_equal(elf_syms__count(s), N + 3);
	for (i = 0; i < N; i++)
		expect_named(s, syms[i].addr, names[i]);
	expect_named(s, 0x500, "c_global_big");
	expect_named(s, 0x800, "first_in_strtab");
	expect_named(s, 0x900, "only_local");
	elf_syms__put(s);
	free(img);
}

/* libc's file, and where it is loaded: vaddr = address - base (a shared object's vaddrs start at 0). */
static const char *libc_file(uintptr_t *ret_base)
{
	Dl_info info;

	assert_true(dladdr((void *)gnu_get_libc_version, &info) && info.dli_fname);
	*ret_base = (uintptr_t)info.dli_fbase;
	return info.dli_fname;
}

/*
 * A few exported names, through .gnu.hash: the values the dynamic linker
 * resolved; a name not there is 0. The same file with its hash table
 * garbled (every byte after the header, then the header too): nothing
 * wrong comes back, and the lookup that scans still finds every name.
 */
static void test_exported_names_are_found_through_the_hash_table_and_a_lying_one_is_survived(void **state)
{
	static const char *const names[] = { "gnu_get_libc_version", "getauxval", "sysconf",
					      "confstr", "no_such_symbol_in_libc" };
	enum { N = sizeof(names) / sizeof(names[0]) };
	uint64_t got[N], scanned[N], want[N] = { 0 };
	char copy[] = "/tmp/gpuprobe-libc.XXXXXX";
	const char *path;
	Elf64_Shdr sh;
	Elf64_Ehdr eh;
	uintptr_t base;
	int fd, out;

	void *libc;

	path = libc_file(&base);
	libc = dlopen(path, RTLD_NOW | RTLD_NOLOAD); /* its own definitions, not a sanitizer's */
	assert_non_null(libc);
	for (size_t k = 0; k + 1 < N; k++)
		want[k] = (uintptr_t)dlsym(libc, names[k]) - base;
	dlclose(libc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(elf_symtab__lookup_hashed(fd, names, N, ELF_TYPE(STT_FUNC), got), N - 1);
	for (size_t k = 0; k < N; k++)
		assert_int_equal(got[k], want[k]);
	/* A copy whose .gnu.hash lies. */
	out = mkstemp(copy);
	assert_true(out >= 0);
	{
		char buf[65536];
		ssize_t r;
		off_t at = 0;

		while ((r = pread(fd, buf, sizeof(buf), at)) > 0) {
			assert_int_equal(pwrite(out, buf, (size_t)r, at), r);
			at += r;
		}
	}
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		assert_int_equal(pread(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + (uint64_t)i * sizeof(sh))),
				 sizeof(sh));
		if (sh.sh_type != SHT_GNU_HASH)
			continue;
		for (int round = 0; round < 2; round++) {
			uint64_t from = round ? 0 : 16;

			srand(7 + round);
			for (uint64_t b = from; b < sh.sh_size; b++) {
				unsigned char x = (unsigned char)rand();

				assert_int_equal(pwrite(out, &x, 1, (off_t)(sh.sh_offset + b)), 1);
			}
			assert_true(elf_symtab__lookup_hashed(out, names, N, ELF_TYPE(STT_FUNC), got) >= 0);
			for (size_t k = 0; k < N; k++)
				assert_true(got[k] == 0 || got[k] == want[k]);
			assert_int_equal(elf_symtab__lookup_names(out, names, N, ELF_TYPE(STT_FUNC), scanned,
								  NULL), N - 1);
			for (size_t k = 0; k < N; k++)
				assert_int_equal(scanned[k], want[k]);
		}
	}
	close(out);
	unlink(copy);
	close(fd);
}

/* A file cut short after loading: its names are gone, the lookup says so. */
static void test_names_of_a_file_truncated_after_loading_are_not_found(void **state)
{
	size_t len, str_off;
	uint8_t *img = many_names_image(100, 40, &len, &str_off);
	char path[PATH_MAX];
	struct elf_syms *s;
	const char *name;
	uint64_t off;
	int fd;

	snprintf(path, sizeof(path), "%s/names_cut", tmp_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, len), (ssize_t)len);
	assert_int_equal(elf_syms__load_fd(fd, &s), 0);
	close(fd);
	expect_name(s, 5, 40);
	assert_int_equal(truncate(path, (off_t)str_off + 1 + 50 * 41), 0);
	expect_name(s, 5, 40);  /* cached */
	expect_name(s, 49, 40); /* still in the file */
	assert_int_equal(elf_syms__lookup(s, 0x1000 + 16 * 60, &name, &off), -ENOENT);
	elf_syms__put(s);
	unlink(path);
	free(img);
}

static void test_proc_maps_keep_executable_mappings_with_their_kinds(void **state)
{
	static const char text[] =
		"55d0c0000000-55d0c0001000 r--p 00000000 fd:01 123 /usr/bin/app\n"
		"55d0c0001000-55d0c0005000 r-xp 00001000 fd:01 123 /usr/bin/app\n"
		"7f0000000000-7f0000010000 r-xp 00002000 08:11 456 /opt/my lib/libx.so (deleted)\n"
		"7f0000010000-7f0000020000 r-xs 00000000 00:01 789 /memfd:jit (deleted)\n"
		"7f0000020000-7f0000030000 rwxp 00000000 00:00 0 \n"
		"7f0000030000-7f0000031000 r-xp 00000000 00:00 0                          [vdso]\n"
		"garbage line\n"
		"7f0000040000-7f0000030000 r-xp 00000000 00:00 0 backwards\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
	struct proc_maps *pm;
	const struct proc_map *m;
	uint64_t off;
	size_t idx;

	assert_int_equal(proc_maps__parse(text, sizeof(text) - 1, &pm), 0);
	assert_int_equal(proc_maps__count(pm), 6);
	assert_int_equal(proc_maps__dropped(pm), 2);
	m = proc_maps__at(pm, 0);
	assert_int_equal(m->kind, PROC_MAP_FILE);
	assert_int_equal(m->inode, 123);
	m = proc_maps__at(pm, 1);
	assert_string_equal(m->path, "/opt/my lib/libx.so");
	assert_true(m->deleted);
	assert_int_equal(m->dev, makedev(8, 0x11));
	assert_int_equal(proc_maps__at(pm, 2)->kind, PROC_MAP_MEMFD);
	assert_int_equal(proc_maps__at(pm, 3)->kind, PROC_MAP_ANON);
	assert_int_equal(proc_maps__at(pm, 4)->kind, PROC_MAP_SPECIAL);
	assert_string_equal(proc_maps__at(pm, 4)->path, "[vdso]");
	assert_int_equal(proc_maps__find(pm, 0x55d0c0001234, &idx, &off), 0);
	assert_int_equal(idx, 0);
	assert_int_equal(off, 0x1234);
	assert_int_equal(proc_maps__find(pm, 0x55d0c0000fff, &idx, &off), -ENOENT);
	assert_int_equal(proc_maps__find(pm, 0x7f0000000010, &idx, &off), 0);
	assert_int_equal(off, 0x2010);
	proc_maps__destroy(pm);
	assert_int_equal(proc_maps__parse("", 0, &pm), 0);
	assert_int_equal(proc_maps__count(pm), 0);
	proc_maps__destroy(pm);
}

/*
 * A process chooses how much text its maps are (mappings by the thousand,
 * paths of PATH_MAX): the table keeps the executable mappings' paths only,
 * and says what it holds.
 */
static void test_proc_maps_hold_only_the_executable_mappings_paths(void **state)
{
	enum { LINES = 2000, PATH_LEN = 1000 };
	size_t cap = (size_t)LINES * (PATH_LEN + 128), len = 0;
	char *text = malloc(cap), *name = malloc(PATH_LEN + 1);
	struct proc_maps *pm;

	assert_non_null(text);
	assert_non_null(name);
	memset(name, 'p', PATH_LEN);
	name[0] = '/';
	name[PATH_LEN] = '\0';
	for (int i = 0; i < LINES; i++)
		len += (size_t)snprintf(text + len, cap - len, "%x000-%x000 %s 00000000 fd:01 %d %s\n",
					0x10000 + 2 * i, 0x10001 + 2 * i, i ? "rw-p" : "r-xp", i + 1,
					name);
	assert_int_equal(proc_maps__parse(text, len, &pm), 0);
	assert_int_equal(proc_maps__count(pm), 1);
	assert_string_equal(proc_maps__at(pm, 0)->path, name);
	assert_true(proc_maps__bytes(pm) >= PATH_LEN);
	assert_true(proc_maps__bytes(pm) < 64 * 1024); /* the text was 2 MB */
	proc_maps__destroy(pm);
	free(text);
	free(name);
}

static void test_cxx_names_are_demangled_and_others_pass_through(void **state)
{
	char *out;

	assert_int_equal(demangle__cxx("_Z6kernelPfi", &out), 0);
	assert_string_equal(out, "kernel(float*, int)");
	free(out);
	assert_int_equal(demangle__cxx("main", &out), -EINVAL);
	assert_int_equal(demangle__cxx("_Z!!garbage", &out), -EINVAL);
	out = demangle__or_copy("cudaLaunchKernel");
	assert_string_equal(out, "cudaLaunchKernel");
	free(out);
	out = demangle__or_copy("_ZN3foo3barIiEEvT_");
	assert_string_equal(out, "void foo::bar<int>(int)");
	free(out);
}

/* The bounded calls every test's opens go through, as the loader's one (each test's *state). */
static int setup(void **state)
{
	char cmd[PATH_MAX * 4], root[PATH_MAX];
	int rc = 0;

	*state = bounded__new();
	if (!*state)
		return -1;

	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/gp_sym.XXXXXX");
	if (!mkdtemp(tmp_dir))
		return -1;
	snprintf(exe_copy, sizeof(exe_copy), "%s/exe", tmp_dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), exe_copy);
	rc |= system(cmd);
	snprintf(exe_stripped, sizeof(exe_stripped), "%s/exe.stripped", tmp_dir);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-all '%s' '%s' 2>/dev/null", exe_copy,
		 exe_stripped);
	if (system(cmd) != 0) {
		fprintf(stderr, "objcopy not usable: skipping the stripped-file tests\n");
		exe_stripped[0] = '\0';
	}
	snprintf(root, sizeof(root), "%s/root", tmp_dir);
	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir -p '%s/real'; cp '%s' '%s/real/lib.so'; cd '%s';"
		 "ln -s /etc lib; ln -s ../../../../../../etc up; ln -s /etc/passwd passwd;"
		 "ln -s loop loop; ln -s /real inlink; ln -s real rel",
		 root, exe_copy, root, root);
	rc |= system(cmd);
	return rc ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	bounded__free(*state);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * A sparse file whose ELF header claims more section or program headers
 * than the loader reads (the counts in section 0, as past 0xff00 sections)
 * is refused from its header alone, before libelf reads what it claims.
 */
static int sparse_elf(unsigned shnum0, unsigned phnum, unsigned sh_info, uint64_t size)
{
	char path[] = "/tmp/gp-sparse-elf-XXXXXX";
	Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
				       EV_CURRENT },
			  .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			  .e_ehsize = sizeof(Elf64_Ehdr), .e_shoff = sizeof(Elf64_Ehdr),
			  .e_shentsize = sizeof(Elf64_Shdr), .e_phentsize = sizeof(Elf64_Phdr),
			  .e_phoff = sizeof(Elf64_Ehdr), .e_phnum = (Elf64_Half)phnum };
	Elf64_Shdr sh0 = { .sh_size = shnum0, .sh_info = sh_info };
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(pwrite(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	assert_int_equal(pwrite(fd, &sh0, sizeof(sh0), sizeof(eh)), (ssize_t)sizeof(sh0));
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static void test_an_elf_claiming_too_many_headers_is_refused_from_its_header(void **state)
{
	struct elf_syms *syms;
	uint64_t vaddr;
	const char *name = "f";
	int fd;

	(void)state;
	/* 70,000 sections (e_shnum 0: in section 0), all inside the file */
	fd = sparse_elf(70000, 0, 0, sizeof(Elf64_Ehdr) + 70000ull * sizeof(Elf64_Shdr));
	assert_int_equal(elf_symtab__check_headers(fd, sizeof(Elf64_Ehdr) + 70000ull * sizeof(Elf64_Shdr)),
			 -E2BIG);
	assert_int_equal(elf_syms__load_fd(fd, &syms), -E2BIG);
	assert_int_equal(elf_symtab__lookup_names(fd, &name, 1, ELF_TYPE(STT_FUNC), &vaddr, NULL),
			 -ENOEXEC);
	close(fd);
	/* 5,000 program headers (PN_XNUM: in section 0's sh_info) */
	fd = sparse_elf(1, PN_XNUM, 5000, 1 << 20);
	assert_int_equal(elf_syms__load_fd(fd, &syms), -E2BIG);
	close(fd);
	/* a section header table past the file's end */
	fd = sparse_elf(60000, 0, 0, 4096);
	assert_int_equal(elf_syms__load_fd(fd, &syms), -ENOEXEC);
	close(fd);
	/* what it may read, it reads: 100 sections inside the file pass the check */
	fd = sparse_elf(100, 0, 0, 1 << 20);
	assert_int_equal(elf_symtab__check_headers(fd, 1 << 20), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_elf_claiming_too_many_headers_is_refused_from_its_header),
		cmocka_unit_test(test_function_of_this_binary_is_named_with_build_id),
		cmocka_unit_test(test_cfi_tables_held_count_against_their_tenants_share),
		cmocka_unit_test(test_libc_function_is_named_as_the_dynamic_linker_names_it),
		cmocka_unit_test(test_address_past_a_symbols_size_gives_lib_plus_offset),
		cmocka_unit_test(test_address_in_no_mapping_is_not_found),
		cmocka_unit_test(test_python_frames_come_from_the_perf_map),
		cmocka_unit_test(test_a_tenant_owing_its_load_budget_loads_nothing_new),
		cmocka_unit_test(test_per_process_handles_share_one_cache_and_miss_cleanly),
		cmocka_unit_test(test_maps_rereads_of_one_process_are_rate_limited),
		cmocka_unit_test(test_stripped_copy_has_no_names_but_the_same_build_id),
		cmocka_unit_test(test_a_stripped_file_takes_names_from_its_debug_file_of_the_same_build),
		cmocka_unit_test(test_replaced_file_is_reloaded_and_unchanged_one_is_cached),
		cmocka_unit_test(test_symlinks_out_of_the_root_are_not_followed),
		cmocka_unit_test(test_symlinks_out_of_the_root_are_not_followed_by_the_fallback),
		cmocka_unit_test(test_elf_cache_refuses_a_link_out_of_the_root),
		cmocka_unit_test(test_hostile_elf_images_are_refused_or_bounded),
		cmocka_unit_test(test_function_names_stay_in_the_file),
		cmocka_unit_test(test_symbols_are_found_whatever_their_order_and_aliases),
		cmocka_unit_test(test_names_of_a_file_truncated_after_loading_are_not_found),
		cmocka_unit_test(test_exported_names_are_found_through_the_hash_table_and_a_lying_one_is_survived),
		cmocka_unit_test(test_proc_maps_keep_executable_mappings_with_their_kinds),
		cmocka_unit_test(test_proc_maps_hold_only_the_executable_mappings_paths),
		cmocka_unit_test(test_many_processes_maps_share_one_bound),
		cmocka_unit_test(test_cxx_names_are_demangled_and_others_pass_through),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
