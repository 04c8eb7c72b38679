/* SPDX-License-Identifier: MIT */
/*
 * Tests for user/unwind: CFI tables built from hand-assembled .eh_frame and
 * .debug_frame bytes in synthetic ELF images, hostile CFI, walks over fake
 * stacks for each way a walk can end, and real walks in this process: a
 * chain of functions without frame pointers (assembly below, with the CFI a
 * compiler emits for such code) captured from the inside, unwound through
 * cmocka, main and libc to _start, and the same from a pthread to clone3.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "user/symbolize/elf_syms.h"
#include "user/proc/proc_maps.h"
#include "tests/elf_image.h"
#include "user/unwind/cfi.h"
#include "user/unwind/unwind.h"
#include "user/unwind/memo.h"
#include "user/session/stacks.h"
#include "user/session/target.h"
#include "user/space/space.h"
#include "user/symbolize/symbolize.h"
#include "user/util/bounded.h"

/* ---------------------------------------------------------------- a chain without frame pointers */

struct gp_capture {
	__u64 ip, sp, bp;   /* offsets 0, 8, 16: written by gp_uw_leaf */
	__u64 stack_end;
	__u32 max_len, len;
	__u8 *buf;
	int done;
};

_Static_assert(offsetof(struct gp_capture, bp) == 16, "gp_uw_leaf writes ip/sp/bp at 0/8/16");

/*
 * gp_uw_outer -> gp_uw_middle -> gp_uw_inner -> gp_uw_leaf, then C to copy
 * the stack. What each one exercises:
 *   outer:  push rbp (as a plain callee-saved register) + push rbx + locals;
 *           clobbers rbp, so the C caller's CFA (rbp-based) needs it restored.
 *   middle: locals and an early return under remember_state/restore_state;
 *           its call comes after restore_state.
 *   inner:  ends with its call (as a call to a noreturn function does): the
 *           return address is the first byte of the next FDE, whose rule is
 *           different; only a lookup at ra - 1 finds inner's own rule.
 *   leaf:   an rbp frame with a realigned rsp (CFA from rbp only), captures
 *           rip/rsp/rbp and calls gp_uw_copy_stack.
 * None keeps a frame pointer chain: a frame-pointer walk skips all four.
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl gp_uw_outer\n.hidden gp_uw_outer\n.type gp_uw_outer, @function\n"
	"gp_uw_outer:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbp, -16\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbx, -24\n"
	"	sub $0x58, %rsp\n"
	"	.cfi_adjust_cfa_offset 0x58\n"
	".globl gp_uw_outer_body\n.hidden gp_uw_outer_body\n"
	"gp_uw_outer_body:\n"
	"	movabs $0x5a5a5a5a5a5a5a5a, %rbp\n"
	"	call gp_uw_middle\n"
	".globl gp_uw_outer_ret\n.hidden gp_uw_outer_ret\n"
	"gp_uw_outer_ret:\n"
	"	add $0x58, %rsp\n"
	"	.cfi_adjust_cfa_offset -0x58\n"
	"	pop %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbx\n"
	"	pop %rbp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_restore %rbp\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size gp_uw_outer, .-gp_uw_outer\n"

	".p2align 4\n"
	".globl gp_uw_middle\n.hidden gp_uw_middle\n.type gp_uw_middle, @function\n"
	"gp_uw_middle:\n"
	"	.cfi_startproc\n"
	"	sub $0x128, %rsp\n"
	"	.cfi_adjust_cfa_offset 0x128\n"
	"	test %rdi, %rdi\n"
	"	jne 1f\n"
	"	.cfi_remember_state\n"
	"	add $0x128, %rsp\n"
	"	.cfi_adjust_cfa_offset -0x128\n"
	"	ret\n"
	"	.cfi_restore_state\n"
	"1:	call gp_uw_inner\n"
	".globl gp_uw_middle_ret\n.hidden gp_uw_middle_ret\n"
	"gp_uw_middle_ret:\n"
	"	add $0x128, %rsp\n"
	"	.cfi_adjust_cfa_offset -0x128\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size gp_uw_middle, .-gp_uw_middle\n"

	".p2align 4\n"
	".globl gp_uw_inner\n.hidden gp_uw_inner\n.type gp_uw_inner, @function\n"
	"gp_uw_inner:\n"
	"	.cfi_startproc\n"
	"	push %r12\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %r12, -16\n"
	"	sub $0x40, %rsp\n"
	"	.cfi_adjust_cfa_offset 0x40\n"
	"	call gp_uw_leaf\n"
	"	.cfi_endproc\n"
	".size gp_uw_inner, .-gp_uw_inner\n"
	".globl gp_uw_inner_tail\n.hidden gp_uw_inner_tail\n.type gp_uw_inner_tail, @function\n"
	"gp_uw_inner_tail:\n"
	"	.cfi_startproc\n"
	"	add $0x40, %rsp\n"
	"	pop %r12\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size gp_uw_inner_tail, .-gp_uw_inner_tail\n"

	".p2align 4\n"
	".globl gp_uw_leaf\n.hidden gp_uw_leaf\n.type gp_uw_leaf, @function\n"
	"gp_uw_leaf:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	sub $0x30, %rsp\n"
	"	and $-32, %rsp\n"
	"	lea gp_uw_leaf_capture(%rip), %rax\n"
	"	mov %rax, 0(%rdi)\n"
	"	mov %rsp, 8(%rdi)\n"
	"	mov %rbp, 16(%rdi)\n"
	".globl gp_uw_leaf_capture\n.hidden gp_uw_leaf_capture\n"
	"gp_uw_leaf_capture:\n"
	"	call gp_uw_copy_stack\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size gp_uw_leaf, .-gp_uw_leaf\n");

void gp_uw_outer(struct gp_capture *c);
extern const char gp_uw_outer_body[], gp_uw_outer_ret[], gp_uw_middle_ret[],
	gp_uw_inner_tail[], gp_uw_leaf_capture[];
void gp_uw_copy_stack(struct gp_capture *c);

/* Reads other frames of the live stack: ASan's redzones are not for us. */
__attribute__((noinline, used, visibility("hidden"), no_sanitize("address")))
void gp_uw_copy_stack(struct gp_capture *c)
{
	const volatile __u8 *src = (const volatile __u8 *)(uintptr_t)c->sp;
	__u64 avail = c->stack_end > c->sp ? c->stack_end - c->sp : 0;
	__u32 i, len = avail < c->max_len ? (__u32)avail : c->max_len;

	for (i = 0; i < len; i++)
		c->buf[i] = src[i];
	c->len = len;
}

static __u64 stack_end_of(__u64 addr)
{
	char line[512];
	unsigned long long s, e;
	FILE *f = fopen("/proc/self/maps", "r");
	__u64 end = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && addr >= s && addr < e)
			end = e;
	fclose(f);
	assert_true(end != 0);
	return end;
}

/* C with a frame pointer above the chain; not a tail call, so it stays on the stack. */
__attribute__((noinline)) static void run_chain(struct gp_capture *c)
{
	int here;

	c->stack_end = stack_end_of((__u64)(uintptr_t)&here);
	gp_uw_outer(c);
	c->done = 1;
}

/* ---------------------------------------------------------------- this process's mappings */

struct test_map {
	__u64 start, end, bias;
	struct cfi_table *cfi;   /* NULL: mapped, no CFI */
	struct elf_syms *syms;
	char path[256];
};

struct test_maps {
	struct test_map m[512];
	size_t n;
};

static struct test_maps *test_maps__load(void)
{
	struct test_maps *tm = calloc(1, sizeof(*tm));
	struct proc_maps *pm;
	const struct proc_map *m;
	struct test_map *t;
	uint64_t v;
	size_t i;
	int fd;

	assert_non_null(tm);
	assert_int_equal(proc_maps__load(getpid(), &pm), 0);
	for (i = 0; i < proc_maps__count(pm) && tm->n < 512; i++) {
		m = proc_maps__at(pm, i);
		t = &tm->m[tm->n++];
		t->start = m->start;
		t->end = m->end;
		snprintf(t->path, sizeof(t->path), "%s", m->path);
		if (m->kind != PROC_MAP_FILE || m->deleted)
			continue;
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (cfi_table__load(fd, &t->cfi))
			t->cfi = NULL;
		if (elf_syms__load_fd(fd, &t->syms) == 0 &&
		    elf_syms__file_to_vaddr(t->syms, m->offset, &v) == 0)
			t->bias = m->start - v;
		close(fd);
	}
	proc_maps__destroy(pm);
	return tm;
}

static void test_maps__free(struct test_maps *tm)
{
	size_t i;

	for (i = 0; i < tm->n; i++) {
		cfi_table__free(tm->m[i].cfi);
		elf_syms__put(tm->m[i].syms);
	}
	free(tm);
}

static const struct test_map *test_maps__find(const struct test_maps *tm, __u64 ip)
{
	size_t i;

	for (i = 0; i < tm->n; i++)
		if (ip >= tm->m[i].start && ip < tm->m[i].end)
			return &tm->m[i];
	return NULL;
}

static int test_maps__lookup(void *ctx, __u64 ip, const struct cfi_table **ret_table,
			     __u64 *ret_bias)
{
	const struct test_map *m = test_maps__find(ctx, ip);

	if (!m)
		return -ENOENT;
	*ret_table = m->cfi;
	*ret_bias = m->bias;
	return 0;
}

/* The function a return address (or pcs[0]) is in, from the file's symbols. */
static const char *test_maps__name(const struct test_maps *tm, __u64 pc, bool is_ra)
{
	const struct test_map *m = test_maps__find(tm, pc - is_ra);
	const char *name;
	uint64_t off;

	if (!m || !m->syms || elf_syms__lookup(m->syms, pc - is_ra - m->bias, &name, &off))
		return "?";
	return name;
}

static bool test_maps__in_libc(const struct test_maps *tm, __u64 pc)
{
	const struct test_map *m = test_maps__find(tm, pc - 1);

	return m && strstr(m->path, "/libc.so.6");
}

static void dump_pcs(const struct test_maps *tm, const __u64 *pcs, int n, enum unwind_stop why)
{
	int i;

	for (i = 0; i < n; i++)
		print_message("  #%d %#llx %s\n", i, (unsigned long long)pcs[i],
			      test_maps__name(tm, pcs[i], i > 0));
	print_message("  [%s]\n", unwind_stop__str(why));
}

#define STACK_COPY (64 * 1024)
static __u8 main_copy[STACK_COPY], thread_copy[STACK_COPY];

