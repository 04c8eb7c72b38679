/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The launching thread's Python frames, read at the uprobe while the thread
 * is stopped in cuLaunchKernel: bpf/python.h's walk, step for step (the
 * reference is user/python/pyruntime.c:pyruntime__walk_key). BPF-only.
 */
#ifndef GP_PYWALK_BPF_H
#define GP_PYWALK_BPF_H

#include "bpf/python.h"

/* tgid -> where that process's CPython keeps threads and frames. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* filled by the loader only: nothing to make at load */
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct gp_py_config);
} py_configs SEC(".maps");

/*
 * host tid -> its PyThreadState, checked again at every use; or, for a
 * thread without one (bit 0 set), when it was last looked for: the list is
 * walked again only after PY_NEG_RETRY_NS, not at every launch.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} py_tstates SEC(".maps");

#define PY_NEG_RETRY_NS 1000000000ull

static __always_inline int rd64(__u64 addr, __u64 *v)
{
	*v = 0;
	return bpf_probe_read_user(v, sizeof(*v), (void *)addr);
}

static __always_inline int rd32(__u64 addr, __u64 *v)
{
	__u32 x = 0;
	int err = bpf_probe_read_user(&x, sizeof(x), (void *)addr);

	*v = x;
	return err;
}

/*
 * The loops run under bpf_loop(): the verifier checks a callback once, where
 * an open loop is checked once per iteration it can take (512 thread states
 * and 64 frames: most of the 0.2-0.4 s of kernel time the program cost to
 * load, at every start of the loader).
 */
struct py_find {
	const struct gp_py_config *c;
	__u64 key, interp, ts;
	__u32 interps, threads; /* interpreters left behind; thread states of this one seen */
	__u32 status;           /* gp_py_walk_status once the search ends */
	bool in_list;           /* ts is this interpreter's list */
	bool found;
};

/* One step of step 2: start an interpreter's list, check a thread state, or move on. */
static long py_find_step(__u32 idx, void *arg)
{
	struct py_find *x = arg;
	const struct gp_py_config *c = x->c;
	__u64 id = 0;

	if (!x->in_list) {
		if (x->interps >= GP_PY_MAX_INTERPS || !x->interp) {
			x->status = GP_PY_WALK_NO_THREAD;
			return 1;
		}
		if (rd64(x->interp + c->interp_threads_head, &x->ts))
			goto fault;
		x->in_list = true;
		x->threads = 0;
		return 0;
	}
	if (x->ts && x->threads < GP_PY_MAX_THREADS) {
		if (rd64(x->ts + c->tstate_thread_id, &id))
			goto fault;
		if (id == x->key) {
			x->found = true;
			return 1;
		}
		x->threads++;
		if (rd64(x->ts + c->tstate_next, &x->ts))
			goto fault;
		return 0;
	}
	if (rd64(x->interp + c->interp_next, &x->interp))
		goto fault;
	x->interps++;
	x->in_list = false;
	return 0;
fault:
	x->status = GP_PY_WALK_FAULT;
	return 1;
}

/*
 * A cached thread state is checked (its id field) and its frame field read
 * in one read of PY_TS_BLOCK bytes from the lower of the two, when they lie
 * that close (every supported version): a helper call less per launch.
 */
#define PY_TS_BLOCK 128u

/* The cached thread state at ts, still key's: its frame field into *ret_frame. */
static __always_inline bool py_tstate_still(const struct gp_py_config *c, __u64 ts, __u64 key,
					    __u8 *buf, __u64 *ret_frame, bool *ret_have_frame)
{
	__u32 a = c->tstate_thread_id, b = c->tstate_frame, lo = a < b ? a : b;
	__u64 id = 0;

	if ((a > b ? a - b : b - a) + 8 <= PY_TS_BLOCK) {
		if (bpf_probe_read_user(buf, PY_TS_BLOCK, (void *)(ts + lo)))
			return false;
		if (*(__u64 *)&buf[(a - lo) & (PY_TS_BLOCK - 1)] != key)
			return false;
		*ret_frame = *(__u64 *)&buf[(b - lo) & (PY_TS_BLOCK - 1)];
		*ret_have_frame = true;
		return true;
	}
	return !rd64(ts + a, &id) && id == key;
}

