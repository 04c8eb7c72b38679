/* SPDX-License-Identifier: MIT */
/*
 * Data shared by the BPF Python-stack walk (run at cuLaunchKernel) and
 * user/python/: the per-process description of where CPython keeps its
 * threads and frames (struct gp_py_config, one map value per followed
 * process, filled by pyruntime__detect) and the raw frame records the walk
 * copies (struct gp_py_frame), which pycode_cache__lookup turns into
 * function, file and line. Plain data only.
 *
 * THE WALK. user/python/pyruntime.c:pyruntime__walk_key is the reference
 * implementation; the BPF program must do exactly this, step for step, so
 * that both read the same words. read64/read32/read8 are
 * bpf_probe_read_user of that many bytes (zero-extended); any failed read
 * ends the walk with GP_PY_WALK_FAULT, keeping the frames copied so far.
 *
 *  0. key = tid_kind == GP_PY_TID_NATIVE
 *         ? the thread's tid in its own pid namespace (what gettid() returns
 *           there; launch.h's ns_tid)
 *         : pthread_self() of the thread, which on x86-64 (glibc and musl)
 *           is the FS base: bpf_get_current_task_btf()->thread.fsbase.
 *  1. interp = read64(interp_head_addr)            (0: GP_PY_WALK_NO_RUNTIME)
 *  2. for at most GP_PY_MAX_INTERPS interpreters while interp != 0:
 *         ts = read64(interp + interp_threads_head)
 *         for at most GP_PY_MAX_THREADS thread states while ts != 0:
 *             if read64(ts + tstate_thread_id) == key: go to 3
 *             ts = read64(ts + tstate_next)
 *         interp = read64(interp + interp_next)
 *     not found: GP_PY_WALK_NO_THREAD, 0 frames.
 *  3. f = read64(ts + tstate_frame)
 *     if cframe_current_frame != GP_PY_NO_OFFSET and f != 0:
 *         f = read64(f + cframe_current_frame)       (3.11, 3.12: the _PyCFrame)
 *  4. n = 0; while f != 0:
 *         if n == max: GP_PY_WALK_TRUNCATED, stop
 *         code  = read64(f + frame_code)
 *         instr = instr_size == 8 ? read64(f + frame_instr)
 *                                 : read32(f + frame_instr)   (3.10: f_lasti)
 *         if code & GP_PY_FRAME_FLAGS: GP_PY_WALK_BAD_FRAME, stop
 *         if entry_kind == GP_PY_ENTRY_IS_ENTRY:
 *             if read8(f + frame_entry) != 0: code |= GP_PY_FRAME_ENTRY
 *         if entry_kind == GP_PY_ENTRY_OWNER:
 *             if read8(f + frame_entry) == entry_value:
 *                 code = GP_PY_FRAME_SHIM; instr = 0
 *         frames[n++] = { code, instr }
 *         f = read64(f + frame_previous)
 *     GP_PY_WALK_OK.
 *
 * Frames come youngest (the caller of the launch) first. The bounds make
 * the walk at most 1 + MAX_INTERPS * (2 * MAX_THREADS + 1) + 2 + 4 * max
 * reads.
 *
 * Offsets (bytes; x86-64 and arm64 alike, from the CPython headers):
 *                          3.10    3.11    3.12    3.13 (from _Py_DebugOffsets)
 *   interp_head_addr      _PyRuntime + 32 / + 40 / + 40 / + debug[40]
 *   interp_next              0       0       0      7264
 *   interp_threads_head      8      16      72      7344
 *   tstate_next              8       8       8         8
 *   tstate_thread_id       176*    160     144       160   (*thread_id: pthread_t)
 *   tstate_frame            24      56      56        72
 *   cframe_current_frame    none     8       0       none
 *   frame_previous          24      48       8         8
 *   frame_code              32      32       0         0
 *   frame_instr             96(4)   56      56        56
 *   frame_entry             none    68(is_entry) 70(owner==3) 70(owner==3)
 */
#ifndef GP_PYTHON_H
#define GP_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Bounds of the walk (both sides). */
#define GP_PY_MAX_FRAMES 64
#define GP_PY_MAX_INTERPS 4
#define GP_PY_MAX_THREADS 128

/* An offset that does not apply to this version. */
#define GP_PY_NO_OFFSET 0xffffffffu