/* The four assembly frames and run_chain, exactly. */
static void assert_chain(const struct test_maps *tm, const __u64 *pcs, int n)
{
	assert_true(n >= 5);
	assert_int_equal(pcs[0], (uintptr_t)gp_uw_leaf_capture);
	assert_int_equal(pcs[1], (uintptr_t)gp_uw_inner_tail);
	assert_int_equal(pcs[2], (uintptr_t)gp_uw_middle_ret);
	assert_int_equal(pcs[3], (uintptr_t)gp_uw_outer_ret);
	assert_string_equal(test_maps__name(tm, pcs[4], true), "run_chain");
}

/* ---------------------------------------------------------------- real walks */

static void test_chain_without_frame_pointers_unwinds_through_main_to_start(void **state)
{
	struct gp_capture c = { .max_len = STACK_COPY, .buf = main_copy };
	struct test_maps *tm;
	struct unwind_regs regs;
	struct unwind_stack st;
	enum unwind_stop why;
	__u64 pcs[128];
	int n, i, main_at = -1;

	run_chain(&c);
	assert_int_equal(c.done, 1);
	tm = test_maps__load();
	regs = (struct unwind_regs){ .ip = c.ip, .sp = c.sp, .bp = c.bp };
	st = (struct unwind_stack){ .base = c.sp, .data = c.buf, .len = c.len };
	n = unwind(&regs, &st, test_maps__lookup, tm, pcs, 128, &why);
	dump_pcs(tm, pcs, n, why);
	assert_chain(tm, pcs, n);
	assert_string_equal(test_maps__name(tm, pcs[5], true),
			    "test_chain_without_frame_pointers_unwinds_through_main_to_start");
	for (i = 5; i < n; i++)
		if (!strcmp(test_maps__name(tm, pcs[i], true), "main"))
			main_at = i;
	assert_true(main_at > 5);
	/* __libc_start_call_main and friends, then _start */
	assert_true(main_at + 2 < n);
	assert_true(test_maps__in_libc(tm, pcs[main_at + 1]));
	assert_string_equal(test_maps__name(tm, pcs[n - 1], true), "_start");
	assert_int_equal(why, UNWIND_ROOT);
	test_maps__free(tm);
}

static void *thread_main(void *arg)
{
	run_chain(arg);
	return NULL;
}