/*
 * Steps 1-2: the thread state whose id field equals key; 0 when none. When
 * a cached one is still key's, *ret_have_frame says its frame field was
 * read into *ret_frame too (buf: PY_TS_BLOCK + 8 bytes of scratch).
 */
static __always_inline __u64 py_find_tstate(const struct gp_py_config *c, __u32 tid, __u64 key,
					    __u64 now, __u32 *status, __u8 *buf, __u64 *ret_frame,
					    bool *ret_have_frame)
{
	__u64 *cached = bpf_map_lookup_elem(&py_tstates, &tid);
	__u64 neg;
	struct py_find x = { .c = c, .key = key, .status = GP_PY_WALK_NO_THREAD };

	if (cached && (*cached & 1) && now - (*cached & ~1ull) < PY_NEG_RETRY_NS) {
		*status = GP_PY_WALK_NO_THREAD;
		return 0;
	}
	if (cached && *cached && !(*cached & 1) &&
	    py_tstate_still(c, *cached, key, buf, ret_frame, ret_have_frame))
		return *cached;
	if (rd64(c->interp_head_addr, &x.interp)) {
		*status = GP_PY_WALK_FAULT;
		return 0;
	}
	if (!x.interp) {
		*status = GP_PY_WALK_NO_RUNTIME;
		return 0;
	}
	/* Each interpreter: a step to start, one per thread state, one to leave. */
	bpf_loop(GP_PY_MAX_INTERPS * (GP_PY_MAX_THREADS + 2) + 1, py_find_step, &x, 0);
	if (x.found) {
		bpf_map_update_elem(&py_tstates, &tid, &x.ts, BPF_ANY);
		return x.ts;
	}
	*status = x.status;
	if (x.status == GP_PY_WALK_NO_THREAD) {
		neg = now | 1;
		bpf_map_update_elem(&py_tstates, &tid, &neg, BPF_ANY);
	}
	return 0;
}

/*
 * One frame's fields, read in one call: the first PY_FRAME_READ bytes of the
 * frame hold every field the walk needs in each supported version (3.10's
 * f_lasti ends at byte 100, 3.11-3.13's owner byte at 71). A helper call
 * per field cost about 0.1 us each, four per frame: on a 40-frame PyTorch
 * stack most of the program's time. When the offsets lie beyond it, or the
 * read fails (a frame at the end of its mapping), the fields are read one
 * by one.
 */
#define PY_FRAME_READ 104u
#define PY_FRAME_MASK 127u

/*
 * 3.11 and later keep a thread's frames side by side on its data stack, the
 * newest highest: one read of a frame's page, from the page's start up to
 * the frame, holds the frames it was called from on that page too (one
 * read where each frame took one: on the stub's deep stacks the walk went
 * from 5.4 to 2.0 us per launch).
 * A frame on the C stack (3.12's entry frames, near sp) is read alone.
 */
#define PY_WIN 4096u
#define PY_CSTACK_NEAR (8ull << 20)

struct py_frame_buf {
	__u8 b[PY_FRAME_MASK + 1 + 8];            /* masked offsets stay inside */
	__u8 win[PY_WIN + PY_FRAME_MASK + 1 + 8]; /* [win_base, win_base + win_len) */
};

struct py_win {
	__u64 base, len; /* len 0: empty */
	__u64 sp;        /* the walked thread's user sp: its C stack lies above */
	bool on;         /* frames on a data stack (3.11+), read by the page */
};

/*
 * The first PY_FRAME_READ bytes of the frame at f, from the page window
 * (read now when f is outside it) or read alone into fb->b; NULL when
 * neither read worked.
 */