/* How a thread state names its thread (gp_py_config.tid_kind). */
enum gp_py_tid_kind {
	GP_PY_TID_NATIVE = 0,  /* 3.11+: native_thread_id == gettid() in the pid namespace */
	GP_PY_TID_PTHREAD = 1, /* 3.10: thread_id == pthread_self() */
};

/* How a frame says it was called from C (gp_py_config.entry_kind). */
enum gp_py_entry_kind {
	GP_PY_ENTRY_NONE = 0,     /* 3.10: C boundaries are invisible */
	GP_PY_ENTRY_IS_ENTRY = 1, /* 3.11: byte is_entry != 0 */
	GP_PY_ENTRY_OWNER = 2,    /* 3.12+: byte owner == entry_value (FRAME_OWNED_BY_CSTACK) */
};

/* Low bits of gp_py_frame.code (code objects are at least 8-aligned). */
#define GP_PY_FRAME_ENTRY 0x1ull /* this Python frame was called from C: a
				   * native boundary lies between it and the
				   * next (older) record */
#define GP_PY_FRAME_SHIM 0x2ull  /* not a function: the interpreter's C-entry
				   * frame (3.12+); same meaning as ENTRY on
				   * the record before it. code == SHIM, instr == 0 */
#define GP_PY_FRAME_FLAGS 0x7ull

/* Why a walk stopped. */
enum gp_py_walk_status {
	GP_PY_WALK_OK = 0,         /* reached the thread's oldest frame */
	GP_PY_WALK_NO_RUNTIME = 1, /* no interpreter (not initialised / finalised) */
	GP_PY_WALK_NO_THREAD = 2,  /* no thread state for this thread */
	GP_PY_WALK_FAULT = 3,      /* a read failed: frames so far are kept */
	GP_PY_WALK_TRUNCATED = 4,  /* max frames copied, more remain */
	GP_PY_WALK_BAD_FRAME = 5,  /* a misaligned code pointer: wrong offsets */
};

/* Everything the walk needs for one process. Map value, keyed by tgid. */
struct gp_py_config {
	__u64 interp_head_addr;      /* 0: target address of _PyRuntime.interpreters.head */
	__u32 version;               /* 8: PY_VERSION_HEX, e.g. 0x030c03f0 */
	__u32 tid_kind;              /* 12: enum gp_py_tid_kind */
	__u32 interp_next;           /* 16: PyInterpreterState.next */
	__u32 interp_threads_head;   /* 20: PyInterpreterState.threads.head / tstate_head */
	__u32 tstate_next;           /* 24: PyThreadState.next */
	__u32 tstate_thread_id;      /* 28: native_thread_id (NATIVE) or thread_id (PTHREAD) */
	__u32 tstate_frame;          /* 32: frame (3.10), cframe (3.11, 3.12), current_frame (3.13) */
	__u32 cframe_current_frame;  /* 36: _PyCFrame.current_frame, or GP_PY_NO_OFFSET */
	__u32 frame_previous;        /* 40: f_back (3.10) / previous */
	__u32 frame_code;            /* 44: f_code / f_executable */
	__u32 frame_instr;           /* 48: f_lasti (3.10) / prev_instr (3.11, 3.12) / instr_ptr */
	__u32 instr_size;            /* 52: 4 (int f_lasti, in code units) or 8 (pointer) */
	__u32 entry_kind;            /* 56: enum gp_py_entry_kind */
	__u32 frame_entry;           /* 60: is_entry / owner byte, or GP_PY_NO_OFFSET */
	__u32 entry_size;            /* 64: bytes of that field: 1 */
	__u32 entry_value;           /* 68: GP_PY_ENTRY_OWNER: FRAME_OWNED_BY_CSTACK (3) */
	__u32 tstate_interp;         /* 72: PyThreadState.interp (user-space validation) */
	__u32 pad;                   /* 76 */
};
_Static_assert(sizeof(struct gp_py_config) == 80, "gp_py_config ABI");

/* One frame as copied by the walk. */
struct gp_py_frame {
	__u64 code;  /* 0: PyCodeObject address | GP_PY_FRAME_* flags */
	__u64 instr; /* 8: instruction pointer (3.11+) or f_lasti zero-extended from 32 bits */
};
_Static_assert(sizeof(struct gp_py_frame) == 16, "gp_py_frame ABI");

#endif /* GP_PYTHON_H */
