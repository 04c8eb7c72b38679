/* SPDX-License-Identifier: MIT */
/* Raw and resolved launch stacks (stacks.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/session/stacks.h"
#include "user/session/target.h"
#include "user/space/space.h"
#include "user/python/pycode.h"
#include "user/unwind/unwind.h"

/* The frame CPython's evaluation loop runs Python frames in. */
#define PY_EVAL_FRAME "_PyEval_EvalFrameDefault"

size_t raw_stack__len(const struct raw_stack *r)
{
	return offsetof(struct raw_stack, w) + 8ull * (r->n + 2ull * r->npy);
}

int raw_stack__from_event(struct target *t, const struct gp_launch_event *e, size_t size,
			  struct raw_stack *ret, struct stack_walk_info *ret_info)
{
	__u32 used = 0;
	__u64 pcs[GP_MAX_STACK + 1], ra_at[GP_MAX_STACK + 1];
	size_t fp_bytes, py_bytes;
	enum unwind_stop why = UNWIND_ROOT;
	int n;

	if (size < GP_LAUNCH_EVENT_HDR || e->nr_frames > GP_MAX_STACK || e->nr_py > GP_PY_MAX_FRAMES)
		return -EINVAL;
	fp_bytes = 8ull * e->nr_frames;
	py_bytes = sizeof(struct gp_py_frame) * e->nr_py;
	if (GP_LAUNCH_EVENT_HDR + fp_bytes + py_bytes + e->stack_len > size)
		return -EINVAL;
	memset(ret, 0, offsetof(struct raw_stack, w));
	ret->pid = e->pid;
	if (t)
		ret->epoch = space__epoch(t->space);
	if (e->flags & GP_EV_F_COPY_SKIPPED) {
		ret->n = 0;
		ret->why = STACK_WHY_SKIPPED;
	} else if (e->stack_len) {
		const __u8 *copy = (const __u8 *)e + GP_LAUNCH_EVENT_HDR + fp_bytes + py_bytes;
		struct unwind_regs regs = { .ip = e->ip, .sp = e->sp, .bp = e->bp };
		struct unwind_stack st = { .base = GP_STACK_COPY_BASE(e->sp), .data = copy,
					   .len = e->stack_len,
					   .used = &used, .ra_at = ra_at };
		struct space_walk w = { 0 };
		struct unwind_memo *memo = NULL;

		if (t) {
			/* An event of an older generation is walked in the mappings of its time. */
			space__walk(t->space, e->maps_gen, &w);
			ret->epoch = w.epoch;
			memo = space_walk__memo(&w);
		}
		n = t ? unwind_memo_walk(&regs, &st, space_walk__lookup, &w, memo, pcs,
					 GP_MAX_STACK + 1, &why) : 0;
		/* Stopped at an address in no mapping: maybe a library loaded since the maps were read. */
		if (why == UNWIND_UNMAPPED && t && space_walk__reread(&w, e->ts_ns)) {
			n = unwind_memo_walk(&regs, &st, space_walk__lookup, &w, space_walk__memo(&w),
					     pcs, GP_MAX_STACK + 1, &why);
			if (why != UNWIND_UNMAPPED)
				space_walk__reread_helped(&w);
		}
		if (n < 1) {
			n = 1;
			why = UNWIND_UNMAPPED;
		}
		/* pcs[0] is the probed entry point: the launch API frame stands for it. */
		ret->n = n - 1;
		memcpy(ret->w, pcs + 1, 8ull * ret->n);
		ret->why = why;
		if (why == UNWIND_END_OF_COPY)
			used = e->stack_len > UINT32_MAX / 2 ? UINT32_MAX : 2 * e->stack_len;
		for (int i = 0; ret_info && i < ret->n; i++)
			ret_info->ra_off[i] = ra_at[i + 1] >= e->sp && ra_at[i + 1] - e->sp < UINT32_MAX
						      ? (__u32)(ra_at[i + 1] - e->sp) : UINT32_MAX;
	} else {
		ret->n = e->nr_frames > 1 ? e->nr_frames - 1 : 0;
		memcpy(ret->w, e->stack + 1, 8ull * ret->n);
		ret->why = STACK_WHY_FP;
	}
	if (ret_info) {
		ret_info->need = used;
		for (__u32 i = e->stack_len ? ret->n : 0; i < GP_MAX_STACK; i++)
			ret_info->ra_off[i] = UINT32_MAX;
	}
	if (e->flags & GP_EV_F_PY) {
		ret->py_status = RAW_PY_WALKED | ((e->flags >> GP_EV_PY_STATUS_SHIFT) & RAW_PY_STATUS) |
				 (e->flags & GP_EV_F_PY_MAIN ? RAW_PY_MAIN : 0);
		ret->npy = e->nr_py;
		memcpy(ret->w + ret->n, (const __u8 *)e + GP_LAUNCH_EVENT_HDR + fp_bytes, py_bytes);
	}
	return 0;
}