static void test_chain_in_a_pthread_unwinds_to_the_thread_start_in_libc(void **state)
{
	struct gp_capture c = { .max_len = STACK_COPY, .buf = thread_copy };
	struct test_maps *tm;
	struct unwind_regs regs;
	struct unwind_stack st;
	enum unwind_stop why;
	pthread_t th;
	__u64 pcs[128];
	int n;

	assert_int_equal(pthread_create(&th, NULL, thread_main, &c), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(c.done, 1);
	tm = test_maps__load();
	regs = (struct unwind_regs){ .ip = c.ip, .sp = c.sp, .bp = c.bp };
	st = (struct unwind_stack){ .base = c.sp, .data = c.buf, .len = c.len };
	n = unwind(&regs, &st, test_maps__lookup, tm, pcs, 128, &why);
	dump_pcs(tm, pcs, n, why);
	assert_chain(tm, pcs, n);
	assert_string_equal(test_maps__name(tm, pcs[5], true), "thread_main");
	/* start_thread, then clone3 whose child side marks the return address undefined */
	assert_true(n >= 8);
	assert_true(test_maps__in_libc(tm, pcs[n - 1]));
	assert_true(test_maps__in_libc(tm, pcs[n - 2]));
	assert_int_equal(why, UNWIND_ROOT);
	test_maps__free(tm);
}

/* test_maps__lookup, counted. */
struct counted {
	struct test_maps *tm;
	unsigned calls;
};

static int counted__lookup(void *ctx, __u64 ip, const struct cfi_table **ret_table,
			   __u64 *ret_bias)
{
	struct counted *c = ctx;

	c->calls++;
	return test_maps__lookup(c->tm, ip, ret_table, ret_bias);
}

/* A memo walk of the capture c: the plain walk's frames and end, exactly. */
static void assert_memo_walk_is_plain(struct counted *cn, struct unwind_memo *memo,
				      const struct gp_capture *c)
{
	struct unwind_regs regs = { .ip = c->ip, .sp = c->sp, .bp = c->bp };
	struct unwind_stack st = { .base = c->sp, .data = c->buf, .len = c->len };
	enum unwind_stop why, plain_why;
	__u64 plain[128], pcs[128];
	unsigned calls = cn->calls;
	int n_plain, n;

	n_plain = unwind(&regs, &st, test_maps__lookup, cn->tm, plain, 128, &plain_why);
	n = unwind_memo_walk(&regs, &st, counted__lookup, cn, memo, pcs, 128, &why);
	assert_int_equal(n, n_plain);
	assert_int_equal(why, plain_why);
	assert_memory_equal(pcs, plain, 8 * (size_t)n);
	print_message("  %d frames, %u lookups\n", n, cn->calls - calls);
}

static void test_a_memo_answers_for_addresses_walked_before_with_the_same_frames(void **state)
{
	static __u8 other_copy[STACK_COPY];
	struct gp_capture c = { .max_len = STACK_COPY, .buf = main_copy };
	struct gp_capture tc = { .max_len = STACK_COPY, .buf = other_copy };
	struct unwind_memo *memo = unwind_memo__new();
	struct counted cn = { .tm = NULL };
	__u64 hits, misses;
	unsigned first;
	pthread_t th;

	assert_non_null(memo);
	run_chain(&c);
	assert_int_equal(pthread_create(&th, NULL, thread_main, &tc), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	cn.tm = test_maps__load();
	/* First walk: every frame looked up (the last step's too). */
	assert_memo_walk_is_plain(&cn, memo, &c);
	first = cn.calls;
	assert_true(first >= 8);
	/* The same stack again: the memo answers for all of it. */
	assert_memo_walk_is_plain(&cn, memo, &c);
	assert_int_equal(cn.calls, first);
	/* A thread's stack through the same chain: only its own frames looked up. */
	assert_memo_walk_is_plain(&cn, memo, &tc);
	assert_true(cn.calls > first && cn.calls - first < first);
	/* Emptied (the maps were read again): looked up afresh, same frames. */
	unwind_memo__reset(memo);
	first = cn.calls;
	assert_memo_walk_is_plain(&cn, memo, &c);
	assert_true(cn.calls - first >= 8);
	/* Every miss was one lookup; the second walk and most of the thread's hit. */
	unwind_memo__stats(memo, &hits, &misses);
	assert_int_equal(misses, cn.calls);
	assert_true(hits >= 12);
	unwind_memo__destroy(memo);
	test_maps__free(cn.tm);
}

/* The next code address after from (by 16) in the memo set of pc. */
static __u64 same_set_after(__u64 pc, __u64 from)
{
	__u64 q = from + 16;

	while (unwind_memo__set_of(q) != unwind_memo__set_of(pc))
		q += 16;
	return q;
}

/*
 * Two addresses of one set are both kept (a walk through both, direct-
 * mapped, missed twice every time); a third replaces the one used less
 * recently; a second answer for an address replaces its own.
 */
static void test_the_memo_keeps_two_addresses_per_set_the_recent_ones(void **state)
{
	struct unwind_memo *memo = unwind_memo__new();
	struct cfi_rule r1 = { .cfa_base = CFI_BASE_RSP, .cfa_off = 16, .ra_off = -8 };
	struct cfi_rule r2 = { .cfa_base = CFI_BASE_RBP, .cfa_off = 16, .ra_off = -8 }, got;
	__u64 a = 0x7f0000401230, p = same_set_after(a, a), q = same_set_after(a, p);

	(void)state;
	assert_non_null(memo);
	unwind_memo__put(memo, a, UNWIND_MEMO_RULE, &r1);
	unwind_memo__put(memo, p, UNWIND_MEMO_FP, NULL);
	assert_int_equal(unwind_memo__get(memo, a, &got), UNWIND_MEMO_RULE);
	assert_int_equal(got.cfa_base, CFI_BASE_RSP);
	assert_int_equal(unwind_memo__get(memo, p, &got), UNWIND_MEMO_FP);
	/* a used last: q takes p's room. */
	assert_int_equal(unwind_memo__get(memo, a, &got), UNWIND_MEMO_RULE);
	unwind_memo__put(memo, q, UNWIND_MEMO_FP, NULL);
	assert_int_equal(unwind_memo__get(memo, p, &got), 0);
	assert_int_equal(unwind_memo__get(memo, a, &got), UNWIND_MEMO_RULE);
	assert_int_equal(unwind_memo__get(memo, q, &got), UNWIND_MEMO_FP);
	/* A new answer for q replaces its own slot, not a's. */
	unwind_memo__put(memo, q, UNWIND_MEMO_RULE, &r2);
	assert_int_equal(unwind_memo__get(memo, a, &got), UNWIND_MEMO_RULE);
	assert_int_equal(got.cfa_base, CFI_BASE_RSP);
	assert_int_equal(unwind_memo__get(memo, q, &got), UNWIND_MEMO_RULE);
	assert_int_equal(got.cfa_base, CFI_BASE_RBP);
	unwind_memo__destroy(memo);
}

/* A page of this test's own executable, mapped executable anew; MAP_FAILED on failure. */
static void *map_exe_page(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *p;

	assert_true(fd >= 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	return p;
}

/*
 * A miss reads the target's maps again (at most every 50 ms). What its walks
 * learnt per code address stays when the re-read only found a new mapping
 * (a library loaded, CPython's trampolines), and goes when one it knew had
 * gone: gone_before_reread says which. Returns the memo's hits, misses and
 * the re-reads counted, after the target is gone.
 */
static void memo_across_a_reread(bool gone_before_reread, __u64 *hits, __u64 *misses,
				 __u64 *reread)
{
	struct bounded *b = bounded__new();
	struct target_table tt;
	struct target *t;
	struct unwind_memo *memo;
	struct cfi_rule r = { .cfa_base = CFI_BASE_RSP, .cfa_off = 16, .ra_off = -8 };
	const struct cfi_table *table;
	__u64 bias;
	void *known = map_exe_page(), *added = NULL;
	struct symbolized_frame frame;
	struct space_stats ts;

	assert_non_null(b);
	assert_int_equal(target_table__init(&tt, b), 0);
	assert_int_equal(target_table__add(&tt, getpid(), 1, &t), 0);
	memo = space__memo(t->space); /* reads the maps: known is in them */
	assert_non_null(memo);
	unwind_memo__put(memo, 0x1234, UNWIND_MEMO_RULE, &r);
	assert_int_equal(unwind_memo__get(space__memo(t->space), 0x1234, &r), UNWIND_MEMO_RULE);
	assert_int_equal(space_gen__name(space__now(t->space), (uint64_t)(uintptr_t)map_exe_page,
					 &frame), 0);
	assert_string_equal(frame.name, "map_exe_page");
	if (gone_before_reread)
		munmap(known, 4096);
	else
		added = map_exe_page();
	usleep(60 * 1000);
	assert_int_not_equal(space_gen__cfi(space__now(t->space), 16, &table, &bias), 0);
	assert_ptr_equal(space__memo(t->space), memo);
	assert_int_equal(unwind_memo__get(memo, 0x1234, &r),
			 gone_before_reread ? 0 : UNWIND_MEMO_RULE);
	/* What was learnt of this binary's own text came along, to the right mapping. */
	assert_int_equal(space_gen__name(space__now(t->space), (uint64_t)(uintptr_t)map_exe_page,
					 &frame), 0);
	assert_string_equal(frame.name, "map_exe_page");
	target_table__remove(&tt, getpid());
	target_table__stats(&tt, &ts);
	*hits = ts.memo_hits;
	*misses = ts.memo_misses;
	*reread = ts.maps_reread;
	target_table__fini(&tt);
	bounded__free(b);
	if (!gone_before_reread) {
		munmap(known, 4096);
		munmap(added, 4096);
	}
}

static void test_a_targets_memo_is_emptied_when_a_mapping_it_knew_went(void **state)
{
	__u64 hits, misses, reread;

	(void)state;
	memo_across_a_reread(true, &hits, &misses, &reread);
	/* One answer, one miss, one re-read: still counted once the target is gone. */
	assert_int_equal(hits, 1);
	assert_int_equal(misses, 1);
	assert_int_equal(reread, 1);
}

static void test_a_targets_memo_stays_when_a_reread_only_adds_mappings(void **state)
{
	__u64 hits, misses, reread;

	(void)state;
	memo_across_a_reread(false, &hits, &misses, &reread);
	assert_int_equal(hits, 2);
	assert_int_equal(misses, 0);
	assert_int_equal(reread, 1);
}

static __u64 monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/*
 * A launch event at ip, its stack copy 64 zero bytes (the struct's room is
 * allocated whole: events sit inside larger blocks in the loader).
 */
static struct gp_launch_event *entry_event(__u64 ip, __u64 ts, size_t *ret_size)
{
	size_t size = GP_LAUNCH_EVENT_HDR + 64;
	struct gp_launch_event *e = calloc(1, sizeof(*e) + 64);

	assert_non_null(e);
	e->ts_ns = ts;
	e->pid = (__u32)getpid();
	e->tid = e->pid;
	e->ip = ip;
	e->sp = (__u64)(uintptr_t)e + 4096 * 16;
	e->sp &= ~(__u64)(GP_STACK_CHUNK - 1);
	e->stack_len = 64;
	*ret_size = size;
	return e;
}

/*
 * The target table follows at most its bound of processes at once: one
 * more is refused (-ENOSPC), one already followed is still found, and a
 * removed one makes room.
 */
static void test_the_target_table_is_bounded(void **state)
{
	struct bounded *b = bounded__new();
	struct target_table tt;
	struct target *t, *again;

	(void)state;
	assert_non_null(b);
	assert_int_equal(target_table__init(&tt, b), 0);
	assert_int_equal(tt.max, TARGET_TABLE_MAX);
	tt.max = 2;
	assert_int_equal(target_table__add(&tt, getpid(), 1, &t), 0);
	assert_int_equal(target_table__add(&tt, getppid(), 1, &t), 0);
	assert_int_equal(target_table__add(&tt, 1, 1, &t), -ENOSPC);
	assert_int_equal(target_table__add(&tt, getpid(), 1, &again), 0);
	assert_non_null(again);
	assert_int_equal(again->pid, getpid());
	target_table__remove(&tt, getppid());
	assert_int_equal(target_table__add(&tt, 1, 1, &t), 0);
	assert_int_equal(tt.n, 2);
	target_table__fini(&tt);
	bounded__free(b);
}

/*
 * A launch whose probed entry point lies in a mapping made after the
 * target's maps were read, within the 50 ms between re-reads: the maps are
 * older than the launch, so they are read again at once and the walk
 * starts there (it stopped at once, "unmapped", before). An address in no
 * mapping on a launch older than the maps costs no re-read; on a newer
 * one, one re-read, which finds nothing: the next such launch waits.
 */
static void test_an_entry_point_mapped_after_the_maps_were_read_is_found(void **state)
{
	struct bounded *b = bounded__new();
	struct target_table tt;
	struct space_stats ts;
	struct raw_stack raw;
	struct gp_launch_event *e;
	struct target *t;
	size_t size;
	void *page;
	__u64 t0 = monotonic_ns();
	bool fast;

	(void)state;
	assert_non_null(b);
	assert_int_equal(target_table__init(&tt, b), 0);
	assert_int_equal(target_table__add(&tt, getpid(), 1, &t), 0);
	assert_non_null(space__memo(t->space)); /* its space, opened now, reads the maps */
	e = entry_event(0x1000, 1, &size); /* older than the maps, unmapped */
	assert_int_equal(raw_stack__from_event(t, e, size, &raw, NULL), 0);
	assert_int_equal(raw.why, UNWIND_UNMAPPED);
	free(e);
	page = map_exe_page();
	e = entry_event((__u64)(uintptr_t)page + 64, monotonic_ns(), &size);
	assert_int_equal(raw_stack__from_event(t, e, size, &raw, NULL), 0);
	assert_int_not_equal(raw.why, UNWIND_UNMAPPED);
	free(e);
	/*
	 * The counts hold when all of it ran within the 50 ms of the rate
	 * limit and the backoff (a machine that stalls longer re-reads on
	 * the rate-limited path too); the walks' results hold regardless.
	 */
	target_table__stats(&tt, &ts);
	fast = monotonic_ns() - t0 < 40000000ull;
	if (fast)
		assert_int_equal(ts.maps_reread, 1);
	for (int i = 0; i < 3; i++) { /* garbage: one re-read, then none */
		e = entry_event(0x1000, monotonic_ns(), &size);
		assert_int_equal(raw_stack__from_event(t, e, size, &raw, NULL), 0);
		assert_int_equal(raw.why, UNWIND_UNMAPPED);
		free(e);
	}
	target_table__stats(&tt, &ts);
	fast = fast && monotonic_ns() - t0 < 40000000ull;
	if (fast)
		assert_int_equal(ts.maps_reread, 2);
	else
		print_message("  slower than 40 ms: re-read counts not checked\n");
	target_table__fini(&tt);
	bounded__free(b);
	munmap(page, 4096);
}

static void test_short_stack_copy_ends_the_walk_with_correct_frames_only(void **state)
{
	struct gp_capture c = { .max_len = STACK_COPY, .buf = main_copy };
	struct test_maps *tm;
	struct unwind_regs regs;
	struct unwind_stack st;
	enum unwind_stop why;
	__u64 full[128], pcs[128];
	int n_full, n, i;

	run_chain(&c);
	tm = test_maps__load();
	regs = (struct unwind_regs){ .ip = c.ip, .sp = c.sp, .bp = c.bp };
	st = (struct unwind_stack){ .base = c.sp, .data = c.buf, .len = c.len };
	n_full = unwind(&regs, &st, test_maps__lookup, tm, full, 128, &why);
	assert_int_equal(why, UNWIND_ROOT);
	st.len = 256;
	n = unwind(&regs, &st, test_maps__lookup, tm, pcs, 128, &why);
	dump_pcs(tm, pcs, n, why);
	assert_int_equal(why, UNWIND_END_OF_COPY);
	/* leaf's and inner's frames fit in 256 bytes, middle's 0x130 do not */
	assert_int_equal(n, 3);
	assert_true(n < n_full);
	for (i = 0; i < n; i++)
		assert_int_equal(pcs[i], full[i]);
	test_maps__free(tm);
}

static void test_rules_of_this_binary_match_the_assembly_prologue(void **state)
{
	struct test_maps *tm = test_maps__load();
	const struct test_map *m = test_maps__find(tm, (uintptr_t)gp_uw_outer);
	struct cfi_rule r;

	assert_non_null(m);
	assert_non_null(m->cfi);
	/* at entry: cfa = rsp + 8, return address just below it */
	assert_int_equal(cfi_table__find(m->cfi, (uintptr_t)gp_uw_outer - m->bias, &r), 0);
	assert_int_equal(r.cfa_base, CFI_BASE_RSP);
	assert_int_equal(r.cfa_off, 8);
	assert_int_equal(r.ra_rule, CFI_RA_AT_CFA);
	assert_int_equal(r.ra_off, -8);
	assert_int_equal(r.rbp_rule, CFI_RBP_SAME);
	/* after push rbp, push rbx, sub $0x58 */
	assert_int_equal(cfi_table__find(m->cfi, (uintptr_t)gp_uw_outer_body - m->bias, &r), 0);
	assert_int_equal(r.cfa_base, CFI_BASE_RSP);
	assert_int_equal(r.cfa_off, 0x70);
	assert_int_equal(r.rbp_rule, CFI_RBP_AT_CFA);
	assert_int_equal(r.rbp_off, -16);
	/* after restore_state: the locals are back */
	assert_int_equal(cfi_table__find(m->cfi, (uintptr_t)gp_uw_middle_ret - 1 - m->bias, &r), 0);
	assert_int_equal(r.cfa_off, 0x130);
	/* the byte after inner's last call belongs to another FDE */
	assert_int_equal(cfi_table__find(m->cfi, (uintptr_t)gp_uw_inner_tail - 1 - m->bias, &r), 0);
	assert_int_equal(r.cfa_off, 0x50);
	assert_int_equal(cfi_table__find(m->cfi, (uintptr_t)gp_uw_inner_tail - m->bias, &r), 0);
	assert_int_equal(r.cfa_off, 8);
	/* leaf's body: only rbp can give the CFA */
	assert_int_equal(cfi_table__find(m->cfi, (uintptr_t)gp_uw_leaf_capture - m->bias, &r), 0);
	assert_int_equal(r.cfa_base, CFI_BASE_RBP);
	assert_int_equal(r.cfa_off, 16);
	test_maps__free(tm);
}

/*
 * A real library both ways: built whole, the table is compact; loaded the
 * loader's way, only .eh_frame_hdr's index is read (no row yet, a fraction
 * of the bytes) and every answer, FDE by FDE as lookups come, is the whole
 * table's, at each row start and the byte before it.
 */
static void check_on_demand_matches_whole(const char *path)
{
	struct cfi_table *t, *whole;
	size_t checked, diff;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		print_message("  %s: not here\n", path);
		return;
	}
	assert_int_equal(cfi_table__load_whole(fd, &whole), 0);
	assert_int_equal(cfi_table__load(fd, &t), 0);
	close(fd);
	print_message("  %s: whole %zu rows, %zu bytes (%.2f bytes/row); on demand: %zu FDEs "
		      "indexed, %zu bytes\n", path, cfi_table__rows(whole), cfi_table__bytes(whole),
		      (double)cfi_table__bytes(whole) / (double)cfi_table__rows(whole),
		      cfi_table__fdes_on_demand(t), cfi_table__bytes(t));
	assert_true(cfi_table__rows(whole) > 1000);
	assert_true(cfi_table__bytes(whole) < 10 * cfi_table__rows(whole));
	assert_int_equal(cfi_table__fdes_on_demand(whole), 0);
	assert_true(cfi_table__fdes_on_demand(t) > 500);
	assert_int_equal(cfi_table__rows(t), 0);
	assert_true(cfi_table__bytes(t) * 3 < cfi_table__bytes(whole));
	diff = cfi_table__differences(t, whole, &checked);
	assert_true(checked > 2 * 1000);
	assert_int_equal(diff, 0);
	assert_true(cfi_table__rows(t) >= cfi_table__rows(whole) / 2);
	cfi_table__free(t);
	cfi_table__free(whole);
}

static void test_real_libraries_on_demand_match_whole(void **state)
{
	check_on_demand_matches_whole("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
	check_on_demand_matches_whole("/usr/lib/x86_64-linux-gnu/libc.so.6");
}

/*
 * A CFI table knows its file's addresses as its symbols do: every mapped
 * file of this process, at the start, middle and last byte of each of its
 * mappings, gives the same virtual address through both (libelf's program
 * headers and the table's own), so the walk needs no symbol table.
 */
static void test_a_cfi_table_maps_file_offsets_as_the_symbols_do(void **state)
{
	struct proc_maps *pm;
	size_t checked = 0;

	(void)state;
	assert_int_equal(proc_maps__load(getpid(), &pm), 0);
	for (size_t i = 0; i < proc_maps__count(pm); i++) {
		const struct proc_map *m = proc_maps__at(pm, i);
		const __u64 len = m->end - m->start;
		const __u64 offs[3] = { m->offset, m->offset + len / 2, m->offset + len - 1 };
		struct cfi_table *t = NULL;
		struct elf_syms *syms = NULL;
		int fd;

		if (m->kind != PROC_MAP_FILE || m->deleted ||
		    (fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		if (!cfi_table__load(fd, &t) && !elf_syms__load_fd(fd, &syms)) {
			for (int k = 0; k < 3; k++) {
				uint64_t want;
				__u64 got;
				int err = elf_syms__file_to_vaddr(syms, offs[k], &want);

				assert_int_equal(cfi_table__file_to_vaddr(t, offs[k], &got), err);
				if (!err)
					assert_true(got == want);
				checked += !err;
			}
		}
		cfi_table__free(t);
		elf_syms__put(syms);
		close(fd);
	}
	proc_maps__destroy(pm);
	assert_true(checked >= 6); /* this binary and libc, at least */
}

/* ---------------------------------------------------------------- synthetic CFI */

struct fb {
	__u8 b[8192];
	size_t n;
};

static void fb__bytes(struct fb *f, const void *p, size_t n)
{
	assert_true(f->n + n <= sizeof(f->b));
	if (n) /* NULL programs are empty */
		memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void fb__u8(struct fb *f, __u8 v)
{
	fb__bytes(f, &v, 1);
}

static void fb__u32(struct fb *f, __u32 v)
{
	fb__bytes(f, &v, 4);
}

static void fb__u64(struct fb *f, __u64 v)
{
	fb__bytes(f, &v, 8);
}

static void fb__patch_len(struct fb *f, size_t start)
{
	__u32 len = (__u32)(f->n - start - 4);

	memcpy(f->b + start, &len, 4);
}

#define CIE_STD_INIT 0x0c, 0x07, 0x08, 0x90, 0x01 /* def_cfa rsp+8; ra at cfa-8 */

/* A CIE: absptr FDE pointers, code align 1, data align -8, ra column 16. */
static size_t fb__cie(struct fb *f, bool debug, const char *aug, const __u8 *ins, size_t n)
{
	size_t start = f->n;

	fb__u32(f, 0);
	fb__u32(f, debug ? 0xffffffff : 0);
	fb__u8(f, debug ? 3 : 1);
	fb__bytes(f, aug, strlen(aug) + 1);
	fb__u8(f, 1);    /* code align */
	fb__u8(f, 0x78); /* data align -8 */
	fb__u8(f, 16);   /* ra column */
	if (aug[0] == 'z') {
		fb__u8(f, 1);    /* augmentation data: the R byte */
		fb__u8(f, 0x00); /* DW_EH_PE_absptr */
	}
	fb__bytes(f, ins, n);
	fb__patch_len(f, start);
	return start;
}

static size_t fb__fde(struct fb *f, bool debug, bool z, size_t cie, __u64 begin, __u64 range,
		      const __u8 *ins, size_t n)
{
	size_t start = f->n;

	fb__u32(f, 0);
	fb__u32(f, debug ? (__u32)cie : (__u32)(f->n - cie));
	fb__u64(f, begin);
	fb__u64(f, range);
	if (z)
		fb__u8(f, 0);
	fb__bytes(f, ins, n);
	fb__patch_len(f, start);
	return start;
}

/* ELF header, the frame section, .shstrtab, section headers. */
static size_t elf__build(__u8 *out, size_t cap, const struct fb *frame, bool debug)
{
	static const char shstr[] = "\0.eh_frame\0.debug_frame\0.shstrtab";
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[3] = { { 0 } };
	size_t off_frame = sizeof(eh), off_str = off_frame + frame->n;
	size_t off_sh = (off_str + sizeof(shstr) + 7) & ~(size_t)7;
	size_t total = off_sh + sizeof(sh);

	assert_true(total <= cap);
	memset(out, 0, total);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = off_sh;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	sh[1] = (Elf64_Shdr){ .sh_name = debug ? 11 : 1, .sh_type = SHT_PROGBITS,
			      .sh_offset = off_frame, .sh_size = frame->n,
			      .sh_addr = debug ? 0 : 0x100000 };
	sh[2] = (Elf64_Shdr){ .sh_name = 24, .sh_type = SHT_STRTAB, .sh_offset = off_str,
			      .sh_size = sizeof(shstr) };
	memcpy(out, &eh, sizeof(eh));
	memcpy(out + off_frame, frame->b, frame->n);
	memcpy(out + off_str, shstr, sizeof(shstr));
	memcpy(out + off_sh, sh, sizeof(sh));
	return total;
}

static struct cfi_table *table_of(const struct fb *frame, bool debug)
{
	static __u8 img[16384];
	struct cfi_table *t;
	size_t n = elf__build(img, sizeof(img), frame, debug);

	assert_int_equal(cfi_table__load_mem(img, n, &t), 0);
	return t;
}

static void assert_rule(const struct cfi_table *t, __u64 vaddr, int base, int cfa_off,
			int rbp_rule, int rbp_off)
{
	struct cfi_rule r;

	assert_int_equal(cfi_table__find(t, vaddr, &r), 0);
	assert_int_equal(r.cfa_base, base);
	assert_int_equal(r.cfa_off, cfa_off);
	assert_int_equal(r.rbp_rule, rbp_rule);
	if (rbp_rule == CFI_RBP_AT_CFA)
		assert_int_equal(r.rbp_off, rbp_off);
}

static void assert_no_rule(const struct cfi_table *t, __u64 vaddr)
{
	struct cfi_rule r;

	assert_int_equal(cfi_table__find(t, vaddr, &r), -ENOENT);
}

/* push rbp; mov rsp,rbp; ...; leave; ret as GCC describes it */
static const __u8 fp_prologue[] = {
	0x41,       /* advance 1 */
	0x0e, 16,   /* def_cfa_offset 16 */
	0x86, 0x02, /* rbp at cfa-16 */
	0x43,       /* advance 3 */
	0x0d, 0x06, /* def_cfa_register rbp */
	0x78,       /* advance 0x38 */
	0x0c, 0x07, 0x08, /* def_cfa rsp+8 */
};

static void test_frame_pointer_prologue_rules_follow_each_instruction(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t cie = fb__cie(&f, false, "zR", init, sizeof(init));

	fb__fde(&f, false, true, cie, 0x1000, 0x40, fp_prologue, sizeof(fp_prologue));
	fb__u32(&f, 0); /* terminator */
	t = table_of(&f, false);
	assert_no_rule(t, 0xfff);
	assert_rule(t, 0x1000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x1001, CFI_BASE_RSP, 16, CFI_RBP_AT_CFA, -16);
	assert_rule(t, 0x1003, CFI_BASE_RSP, 16, CFI_RBP_AT_CFA, -16);
	assert_rule(t, 0x1004, CFI_BASE_RBP, 16, CFI_RBP_AT_CFA, -16);
	assert_rule(t, 0x103b, CFI_BASE_RBP, 16, CFI_RBP_AT_CFA, -16);
	/* def_cfa does not restore rbp's rule: it stays saved until restore */
	assert_rule(t, 0x103c, CFI_BASE_RSP, 8, CFI_RBP_AT_CFA, -16);
	assert_rule(t, 0x103f, CFI_BASE_RSP, 8, CFI_RBP_AT_CFA, -16);
	assert_no_rule(t, 0x1040);
	assert_int_equal(cfi_table__rows(t), 5);
	cfi_table__free(t);
}

static void test_remember_and_restore_state_bring_back_the_cfa(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 prog[] = {
		0x44, 0x0e, 0x30,       /* +4: sub $0x28,%rsp: cfa rsp+0x30 */
		0x44, 0x0a,             /* +8: remember_state */
		0x0e, 0x08,             /*     early epilogue: cfa rsp+8 */
		0x41, 0x0b,             /* +9: restore_state */
		0x0e, 0x40,             /*     def_cfa_offset 0x40 (another push... ) */
		0x0a, 0x0e, 0x10,       /*     remember, then rsp+16 */
		0x42, 0x0b, 0x0b,       /* +11: restore; a second restore is an error */
	};
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t cie = fb__cie(&f, false, "zR", init, sizeof(init));

	fb__fde(&f, false, true, cie, 0x2000, 0x20, prog, sizeof(prog));
	t = table_of(&f, false);
	assert_rule(t, 0x2004, CFI_BASE_RSP, 0x30, CFI_RBP_SAME, 0);
	assert_rule(t, 0x2008, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x2009, CFI_BASE_RSP, 0x10, CFI_RBP_SAME, 0);
	/* the malformed second restore_state at +11 leaves the rest uncovered */
	assert_no_rule(t, 0x200b);
	assert_no_rule(t, 0x201f);
	assert_int_equal(cfi_table__dropped(t), 1);
	cfi_table__free(t);
}

static void test_plt_expression_and_signal_frames_are_recognised(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 plt[] = {
		0x0e, 16, 0x46, 0x0e, 24, 0x4a, /* +16: the expression ld emits */
		0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
	};
	static const __u8 other_expr[] = { 0x0f, 3, 0x77, 0x08, 0x06 }; /* *(rsp+8) */
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	struct cfi_rule r;
	size_t cie = fb__cie(&f, false, "zR", init, sizeof(init));
	size_t sig = fb__cie(&f, false, "zRS", init, sizeof(init));

	fb__fde(&f, false, true, cie, 0x3000, 0x100, plt, sizeof(plt));
	fb__fde(&f, false, true, cie, 0x4000, 0x10, other_expr, sizeof(other_expr));
	fb__fde(&f, false, true, sig, 0x5000, 0x10, NULL, 0);
	t = table_of(&f, false);
	assert_rule(t, 0x3006, CFI_BASE_RSP, 24, CFI_RBP_SAME, 0);
	assert_int_equal(cfi_table__find(t, 0x3010, &r), 0);
	assert_int_equal(r.cfa_base, CFI_BASE_PLT);
	assert_int_equal(r.cfa_off, 8);
	assert_int_equal(r.plt_split, 11);
	assert_int_equal(cfi_table__find(t, 0x4000, &r), 0);
	assert_int_equal(r.cfa_base, CFI_BASE_NONE);
	assert_int_equal(cfi_table__find(t, 0x5000, &r), 0);
	assert_int_equal(r.flags & CFI_FLAG_SIGNAL_FRAME, CFI_FLAG_SIGNAL_FRAME);
	assert_int_equal(cfi_table__find(t, 0x3010, &r), 0);
	assert_int_equal(r.flags, 0);
	cfi_table__free(t);
}

static void test_debug_frame_is_read_and_eh_frame_wins_where_both_cover(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 off32[] = { 0x0e, 32 };
	struct fb f = { .n = 0 }, both = { .n = 0 };
	struct cfi_table *t;
	static __u8 img[16384];
	size_t cie, n, off_eh, off_dbg;
	Elf64_Ehdr eh;
	Elf64_Shdr sh[4];

	cie = fb__cie(&f, true, "", init, sizeof(init));
	fb__fde(&f, true, false, cie, 0x7000, 0x10, off32, sizeof(off32));
	t = table_of(&f, true);
	assert_rule(t, 0x7000, CFI_BASE_RSP, 32, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x7010);
	cfi_table__free(t);

	/* One image with both: .eh_frame says rsp+8 on [0x7000, 0x7008), .debug_frame rsp+32 on [0x7000, 0x7010). */
	cie = fb__cie(&both, false, "zR", init, sizeof(init));
	fb__fde(&both, false, true, cie, 0x7000, 0x8, NULL, 0);
	fb__u32(&both, 0);
	n = elf__build(img, sizeof(img), &both, false);
	memcpy(&eh, img, sizeof(eh));
	memcpy(sh, img + eh.e_shoff, 3 * sizeof(Elf64_Shdr));
	off_eh = sh[1].sh_offset;
	(void)off_eh;
	/* append the .debug_frame bytes and a fourth section header */
	off_dbg = n;
	memcpy(img + off_dbg, f.b, f.n);
	sh[3] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_PROGBITS, .sh_offset = off_dbg,
			      .sh_size = f.n };
	n = (off_dbg + f.n + 7) & ~(size_t)7;
	memcpy(img + n, sh, sizeof(sh));
	eh.e_shoff = n;
	eh.e_shnum = 4;
	memcpy(img, &eh, sizeof(eh));
	n += sizeof(sh);
	assert_int_equal(cfi_table__load_mem(img, n, &t), 0);
	assert_rule(t, 0x7000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x7007, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	/* past the .eh_frame FDE the .debug_frame one still covers */
	assert_rule(t, 0x7008, CFI_BASE_RSP, 32, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x7010);
	cfi_table__free(t);
}

/* An .eh_frame_hdr at hdr with no search table, pointing at .eh_frame at frame. */
static void eh_hdr__untabled(__u8 *img, size_t hdr, size_t frame)
{
	__s32 rel = (__s32)(frame - (hdr + 4));

	img[hdr] = 1;         /* version */
	img[hdr + 1] = 0x1b;  /* eh_frame_ptr: pcrel sdata4 */
	img[hdr + 2] = 0xff;  /* no count */
	img[hdr + 3] = 0xff;  /* no table */
	memcpy(img + hdr + 4, &rel, 4);
}

static void test_eh_frame_is_found_through_pt_gnu_eh_frame_without_sections(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 off16[] = { 0x41, 0x0e, 16 };
	static __u8 img[8192];
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t hdr = ELF_IMAGE_PHDRS_END, frame = hdr + 8, cie, total;

	cie = fb__cie(&f, false, "zR", init, sizeof(init));
	fb__fde(&f, false, true, cie, 0x9000, 0x20, off16, sizeof(off16));
	fb__u32(&f, 0);
	total = frame + f.n + 64; /* bytes after the terminator must not be read as CFI */
	memset(img, 0xff, total);
	elf_image__phdrs(img, total, hdr, 8);
	eh_hdr__untabled(img, hdr, frame);
	memcpy(img + frame, f.b, f.n);
	assert_int_equal(cfi_table__load_mem(img, total, &t), 0);
	assert_rule(t, 0x9000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x9001, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x9020);
	assert_int_equal(cfi_table__dropped(t), 0);
	cfi_table__free(t);
}

/*
 * A table maps file offsets to addresses through its file's own PT_LOAD
 * segments, where they differ (a data segment one page above its offset,
 * as ld -z noseparate-code lays it out): no symbols needed.
 */
static void test_a_cfi_table_maps_offsets_through_its_load_segments(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static __u8 img[8192];
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	Elf64_Phdr ph[3] = { { 0 } };
	size_t hdr = sizeof(Elf64_Ehdr) + sizeof(ph), frame = hdr + 8, total;
	__u64 v;

	static const __u8 off16[] = { 0x41, 0x0e, 16 };
	size_t cie = fb__cie(&f, false, "zR", init, sizeof(init));

	fb__fde(&f, false, true, cie, 0x200, 0x20, off16, sizeof(off16));
	fb__u32(&f, 0);
	total = frame + f.n;
	assert_true(total < 0x400);
	memset(img, 0, sizeof(img));
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_filesz = 0x400, .p_memsz = 0x400 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_GNU_EH_FRAME, .p_offset = hdr, .p_vaddr = hdr,
			      .p_filesz = 8 };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_offset = 0x400, .p_vaddr = 0x1400,
			      .p_filesz = 0x100, .p_memsz = 0x900 };
	elf_image__header(img, ph, 3);
	eh_hdr__untabled(img, hdr, frame);
	memcpy(img + frame, f.b, f.n);
	assert_int_equal(cfi_table__load_mem(img, 0x500, &t), 0);
	assert_int_equal(cfi_table__file_to_vaddr(t, 0x10, &v), 0);
	assert_true(v == 0x10);
	assert_int_equal(cfi_table__file_to_vaddr(t, 0x3ff, &v), 0);
	assert_true(v == 0x3ff);
	assert_int_equal(cfi_table__file_to_vaddr(t, 0x400, &v), 0);
	assert_true(v == 0x1400);
	assert_int_equal(cfi_table__file_to_vaddr(t, 0x4ff, &v), 0);
	assert_true(v == 0x14ff);
	/* Past the file's bytes of a segment (its bss): no offset maps there. */
	assert_int_equal(cfi_table__file_to_vaddr(t, 0x500, &v), -ENOENT);
	cfi_table__free(t);
}

/*
 * An image with .eh_frame_hdr's search table, as linkers write it: header,
 * then (start, FDE) pairs relative to the header, then .eh_frame; file
 * offsets equal addresses. pairs[i][1] is an offset into the frame bytes.
 */
static size_t elf__build_indexed(__u8 *img, size_t cap, const struct fb *frame,
				 const __s64 (*pairs)[2], size_t n)
{
	size_t hdr = ELF_IMAGE_PHDRS_END, frame_at = hdr + 12 + 8 * n, total, i;
	__s32 v;

	total = frame_at + frame->n;
	assert_true(total <= cap);
	memset(img, 0, total);
	elf_image__phdrs(img, total, hdr, 12 + 8 * n);
	img[hdr] = 1;
	img[hdr + 1] = 0x1b; /* eh_frame_ptr: pcrel sdata4 */
	img[hdr + 2] = 0x03; /* fde_count: udata4 */
	img[hdr + 3] = 0x3b; /* table: datarel sdata4 */
	v = (__s32)(frame_at - (hdr + 4));
	memcpy(img + hdr + 4, &v, 4);
	v = (__s32)n;
	memcpy(img + hdr + 8, &v, 4);
	for (i = 0; i < n; i++) {
		v = (__s32)(pairs[i][0] - (__s64)hdr);
		memcpy(img + hdr + 12 + 8 * i, &v, 4);
		v = (__s32)((__s64)frame_at + pairs[i][1] - (__s64)hdr);
		memcpy(img + hdr + 16 + 8 * i, &v, 4);
	}
	memcpy(img + frame_at, frame->b, frame->n);
	return total;
}

static void test_fdes_are_built_on_demand_through_the_eh_frame_hdr_table(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 off16[] = { 0x41, 0x0e, 16 };
	static __u8 img[8192];
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t cie, f1, f2, n;
	__s64 pairs[3][2];

	cie = fb__cie(&f, false, "zR", init, sizeof(init));
	f1 = fb__fde(&f, false, true, cie, 0x9000, 0x20, off16, sizeof(off16));
	f2 = fb__fde(&f, false, true, cie, 0xa000, 0x10, NULL, 0);
	fb__u32(&f, 0);

	/* Indexed: nothing built at load, each FDE on its first lookup. */
	pairs[0][0] = 0x9000, pairs[0][1] = (__s64)f1;
	pairs[1][0] = 0xa000, pairs[1][1] = (__s64)f2;
	n = elf__build_indexed(img, sizeof(img), &f, (const __s64(*)[2])pairs, 2);
	assert_int_equal(cfi_table__load_mem(img, n, &t), 0);
	assert_int_equal(cfi_table__fdes_on_demand(t), 2);
	assert_int_equal(cfi_table__rows(t), 0);
	assert_no_rule(t, 0x8fff);
	assert_rule(t, 0x9000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x9001, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x9020);
	assert_true(cfi_table__rows(t) > 0);
	assert_rule(t, 0xa00f, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0xa010);
	assert_int_equal(cfi_table__dropped(t), 0);
	cfi_table__free(t);

	/* Hostile pairs: an FDE pointer past the file, one at a CIE: those cost their FDE. */
	pairs[2][0] = 0xb000, pairs[2][1] = 1 << 20;
	pairs[1][1] = (__s64)cie;
	n = elf__build_indexed(img, sizeof(img), &f, (const __s64(*)[2])pairs, 3);
	assert_int_equal(cfi_table__load_mem(img, n, &t), 0);
	assert_rule(t, 0x9001, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0xa000);
	assert_no_rule(t, 0xb000);
	assert_no_rule(t, 0xa000); /* remembered: not read and counted again */
	assert_int_equal(cfi_table__dropped(t), 2);
	cfi_table__free(t);

	/* Out of order: the index is not used and .eh_frame is built whole. */
	pairs[0][0] = 0xa000, pairs[0][1] = (__s64)f2;
	pairs[1][0] = 0x9000, pairs[1][1] = (__s64)f1;
	n = elf__build_indexed(img, sizeof(img), &f, (const __s64(*)[2])pairs, 2);
	assert_int_equal(cfi_table__load_mem(img, n, &t), 0);
	assert_int_equal(cfi_table__fdes_on_demand(t), 0);
	assert_true(cfi_table__rows(t) > 0);
	assert_rule(t, 0x9001, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	assert_rule(t, 0xa000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	cfi_table__free(t);
}

/* An .eh_frame_hdr table's pair i at hdr: function start and FDE address, relative to hdr. */
static void eh_hdr__pair(__u8 *img, size_t hdr, size_t i, __u64 start, __u64 fde)
{
	__u32 u = (__u32)(start - hdr);

	memcpy(img + hdr + 12 + 8 * i, &u, 4);
	u = (__u32)(fde - hdr);
	memcpy(img + hdr + 16 + 8 * i, &u, 4);
}

/* The .eh_frame_hdr at hdr (n pairs, .eh_frame at frame_at), and the ELF headers over it all. */
static void eh_hdr__finish(__u8 *img, size_t total, size_t hdr, size_t frame_at, __u32 n)
{
	__u32 u = (__u32)(frame_at - (hdr + 4));

	img[hdr] = 1;
	img[hdr + 1] = 0x1b; /* eh_frame_ptr: pcrel sdata4 */
	img[hdr + 2] = 0x03; /* fde_count: udata4 */
	img[hdr + 3] = 0x3b; /* table: datarel sdata4 */
	memcpy(img + hdr + 4, &u, 4);
	memcpy(img + hdr + 8, &n, 4);
	elf_image__phdrs(img, total, hdr, 12 + 8 * (size_t)n);
}

/*
 * Built on demand, the rows stay bounded whatever the lookups touch: 20,000
 * one-rule functions, each looked up (and answered right), leave at most the
 * cache's 16,384 functions' rows (2 each) in the table, not 40,000.
 */
static void test_fdes_built_on_demand_stay_bounded(void **state)
{
	enum { N = 20000, FDE = 28, CACHED_MAX = 16384 };
	static const __u8 init[] = { CIE_STD_INIT };
	struct fb cie = { .n = 0 };
	size_t hdr = ELF_IMAGE_PHDRS_END, frame_at = hdr + 12 + 8 * N, total, off;
	struct cfi_table *t;
	__u8 *img, *p;
	__u32 u;
	__u64 v;

	fb__cie(&cie, false, "zR", init, sizeof(init));
	total = frame_at + cie.n + (size_t)FDE * N + 4;
	img = calloc(1, total);
	assert_non_null(img);
	memcpy(img + frame_at, cie.b, cie.n);
	for (size_t i = 0; i < N; i++) {
		off = cie.n + FDE * i;
		p = img + frame_at + off;
		u = FDE - 4;
		memcpy(p, &u, 4);
		u = (__u32)(off + 4); /* back to the CIE at the section's start */
		memcpy(p + 4, &u, 4);
		v = 0x100000 + 16 * i;
		memcpy(p + 8, &v, 8);
		v = 16;
		memcpy(p + 16, &v, 8); /* then augmentation length 0 and nops */
		eh_hdr__pair(img, hdr, i, 0x100000 + 16 * i, frame_at + off);
	}
	eh_hdr__finish(img, total, hdr, frame_at, N);
	assert_int_equal(cfi_table__load_mem(img, total, &t), 0);
	assert_int_equal(cfi_table__fdes_on_demand(t), N);
	for (size_t i = 0; i < N; i++)
		assert_rule(t, 0x100000 + 16 * i + 1, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	print_message("  %d functions looked up: %zu rows held\n", N, cfi_table__rows(t));
	assert_true(cfi_table__rows(t) > 0);
	assert_true(cfi_table__rows(t) <= 2 * CACHED_MAX);
	assert_int_equal(cfi_table__dropped(t), 0);
	cfi_table__free(t);
	free(img);
}

/*
 * Bounded in bytes too: 300 functions of 20,000 rows each (an FDE of 60 KB
 * of instructions; 1 MiB is allowed), each looked up and answered right,
 * leave at most 32 MiB of rows and one function's more, not 48 MiB.
 */
static void test_fdes_built_on_demand_stay_bounded_in_bytes(void **state)
{
	enum { N = 300, ROWS = 20000, BODY = 3 * ROWS, FDE = 24 + BODY, SPAN = 2 * ROWS };
	static const __u8 init[] = { CIE_STD_INIT };
	struct fb cie = { .n = 0 };
	size_t hdr = ELF_IMAGE_PHDRS_END, frame_at = hdr + 12 + 8 * N, total, off, base, most = 0;
	struct cfi_table *t;
	__u8 *img, *p;
	__u32 u;
	__u64 v;

	(void)state;
	fb__cie(&cie, false, "zR", init, sizeof(init));
	total = frame_at + cie.n + (size_t)FDE * N + 4;
	img = calloc(1, total);
	assert_non_null(img);
	memcpy(img + frame_at, cie.b, cie.n);
	for (size_t i = 0; i < N; i++) {
		off = cie.n + (size_t)FDE * i;
		p = img + frame_at + off;
		u = FDE - 4;
		memcpy(p, &u, 4);
		u = (__u32)(off + 4); /* back to the CIE at the section's start */
		memcpy(p + 4, &u, 4);
		v = 0x100000 + (__u64)SPAN * i;
		memcpy(p + 8, &v, 8);
		v = SPAN;
		memcpy(p + 16, &v, 8);
		p[24] = 0; /* augmentation length 0 */
		/* a row every byte, offsets 16 and 8 by turns: advance_loc 1, def_cfa_offset */
		for (size_t r = 0; r + 1 < ROWS; r++) {
			p[25 + 3 * r] = 0x41;
			p[26 + 3 * r] = 0x0e;
			p[27 + 3 * r] = r % 2 ? 8 : 16;
		}
		eh_hdr__pair(img, hdr, i, 0x100000 + (__u64)SPAN * i, frame_at + off);
	}
	eh_hdr__finish(img, total, hdr, frame_at, N);
	assert_int_equal(cfi_table__load_mem(img, total, &t), 0);
	assert_int_equal(cfi_table__fdes_on_demand(t), N);
	base = cfi_table__bytes(t); /* the index, and the image (copied) */
	for (size_t i = 0; i < N; i++) {
		__u64 at = 0x100000 + (__u64)SPAN * i;

		assert_rule(t, at + 1, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
		assert_rule(t, at + 2, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
		assert_rule(t, at + SPAN - 1, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
		most = cfi_table__bytes(t) > most ? cfi_table__bytes(t) : most;
	}
	print_message("  %d functions of %d rows looked up: at most %zu bytes of rows held\n", N, ROWS,
		      most - base);
	assert_true(cfi_table__rows(t) >= ROWS);
	assert_true(most - base < (32u << 20) + (1u << 20));
	assert_int_equal(cfi_table__dropped(t), 0);
	cfi_table__free(t);
	free(img);
}

static void test_dwarf64_entries_and_pcrel_pointers_are_decoded(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t cie_at, fde_at, body;
	__u64 len;
	__s32 rel;

	/* CIE, 64-bit length escape: id is 8 bytes; pointers pcrel|sdata4 */
	cie_at = f.n;
	fb__u32(&f, 0xffffffff);
	fb__u64(&f, 0);
	body = f.n;
	fb__u64(&f, 0);
	fb__u8(&f, 1);
	fb__bytes(&f, "zR", 3);
	fb__u8(&f, 1);
	fb__u8(&f, 0x78);
	fb__u8(&f, 16);
	fb__u8(&f, 1);
	fb__u8(&f, 0x1b);
	fb__bytes(&f, init, sizeof(init));
	len = f.n - body;
	memcpy(f.b + cie_at + 4, &len, 8);
	/* FDE: pc_begin = 0x200000, relative to the field at sh_addr (0x100000) + offset */
	fde_at = f.n;
	fb__u32(&f, 0xffffffff);
	fb__u64(&f, 0);
	body = f.n;
	fb__u64(&f, (__u64)(f.n - cie_at));
	rel = (__s32)(0x200000 - (0x100000 + f.n));
	fb__bytes(&f, &rel, 4);
	fb__u32(&f, 0x30);
	fb__u8(&f, 0);
	fb__bytes(&f, (const __u8[]){ 0x42, 0x0e, 40 }, 3);
	len = f.n - body;
	memcpy(f.b + fde_at + 4, &len, 8);
	fb__u32(&f, 0);
	t = table_of(&f, false);
	assert_rule(t, 0x200000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x200002, CFI_BASE_RSP, 40, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x200030);
	cfi_table__free(t);
}

/* ---------------------------------------------------------------- hostile CFI */

static void load_and_poke(const __u8 *img, size_t n)
{
	struct cfi_table *t;
	struct cfi_rule r;
	__u64 a;

	if (cfi_table__load_mem(img, n, &t))
		return;
	assert_true(cfi_table__rows(t) > 0);
	for (a = 0; a < 0x10000; a += 0x11)
		(void)cfi_table__find(t, a, &r);
	(void)cfi_table__find(t, UINT64_MAX, &r);
	cfi_table__free(t);
}

static void test_hostile_cfi_is_refused_or_bounded(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static __u8 img[16384];
	struct fb f, g;
	struct cfi_table *t;
	size_t cie, fde, n, cut, i, k;
	__u32 v32;
	unsigned int seed = 12345;

	/* A reasonable base: two FDEs. */
	f.n = 0;
	cie = fb__cie(&f, false, "zR", init, sizeof(init));
	fde = fb__fde(&f, false, true, cie, 0x1000, 0x40, fp_prologue, sizeof(fp_prologue));
	fb__fde(&f, false, true, cie, 0x2000, 0x40, fp_prologue, sizeof(fp_prologue));

	/* Every truncation of the section. */
	for (cut = 0; cut < f.n; cut++) {
		g = f;
		g.n = cut;
		n = elf__build(img, sizeof(img), &g, false);
		load_and_poke(img, n);
	}
	/* Every truncation of the file. */
	n = elf__build(img, sizeof(img), &f, false);
	for (cut = 0; cut < n; cut++)
		load_and_poke(img, cut);

	/* A length pointing past the end. */
	g = f;
	v32 = 0x7ffffff0;
	memcpy(g.b + fde, &v32, 4);
	n = elf__build(img, sizeof(img), &g, false);
	assert_int_equal(cfi_table__load_mem(img, n, &t), -ENOENT);

	/* An FDE whose CIE pointer points at itself, at the other FDE, before the section. */
	for (k = 0; k < 3; k++) {
		g = f;
		v32 = k == 0 ? 0 : k == 1 ? (__u32)(fde + 4 - (fde + 0x30)) : 0x7fffffff;
		/* k == 0: id 0 makes the FDE a CIE with a bogus body */
		memcpy(g.b + fde + 4, &v32, 4);
		n = elf__build(img, sizeof(img), &g, false);
		load_and_poke(img, n);
	}

	/* A CIE shared by many FDEs with a long program: the work budget holds. */
	g.n = 0;
	{
		__u8 nops[4000];

		memset(nops, 0, sizeof(nops));
		memcpy(nops, init, sizeof(init));
		cie = fb__cie(&g, false, "zR", nops, sizeof(nops));
	}
	while (g.n + 40 < sizeof(g.b))
		fb__fde(&g, false, true, cie, 0x1000 + g.n * 16, 8, (const __u8[]){ 0x41, 0x0e, 16 }, 3);
	n = elf__build(img, sizeof(img), &g, false);
	load_and_poke(img, n);

	/* Huge advances, offsets, expression lengths; deep remember_state. */
	{
		static const __u8 progs[][24] = {
			{ 0x04, 0xff, 0xff, 0xff, 0xff, 0x0e, 0x10 },
			{ 0x0c, 0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
			{ 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f },
			{ 0x10, 0x06, 0xff, 0xff, 0xff, 0xff, 0x0f },
			{ 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
			  0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a },
			{ 0x0b, 0x0b },
			{ 0x01, 0, 0, 0, 0, 0, 0, 0, 0 }, /* set_loc backwards */
			{ 0x86, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
			{ 0x12, 0x07, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f },
			{ 0xff },
		};

		for (k = 0; k < sizeof(progs) / sizeof(progs[0]); k++) {
			g.n = 0;
			cie = fb__cie(&g, false, "zR", init, sizeof(init));
			for (i = 0; i < 20; i++)
				fb__fde(&g, false, true, cie, 0x1000 + i * 0x100, 0x100, progs[k],
					sizeof(progs[k]));
			n = elf__build(img, sizeof(img), &g, false);
			load_and_poke(img, n);
		}
	}

	/* Random bytes after a valid CIE, and random flips of a valid image. */
	for (k = 0; k < 2000; k++) {
		g = f;
		for (i = 0; i < 1 + k % 8; i++)
			g.b[rand_r(&seed) % g.n] = (__u8)rand_r(&seed);
		n = elf__build(img, sizeof(img), &g, false);
		load_and_poke(img, n);
		n = elf__build(img, sizeof(img), &f, k & 1);
		for (i = 0; i < 1 + k % 4; i++)
			img[rand_r(&seed) % n] = (__u8)rand_r(&seed);
		load_and_poke(img, n);
	}

	/* Not ELF, not x86-64, empty. */
	assert_int_equal(cfi_table__load_mem("\x7f" "ELF", 4, &t), -ENOEXEC);
	assert_int_equal(cfi_table__load_mem(NULL, 0, &t), -ENOEXEC);
	n = elf__build(img, sizeof(img), &f, false);
	img[offsetof(Elf64_Ehdr, e_machine)] = EM_AARCH64;
	assert_int_equal(cfi_table__load_mem(img, n, &t), -ENOEXEC);
	g.n = 0;
	n = elf__build(img, sizeof(img), &g, false);
	assert_int_equal(cfi_table__load_mem(img, n, &t), -ENOENT);
}

static void test_program_that_goes_wrong_midway_keeps_only_the_rows_before(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 prog[] = { 0x44, 0x0e, 16, 0x44, 0x3f /* unknown op */, 0x0e, 99 };
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t cie = fb__cie(&f, false, "zR", init, sizeof(init));

	fb__fde(&f, false, true, cie, 0x1000, 0x40, prog, sizeof(prog));
	fb__fde(&f, false, true, cie, 0x1040, 0x40, NULL, 0);
	t = table_of(&f, false);
	assert_rule(t, 0x1000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x1004, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x1008);
	assert_no_rule(t, 0x103f);
	assert_rule(t, 0x1040, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_int_equal(cfi_table__dropped(t), 1);
	cfi_table__free(t);
}

static void test_overlapping_fdes_keep_the_first_and_clip_the_rest(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 a[] = { 0x48, 0x0e, 16 };
	static const __u8 b[] = { 0x44, 0x0e, 48 };
	struct fb f = { .n = 0 };
	struct cfi_table *t;
	size_t cie = fb__cie(&f, false, "zR", init, sizeof(init));

	/* listed out of order: [0x1010, 0x1030) then [0x1000, 0x1020) */
	fb__fde(&f, false, true, cie, 0x1010, 0x20, b, sizeof(b));
	fb__fde(&f, false, true, cie, 0x1000, 0x20, a, sizeof(a));
	t = table_of(&f, false);
	assert_rule(t, 0x1000, CFI_BASE_RSP, 8, CFI_RBP_SAME, 0);
	assert_rule(t, 0x1008, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	assert_rule(t, 0x101f, CFI_BASE_RSP, 16, CFI_RBP_SAME, 0);
	/* the second FDE from where the first ends, with its rule there */
	assert_rule(t, 0x1020, CFI_BASE_RSP, 48, CFI_RBP_SAME, 0);
	assert_rule(t, 0x102f, CFI_BASE_RSP, 48, CFI_RBP_SAME, 0);
	assert_no_rule(t, 0x1030);
	/* one row per change: 0x1000, 0x1008, 0x1020 and the gap at 0x1030 */
	assert_int_equal(cfi_table__rows(t), 4);
	cfi_table__free(t);
}

/* ---------------------------------------------------------------- walks over fake stacks */

/*
 *  0x1000..0x1100  F1: rsp+32 from +4 (sub $24 after entry)
 *  0x1100..0x1200  F1b: rsp+8 (the function after F1)
 *  0x2000..0x2100  F2: rbp frame, cfa rbp+16 from +4
 *  0x3000..0x3100  F3: cfa = *(rbp-8) (unsupported)
 *  0x4000..0x4100  F4: return address undefined (thread start)
 *  0x5000..0x5100  F5: cfa rsp+0 (does not go up)
 *  0x6000..0x6100  F6: PLT expression from +16
 *  0x10000..0x11000 mapped, no CFI (JIT)
 */
struct fake {
	struct cfi_table *t;
	__u64 words[64];
	struct unwind_stack st;
};

#define FAKE_BASE 0x7ffff000ull
#define W(i) (FAKE_BASE + 8 * (i))

static int fake__lookup(void *ctx, __u64 ip, const struct cfi_table **ret_table,
			__u64 *ret_bias)
{
	struct fake *fk = ctx;

	if (ip >= 0x1000 && ip < 0x7000) {
		*ret_table = fk->t;
		*ret_bias = 0;
		return 0;
	}
	if (ip >= 0x10000 && ip < 0x11000) {
		*ret_table = NULL;
		*ret_bias = 0;
		return 0;
	}
	return -ENOENT;
}

static int fake_setup(void **state)
{
	static const __u8 init[] = { CIE_STD_INIT };
	static const __u8 f1[] = { 0x44, 0x0e, 32 };
	static const __u8 f3[] = { 0x0f, 3, 0x77, 0x08, 0x06 }; /* cfa = *(rsp+8): unsupported */
	/* GCC's realigned frame: cfa = *(rbp-8), rbp saved at rbp+0 */
	static const __u8 f7[] = { 0x0f, 3, 0x76, 0x78, 0x06, 0x10, 6, 2, 0x76, 0x00 };
	static const __u8 f4[] = { 0x07, 0x10 };
	static const __u8 f5[] = { 0x0e, 0 };
	static const __u8 f6[] = { 0x0e, 16, 0x50, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a,
				   0x3b, 0x2a, 0x33, 0x24, 0x22 };
	struct fake *fk = calloc(1, sizeof(*fk));
	struct fb f = { .n = 0 };
	size_t cie;

	assert_non_null(fk);
	cie = fb__cie(&f, false, "zR", init, sizeof(init));
	fb__fde(&f, false, true, cie, 0x1000, 0x100, f1, sizeof(f1));
	fb__fde(&f, false, true, cie, 0x1100, 0x100, NULL, 0);
	fb__fde(&f, false, true, cie, 0x2000, 0x100, fp_prologue, 8);
	fb__fde(&f, false, true, cie, 0x3000, 0x100, f3, sizeof(f3));
	fb__fde(&f, false, true, cie, 0x4000, 0x100, f4, sizeof(f4));
	fb__fde(&f, false, true, cie, 0x5000, 0x100, f5, sizeof(f5));
	fb__fde(&f, false, true, cie, 0x6000, 0x100, f6, sizeof(f6));
	fb__fde(&f, false, true, cie, 0x6800, 0x100, f7, sizeof(f7));
	fk->t = table_of(&f, false);
	fk->st = (struct unwind_stack){ .base = FAKE_BASE, .data = fk->words,
					.len = sizeof(fk->words) };
	*state = fk;
	return 0;
}

static int fake_teardown(void **state)
{
	struct fake *fk = *state;

	cfi_table__free(fk->t);
	free(fk);
	return 0;
}

static int fake__walk(struct fake *fk, __u64 ip, __u64 sp, __u64 bp, __u64 *pcs, int max,
		      enum unwind_stop *why)
{
	struct unwind_regs r = { .ip = ip, .sp = sp, .bp = bp };

	return unwind(&r, &fk->st, fake__lookup, fk, pcs, max, why);
}

static void test_cfi_and_rbp_frames_chain_up_to_an_undefined_return_address(void **state)
{
	struct fake *fk = *state;
	enum unwind_stop why;
	__u64 pcs[16];
	int n;

	/* F1 at +0x10: ra at sp+24, returning to 0x1100 = F1's end (a noreturn call) */
	fk->words[3] = 0x1100;
	/* then F1 again, by ip - 1 = 0x10ff: sp = W(4), ra at W(4)+24 = W(7) */
	fk->words[7] = 0x2050;
	/* F2 with rbp = W(10): saved rbp W(10), ra W(11) */
	fk->words[10] = W(20);
	fk->words[11] = 0x4010;
	n = fake__walk(fk, 0x1010, W(0), W(10), pcs, 16, &why);
	assert_int_equal(n, 4);
	assert_int_equal(pcs[0], 0x1010);
	assert_int_equal(pcs[1], 0x1100);
	assert_int_equal(pcs[2], 0x2050);
	assert_int_equal(pcs[3], 0x4010);
	assert_int_equal(why, UNWIND_ROOT);
	/* the first frame is not a return address: its own row (F1b, rsp+8) is used */
	fk->words[0] = 0x4030;
	n = fake__walk(fk, 0x1100, W(0), W(10), pcs, 16, &why);
	assert_int_equal(n, 2);
	assert_int_equal(pcs[1], 0x4030);
}

static void test_frame_pointers_carry_the_walk_through_code_without_cfi(void **state)
{
	struct fake *fk = *state;
	enum unwind_stop why;
	__u64 pcs[16];
	int n;

	/* JIT frame: rbp = W(4): [W(4)] = W(12), [W(5)] = 0x10100 (JIT again) */
	fk->words[4] = W(12);
	fk->words[5] = 0x10100;
	/* JIT frame at rbp W(12): caller 0x4020 (F4: root) */
	fk->words[12] = 0;
	fk->words[13] = 0x4020;
	n = fake__walk(fk, 0x10010, W(0), W(4), pcs, 16, &why);
	assert_int_equal(n, 3);
	assert_int_equal(pcs[1], 0x10100);
	assert_int_equal(pcs[2], 0x4020);
	assert_int_equal(why, UNWIND_ROOT);

	/* rbp below sp, outside the copy, or misaligned: no frame pointer to trust */
	n = fake__walk(fk, 0x10010, W(8), W(4), pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_NO_CFI);
	n = fake__walk(fk, 0x10010, W(0), W(64), pcs, 16, &why);
	assert_int_equal(why, UNWIND_NO_CFI);
	n = fake__walk(fk, 0x10010, W(0), W(4) + 3, pcs, 16, &why);
	assert_int_equal(why, UNWIND_NO_CFI);
	/* a zero return address from a frame pointer is garbage, not a root */
	fk->words[5] = 0;
	n = fake__walk(fk, 0x10010, W(0), W(4), pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_BAD_FRAME);
}

static void test_each_way_a_walk_ends_is_reported(void **state)
{
	struct fake *fk = *state;
	enum unwind_stop why;
	__u64 pcs[16];
	int n;

	/* unmapped return address: not reported as a frame */
	fk->words[3] = 0xdead0000;
	n = fake__walk(fk, 0x1010, W(0), 0, pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_UNMAPPED);
	/* an expression CFA */
	n = fake__walk(fk, 0x3000, W(0), W(8), pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_CFA_EXPR);
	/* rsp+0: the stack would not grow */
	n = fake__walk(fk, 0x5010, W(0), 0, pcs, 16, &why);
	assert_int_equal(why, UNWIND_BAD_FRAME);
	/* the CFA lands past the copy */
	n = fake__walk(fk, 0x1010, W(62), 0, pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_END_OF_COPY);
	/* zero return address by a CFI rule: the end of the stack */
	fk->words[3] = 0;
	n = fake__walk(fk, 0x1010, W(0), 0, pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_ROOT);
	/* the caller's array is full */
	fk->words[3] = 0x1050;
	fk->words[7] = 0x1050;
	n = fake__walk(fk, 0x1010, W(0), 0, pcs, 2, &why);
	assert_int_equal(n, 2);
	assert_int_equal(why, UNWIND_MAX_FRAMES);
	/* not mapped at all */
	n = fake__walk(fk, 0x99999, W(0), 0, pcs, 16, &why);
	assert_int_equal(n, 1);
	assert_int_equal(why, UNWIND_UNMAPPED);
	assert_int_equal(fake__walk(fk, 0x1010, W(0), 0, pcs, 0, &why), -EINVAL);
	assert_string_equal(unwind_stop__str(UNWIND_END_OF_COPY), "stack copy ended");
}

static void test_plt_frame_cfa_depends_on_the_offset_in_the_entry(void **state)
{
	struct fake *fk = *state;
	enum unwind_stop why;
	__u64 pcs[16];

	fk->words[0] = 0x4010; /* ra if cfa = rsp + 8 */
	fk->words[1] = 0x4020; /* ra if cfa = rsp + 16 */
	/* (ip & 15) = 6 < 11: before the push */
	fake__walk(fk, 0x6016, W(0), 0, pcs, 16, &why);
	assert_int_equal(pcs[1], 0x4010);
	/* (ip & 15) = 11: after the push */
	fake__walk(fk, 0x601b, W(0), 0, pcs, 16, &why);
	assert_int_equal(pcs[1], 0x4020);
	assert_int_equal(why, UNWIND_ROOT);
}

static void test_realigned_frame_finds_its_cfa_and_rbp_through_rbp(void **state)
{
	struct fake *fk = *state;
	enum unwind_stop why;
	struct cfi_rule r;
	__u64 pcs[16];
	int n;

	assert_int_equal(cfi_table__find(fk->t, 0x6810, &r), 0);
	assert_int_equal(r.cfa_base, CFI_BASE_DEREF_RBP);
	assert_int_equal(r.cfa_off, -8);
	assert_int_equal(r.rbp_rule, CFI_RBP_AT_RBP);
	/* rbp = W(5): the entry sp is kept at rbp-8 = W(4); ra at cfa-8 */
	fk->words[4] = W(12);
	fk->words[5] = W(20); /* the caller's rbp, saved at rbp+0 */
	fk->words[11] = 0x2010; /* into the frame-pointer function F2 at 0x2000 */
	fk->words[20] = W(30);  /* F2's frame: saved rbp, then ra */
	fk->words[21] = 0x4010;
	n = fake__walk(fk, 0x6810, W(1), W(5), pcs, 16, &why);
	assert_int_equal(n, 3);
	assert_int_equal(pcs[1], 0x2010);
	assert_int_equal(pcs[2], 0x4010); /* reached only with the restored rbp */
	assert_int_equal(why, UNWIND_ROOT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_without_frame_pointers_unwinds_through_main_to_start),
		cmocka_unit_test(test_chain_in_a_pthread_unwinds_to_the_thread_start_in_libc),
		cmocka_unit_test(test_a_memo_answers_for_addresses_walked_before_with_the_same_frames),
		cmocka_unit_test(test_the_target_table_is_bounded),
		cmocka_unit_test(test_a_targets_memo_is_emptied_when_a_mapping_it_knew_went),
		cmocka_unit_test(test_a_targets_memo_stays_when_a_reread_only_adds_mappings),
		cmocka_unit_test(test_the_memo_keeps_two_addresses_per_set_the_recent_ones),
		cmocka_unit_test(test_an_entry_point_mapped_after_the_maps_were_read_is_found),
		cmocka_unit_test(test_short_stack_copy_ends_the_walk_with_correct_frames_only),
		cmocka_unit_test(test_rules_of_this_binary_match_the_assembly_prologue),
		cmocka_unit_test(test_real_libraries_on_demand_match_whole),
		cmocka_unit_test(test_a_cfi_table_maps_file_offsets_as_the_symbols_do),
		cmocka_unit_test(test_a_cfi_table_maps_offsets_through_its_load_segments),
		cmocka_unit_test(test_frame_pointer_prologue_rules_follow_each_instruction),
		cmocka_unit_test(test_remember_and_restore_state_bring_back_the_cfa),
		cmocka_unit_test(test_plt_expression_and_signal_frames_are_recognised),
		cmocka_unit_test(test_debug_frame_is_read_and_eh_frame_wins_where_both_cover),
		cmocka_unit_test(test_eh_frame_is_found_through_pt_gnu_eh_frame_without_sections),
		cmocka_unit_test(test_fdes_are_built_on_demand_through_the_eh_frame_hdr_table),
		cmocka_unit_test(test_fdes_built_on_demand_stay_bounded),
		cmocka_unit_test(test_fdes_built_on_demand_stay_bounded_in_bytes),
		cmocka_unit_test(test_dwarf64_entries_and_pcrel_pointers_are_decoded),
		cmocka_unit_test(test_hostile_cfi_is_refused_or_bounded),
		cmocka_unit_test(test_program_that_goes_wrong_midway_keeps_only_the_rows_before),
		cmocka_unit_test(test_overlapping_fdes_keep_the_first_and_clip_the_rest),
		cmocka_unit_test_setup_teardown(
			test_cfi_and_rbp_frames_chain_up_to_an_undefined_return_address,
			fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(
			test_frame_pointers_carry_the_walk_through_code_without_cfi, fake_setup,
			fake_teardown),
		cmocka_unit_test_setup_teardown(test_each_way_a_walk_ends_is_reported, fake_setup,
						fake_teardown),
		cmocka_unit_test_setup_teardown(test_plt_frame_cfa_depends_on_the_offset_in_the_entry,
						fake_setup, fake_teardown),
		cmocka_unit_test_setup_teardown(test_realigned_frame_finds_its_cfa_and_rbp_through_rbp,
						fake_setup, fake_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