static __always_inline const __u8 *py_frame_bytes(struct py_frame_buf *fb, struct py_win *w,
						  __u64 f)
{
	__u64 off = f - w->base;
	__u32 len;

	if (off < PY_WIN && off + PY_FRAME_READ <= w->len) /* len 0: no window */
		return &fb->win[off & (PY_WIN - 1)];
	if (w->on && !(f >= w->sp && f - w->sp < PY_CSTACK_NEAR)) {
		len = (__u32)(f & (PY_WIN - 1)) + PY_FRAME_READ;
		if (!bpf_probe_read_user(fb->win, len, (void *)(f & ~(__u64)(PY_WIN - 1)))) {
			w->base = f & ~(__u64)(PY_WIN - 1);
			w->len = len;
			return &fb->win[f & (PY_WIN - 1)];
		}
		w->len = 0;
	}
	return bpf_probe_read_user(fb->b, PY_FRAME_READ, (void *)f) ? NULL : fb->b;
}

static __always_inline bool py_frame_bulk_ok(const struct gp_py_config *c)
{
	return c->frame_code <= PY_FRAME_READ - 8 && c->frame_previous <= PY_FRAME_READ - 8 &&
	       c->frame_instr <= PY_FRAME_READ - c->instr_size &&
	       (c->entry_kind == GP_PY_ENTRY_NONE || c->frame_entry <= PY_FRAME_READ - 1);
}

/* code, instr, entry byte and previous frame of the frame at f; 0 or -errno. */
static __always_inline int py_frame_fields(const struct gp_py_config *c, struct py_frame_buf *fb,
					   struct py_win *w, bool bulk, __u64 f, __u64 *code,
					   __u64 *instr, __u64 *b, __u64 *prev)
{
	const __u8 *p = bulk ? py_frame_bytes(fb, w, f) : NULL;

	if (p) {
		*code = *(__u64 *)&p[c->frame_code & PY_FRAME_MASK];
		*instr = c->instr_size == 8 ? *(__u64 *)&p[c->frame_instr & PY_FRAME_MASK]
					    : *(__u32 *)&p[c->frame_instr & PY_FRAME_MASK];
		*b = p[c->frame_entry & PY_FRAME_MASK];
		*prev = *(__u64 *)&p[c->frame_previous & PY_FRAME_MASK];
		return 0;
	}
	if (rd64(f + c->frame_code, code))
		return -1;
	if (c->instr_size == 8 ? rd64(f + c->frame_instr, instr) : rd32(f + c->frame_instr, instr))
		return -1;
	*b = 0;
	if (c->entry_kind != GP_PY_ENTRY_NONE && bpf_probe_read_user(b, 1, (void *)(f + c->frame_entry)))
		return -1;
	return rd64(f + c->frame_previous, prev) ? -2 : 0;
}

/* The walk's position, and the hash of the frames walked so far (the stack cache's key). */
struct py_walk_at {
	struct py_win w;
	__u64 f;
	__u64 hash;
	__u32 n, status;
	bool bulk;
};

#define PY_HASH_SEED 0x243f6a8885a308d3ull
#define PY_HASH_MUL 0x9e3779b97f4a7c15ull

/* One word into the frames' hash: a multiply-rotate step (order matters). */
static __always_inline __u64 py_hash_step(__u64 h, __u64 w)
{
	h = (h ^ w) * PY_HASH_MUL;
	return h << 29 | h >> 35;
}

/*
 * What a walk fills: the frames, why it stopped, and room to read frames
 * into; and the walk's position, kept here, in the caller's memory, not in
 * the loop's context on the stack: the verifier tracks what the stack
 * holds, and went through the loop's body once for each position it could
 * see there (about 70 times: 15,000 of the program's then 27,000
 * instructions processed at every loader start); memory is unknown to it.
 */
struct py_out {
	struct gp_py_frame py[GP_PY_MAX_FRAMES];
	struct py_frame_buf fb;
	__u32 status; /* gp_py_walk_status */
	struct py_walk_at at;
	__u64 hash;   /* of the frames copied: 0 when none */
	__u64 now;    /* the caller's: the launch's bpf_ktime_get_ns() */
};

struct py_walk {
	const struct gp_py_config *c;
	struct py_out *o;
};