bool raw_stack__copy_word(const struct gp_launch_event *e, size_t size, __u64 off, __u64 *ret)
{
	__u64 base = GP_STACK_COPY_BASE(e->sp), at = e->sp + off, start;

	if (size < GP_LAUNCH_EVENT_HDR || e->nr_frames > GP_MAX_STACK || e->nr_py > GP_PY_MAX_FRAMES)
		return false;
	start = GP_LAUNCH_EVENT_HDR + 8ull * e->nr_frames + sizeof(struct gp_py_frame) * e->nr_py;
	if (start + e->stack_len > size || at < base || at - base + 8 > e->stack_len)
		return false;
	memcpy(ret, (const __u8 *)e + start + (at - base), 8);
	return true;
}

/* ------------------------------------------------------------ resolving */

struct py_cursor {
	const struct gp_py_frame *py;
	__u32 n, i;
	__u32 entry_kind;
	__u32 epoch;
};

static void add(struct resolved_stack *rs, const char *name, const char *file,
		const char *build_id, __u64 addr, __u32 line)
{
	if (rs->n >= sizeof(rs->f) / sizeof(rs->f[0]))
		return;
	rs->f[rs->n++] = (struct profile_frame){ .name = name, .file = file ? file : "",
						 .build_id = build_id ? build_id : "", .addr = addr,
						 .line = line };
}

/*
 * pprof's viewers cut "<...>" out of names as C++ template arguments, which
 * leaves "<module>" empty: CPython's <module>, <lambda>, <locals>... become
 * [module file.py], [lambda], [locals].
 */
static const char *py_name(struct resolved_stack *rs, const char *qualname, const char *file)
{
	const char *base = strrchr(file, '/');
	char *out;
	size_t o = 0;

	if (!strchr(qualname, '<') || rs->npyname >= GP_PY_MAX_FRAMES)
		return qualname;
	out = rs->pyname[rs->npyname++];
	if (!strcmp(qualname, "<module>")) {
		snprintf(out, sizeof(rs->pyname[0]), "[module %s]", base ? base + 1 : file);
		return out;
	}
	for (const char *q = qualname; *q && o + 1 < sizeof(rs->pyname[0]); q++)
		out[o++] = *q == '<' ? '[' : *q == '>' ? ']' : *q;
	out[o] = 0;
	return out;
}

static void add_py(struct target *t, const struct gp_py_frame *pf, __u32 epoch,
		   struct resolved_stack *rs, struct stack_stats *stats)
{
	struct pycode_frame f;
	int err = t->py ? pycode_cache__lookup_at(t->py, pf->code & ~GP_PY_FRAME_FLAGS, pf->instr,
						  epoch, &f) : -ENOENT;

	if (err) {
		stats->py_unresolved++;
		add(rs, err == -ESTALE ? "[python: code object replaced since]"
				       : "[python: unreadable code object]", "", "", 0, 0);
		return;
	}
	add(rs, py_name(rs, f.qualname, f.filename), f.filename, "", 0, f.line > 0 ? (__u32)f.line : 0);
}

/*
 * The Python frames one run of the evaluation loop holds, youngest first:
 * up to its entry (3.11: the frame marked ENTRY, included; 3.12+: the shim
 * record, consumed); 3.10 marks no entries: one frame per run.
 */
static void add_py_run(struct target *t, struct py_cursor *c, struct resolved_stack *rs,
		       struct stack_stats *stats)
{
	while (c->i < c->n) {
		const struct gp_py_frame *pf = &c->py[c->i++];

		if (pf->code == GP_PY_FRAME_SHIM)
			return;
		add_py(t, pf, c->epoch, rs, stats);
		if ((pf->code & GP_PY_FRAME_ENTRY) || c->entry_kind == GP_PY_ENTRY_NONE)
			return;
	}
}

