/* SPDX-License-Identifier: MIT */
/*
 * The parts of CPython detection (pyruntime.c) that read what a profiled
 * process wrote, without reading it themselves: 3.13's _Py_DebugOffsets as
 * bytes already copied, and the interpreter and thread-state chain through
 * a reader the caller gives (the target's memory, through bounded calls; a
 * fuzzer's buffer). Every byte is hostile: offsets are bounded, walks are
 * bounded in steps.
 */
#ifndef GP_PYTHON_PYRT_CHECK_H
#define GP_PYTHON_PYRT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "user/python/pycode.h"
#include "bpf/python.h"

struct proc_tid_map;

/* Bytes of 3.13's _Py_DebugOffsets read (the fields used lie within). */
#define PYRT_DBG_SIZE 584

/*
 * 3.13's layout from its _Py_DebugOffsets (dbg: len >= PYRT_DBG_SIZE bytes
 * copied from runtime, the address of _PyRuntime): 0, -EUCLEAN when the
 * cookie, the version (against version, Py_Version's) or an offset is not
 * right, -EPROTONOSUPPORT for a free-threaded build.
 */
int pyrt__parse_debug(const uint8_t *dbg, size_t len, uint64_t runtime, uint32_t version,
		      struct gp_py_config *cfg, struct pycode_layout *code, uint32_t *ret_interp_id);

/* 8 bytes at addr: 0, -EFAULT where nothing is, or -errno. */
struct pyrt_reader {
	int (*read_u64)(void *ctx, uint64_t addr, uint64_t *ret);
	void *ctx;
};

/*
 * Whether c describes the process rd reads: the interpreter chain from
 * c->interp_head_addr ends (within GP_PY_MAX_INTERPS) in the main
 * interpreter (id 0 at interp_id_off), each thread state (at most
 * GP_PY_MAX_THREADS per interpreter) points back at its interpreter, and,
 * with tids (the process's threads), some thread state's native thread id
 * names one of them. 0; -EAGAIN with no interpreter or thread state yet;
 * -EUCLEAN when it does not match; -errno of a read.
 */
int pyrt__check_chain(const struct pyrt_reader *rd, const struct gp_py_config *c,
		      uint32_t interp_id_off, const struct proc_tid_map *tids);
/* The same, the head's value (nonzero) already read as interp: the chain from there. */
int pyrt__check_interps(const struct pyrt_reader *rd, const struct gp_py_config *c, uint64_t interp,
			uint32_t interp_id_off, const struct proc_tid_map *tids);

#endif