/* One frame of step 4 into o->py[idx]; idx == GP_PY_MAX_FRAMES: more than fit. */
static long py_walk_step(__u32 idx, void *arg)
{
	struct py_walk *ctx = arg;
	const struct gp_py_config *c = ctx->c;
	struct py_out *o = ctx->o;
	struct py_walk_at *x = &o->at;
	__u64 code = 0, instr = 0, b = 0, prev = 0;
	__u32 i;
	int err;

	if (!x->f)
		return 1;
	if (idx >= GP_PY_MAX_FRAMES) {
		x->status = GP_PY_WALK_TRUNCATED;
		return 1;
	}
	err = py_frame_fields(c, &o->fb, &x->w, x->bulk, x->f, &code, &instr, &b, &prev);
	if (err == -1)
		goto fault;
	if (code & GP_PY_FRAME_FLAGS) {
		x->status = GP_PY_WALK_BAD_FRAME;
		return 1;
	}
	if (c->entry_kind == GP_PY_ENTRY_IS_ENTRY && b) {
		code |= GP_PY_FRAME_ENTRY;
	} else if (c->entry_kind == GP_PY_ENTRY_OWNER && (b & 0xff) == c->entry_value) {
		code = GP_PY_FRAME_SHIM;
		instr = 0;
	}
	/*
	 * idx < GP_PY_MAX_FRAMES, a power of two: the mask says so to the
	 * verifier, behind a barrier so the compiler keeps it.
	 */
	i = idx;
	barrier_var(i);
	i &= GP_PY_MAX_FRAMES - 1;
	o->py[i].code = code;
	o->py[i].instr = instr;
	x->hash = py_hash_step(py_hash_step(x->hash, code), instr);
	x->n = idx + 1;
	if (err)
		goto fault;
	x->f = prev;
	return 0;
fault:
	x->status = GP_PY_WALK_FAULT;
	return 1;
}

/*
 * Steps 1-4 into o->py (GP_PY_MAX_FRAMES of them); returns the number of
 * frames, o->status why the walk stopped; sp: the walked thread's user
 * stack pointer (0: not known); o->now: bpf_ktime_get_ns() of the launch
 * (BPF functions take five arguments at most). A function of its own, not inlined: the
 * verifier checks it once, not once for each of its two callers (40,000
 * instructions processed at every loader start inlined, 27,000 this way,
 * 8,400 with the walk's position in o, see struct py_out).
 */
__noinline int py_walk(const struct gp_py_config *c, __u32 tid, __u64 key, struct py_out *o,
		       __u64 sp)
{
	struct py_walk x = { .c = c, .o = o };
	__u32 status = GP_PY_WALK_OK;
	bool have_frame = false;
	__u64 ts;

	if (!c || !o) /* the verifier sees a function's pointers as maybe NULL */
		return 0;
	__builtin_memset(&o->at, 0, sizeof(o->at));
	o->hash = 0;
	o->at.hash = PY_HASH_SEED;
	o->at.status = GP_PY_WALK_OK;
	o->at.bulk = py_frame_bulk_ok(c);
	o->at.w.sp = sp;
	o->at.w.on = c->version >= 0x030b0000;
	ts = py_find_tstate(c, tid, key, o->now, &status, o->fb.b, &o->at.f, &have_frame);
	if (!ts) {
		o->status = status;
		return 0;
	}
	if (!have_frame && rd64(ts + c->tstate_frame, &o->at.f))
		goto fault;
	if (c->cframe_current_frame != GP_PY_NO_OFFSET && o->at.f &&
	    rd64(o->at.f + c->cframe_current_frame, &o->at.f))
		goto fault;
	bpf_loop(GP_PY_MAX_FRAMES + 1, py_walk_step, &x, 0);
	o->status = o->at.status;
	o->hash = o->at.n ? o->at.hash : 0;
	return o->at.n;
fault:
	o->status = GP_PY_WALK_FAULT;
	return 0;
}

#endif /* GP_PYWALK_BPF_H */