static const char *py_status_str(__u32 st)
{
	switch (st) {
	case GP_PY_WALK_FAULT: return "python frames unreadable";
	case GP_PY_WALK_TRUNCATED: return "more python frames than copied";
	case GP_PY_WALK_BAD_FRAME: return "python frame chain broken";
	default: return "python";
	}
}

void raw_stack__resolve(struct target *t, const struct raw_stack *r, struct resolved_stack *ret,
			struct stack_stats *stats)
{
	struct space_gen *sym = t ? space__at_epoch(t->space, r->epoch) : NULL;
	struct py_cursor c = { .py = (const struct gp_py_frame *)(r->w + r->n), .n = r->npy,
			       .entry_kind = t ? t->py_entry_kind : GP_PY_ENTRY_NONE,
			       .epoch = r->epoch };
	__u32 py_status = r->py_status & RAW_PY_STATUS;
	bool main_py = r->py_status & RAW_PY_MAIN;
	const char *short_why = NULL; /* why the native frames end before a root */
	__u32 i, ns = 0;

	ret->n = 0;
	ret->npyname = 0;
	ret->truncated = false;
	for (i = 0; i < r->n && ns < GP_MAX_STACK; i++) {
		struct symbolized_frame *sf = &ret->sym[ns];

		/* Return addresses: the call is the byte before. */
		if (!sym || space_gen__name(sym, r->w[i] - 1, sf)) {
			stats->sym_failed++;
			if (r->why == STACK_WHY_FP)
				ret->truncated = true; /* a frame pointer into garbage */
			else
				short_why = "unmapped address";
			break;
		}
		ns++;
		if (sf->is_python && c.n)
			continue; /* a perf-map trampoline: the walked frames say more */
		if (!main_py && c.i < c.n && !strcmp(sf->name, PY_EVAL_FRAME)) {
			add_py_run(t, &c, ret, stats);
			continue;
		}
		add(ret, sf->name, sf->file, sf->build_id, sf->addr, sf->line);
	}
	if (r->why == STACK_WHY_FP && r->n >= GP_MAX_STACK - 1)
		ret->truncated = true; /* bpf_get_stack filled its buffer */
	if (r->why == STACK_WHY_LOST) {
		add(ret, "[stack unknown: its cache entry was gone]", "", "", 0, 0);
	} else if (r->why == STACK_WHY_SKIPPED) {
		stats->native_truncated++;
		add(ret, "[native frames not copied: ring buffer busy]", "", "", 0, 0);
	} else if (r->why != STACK_WHY_FP && (short_why || r->why != UNWIND_ROOT)) {
		stats->native_truncated++;
		if ((short_why || r->why == UNWIND_UNMAPPED) && t && space__gone_unread(t->space, sym))
			short_why = "process gone before its mappings were read";
		snprintf(ret->note[0], sizeof(ret->note[0]), "[%s: %s]",
			 c.i < c.n && !main_py ? "native frames missing" : "truncated",
			 short_why ? short_why : unwind_stop__str(r->why));
		add(ret, ret->note[0], "", "", 0, 0);
	}
	/*
	 * A thread without Python launched for the main thread (PyTorch's
	 * autograd threads run backward() for it): the main thread's Python
	 * frames follow this thread's root, marked.
	 */
	if (main_py && c.n)
		add(ret, "[launched for the main thread]", "", "", 0, 0);
	/* Python runs the native walk did not reach: still the thread's callers. */
	while (c.i < c.n)
		add_py_run(t, &c, ret, stats);
	if (py_status != GP_PY_WALK_OK && py_status != GP_PY_WALK_NO_THREAD &&
	    py_status != GP_PY_WALK_NO_RUNTIME && (r->py_status & RAW_PY_WALKED)) {
		stats->py_truncated++;
		snprintf(ret->note[1], sizeof(ret->note[1]), "[truncated: %s]", py_status_str(py_status));
		add(ret, ret->note[1], "", "", 0, 0);
	}
}

bool raw_stack__whole(const struct raw_stack *r, __u16 flags)
{
	if (flags & (GP_EV_F_COPY_PARTIAL | GP_EV_F_VMA_BUSY | GP_EV_F_COPY_SKIPPED))
		return false;
	return r->why != UNWIND_END_OF_COPY && r->why != UNWIND_UNMAPPED &&
	       r->why != STACK_WHY_SKIPPED && r->why != STACK_WHY_LOST;
}
