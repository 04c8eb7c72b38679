/* SPDX-License-Identifier: MIT */
/* CPython's layout from what its process wrote (pyrt_check.h). */
#include "user/python/pyrt_check.h"
#include "user/proc/proc.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Where 3.13's _Py_DebugOffsets keeps what we need (Include/internal/
 * pycore_runtime.h, 3.13 branch): each is the position of a uint64_t
 * holding an offset. */
#define DBG_VERSION 8
#define DBG_FREE_THREADED 16
#define DBG_RT_INTERP_HEAD 40
#define DBG_IS_ID 56
#define DBG_IS_NEXT 64
#define DBG_IS_THREADS_HEAD 72
#define DBG_TS_NEXT 168
#define DBG_TS_INTERP 176
#define DBG_TS_CURRENT_FRAME 184
#define DBG_TS_NATIVE_THREAD_ID 200
#define DBG_IF_PREVIOUS 232
#define DBG_IF_EXECUTABLE 240
#define DBG_IF_INSTR_PTR 248
#define DBG_IF_OWNER 264
#define DBG_CO_FILENAME 280
#define DBG_CO_NAME 288
#define DBG_CO_QUALNAME 296
#define DBG_CO_LINETABLE 304
#define DBG_CO_FIRSTLINENO 312
#define DBG_CO_CODE_ADAPTIVE 344
#define DBG_OB_TYPE 360
#define DBG_BYTES_OB_SIZE 520
#define DBG_BYTES_OB_SVAL 528
#define DBG_UNICODE_STATE 544
#define DBG_UNICODE_LENGTH 552
#define DBG_UNICODE_ASCII_SIZE 560
#define DBG_MAX_OFFSET 65536 /* no field of these structs lies further */

static int dbg__get(const uint8_t *dbg, uint32_t pos, uint32_t *ret)
{
	uint64_t v;

	memcpy(&v, dbg + pos, 8);
	if (v >= DBG_MAX_OFFSET)
		return -EUCLEAN;
	*ret = (uint32_t)v;
	return 0;
}

int pyrt__parse_debug(const uint8_t *dbg, size_t len, uint64_t runtime, uint32_t version,
		      struct gp_py_config *cfg, struct pycode_layout *code, uint32_t *ret_interp_id)
{
	static const struct { uint32_t pos; size_t field; bool in_code; } map[] = {
		{ DBG_IS_NEXT, offsetof(struct gp_py_config, interp_next), false },
		{ DBG_IS_THREADS_HEAD, offsetof(struct gp_py_config, interp_threads_head), false },
		{ DBG_TS_NEXT, offsetof(struct gp_py_config, tstate_next), false },
		{ DBG_TS_NATIVE_THREAD_ID, offsetof(struct gp_py_config, tstate_thread_id), false },
		{ DBG_TS_CURRENT_FRAME, offsetof(struct gp_py_config, tstate_frame), false },
		{ DBG_TS_INTERP, offsetof(struct gp_py_config, tstate_interp), false },
		{ DBG_IF_PREVIOUS, offsetof(struct gp_py_config, frame_previous), false },
		{ DBG_IF_EXECUTABLE, offsetof(struct gp_py_config, frame_code), false },
		{ DBG_IF_INSTR_PTR, offsetof(struct gp_py_config, frame_instr), false },
		{ DBG_IF_OWNER, offsetof(struct gp_py_config, frame_entry), false },
		{ DBG_OB_TYPE, offsetof(struct pycode_layout, ob_type), true },
		{ DBG_CO_NAME, offsetof(struct pycode_layout, co_name), true },
		{ DBG_CO_QUALNAME, offsetof(struct pycode_layout, co_qualname), true },
		{ DBG_CO_FILENAME, offsetof(struct pycode_layout, co_filename), true },
		{ DBG_CO_FIRSTLINENO, offsetof(struct pycode_layout, co_firstlineno), true },
		{ DBG_CO_LINETABLE, offsetof(struct pycode_layout, co_linetable), true },
		{ DBG_CO_CODE_ADAPTIVE, offsetof(struct pycode_layout, co_code_adaptive), true },
		{ DBG_BYTES_OB_SIZE, offsetof(struct pycode_layout, bytes_ob_size), true },
		{ DBG_BYTES_OB_SVAL, offsetof(struct pycode_layout, bytes_ob_sval), true },
		{ DBG_UNICODE_STATE, offsetof(struct pycode_layout, unicode_state), true },
		{ DBG_UNICODE_LENGTH, offsetof(struct pycode_layout, unicode_length), true },
		{ DBG_UNICODE_ASCII_SIZE, offsetof(struct pycode_layout, unicode_ascii_size), true },
	};
	struct gp_py_config c = { 0 };
	struct pycode_layout l = { 0 };
	uint32_t v, head, id;
	uint64_t dversion, ft;
	size_t i;
	int err;

	if (len < PYRT_DBG_SIZE || memcmp(dbg, "xdebugpy", 8))
		return -EUCLEAN;
	memcpy(&dversion, dbg + DBG_VERSION, 8);
	memcpy(&ft, dbg + DBG_FREE_THREADED, 8);
	if ((dversion >> 16) != (version >> 16))
		return -EUCLEAN;
	if (ft)
		return -EPROTONOSUPPORT; /* free-threaded build: other layouts */
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		err = dbg__get(dbg, map[i].pos, &v);
		if (err)
			return err;
		memcpy((uint8_t *)(map[i].in_code ? (void *)&l : (void *)&c) + map[i].field, &v, 4);
	}
	err = dbg__get(dbg, DBG_RT_INTERP_HEAD, &head);
	if (!err)
		err = dbg__get(dbg, DBG_IS_ID, &id);
	if (err)
		return err;
	c.interp_head_addr = runtime + head;
	c.tid_kind = GP_PY_TID_NATIVE;
	c.cframe_current_frame = GP_PY_NO_OFFSET;
	c.instr_size = 8;
	c.entry_kind = GP_PY_ENTRY_OWNER;
	c.entry_size = 1;
	c.entry_value = 3; /* FRAME_OWNED_BY_CSTACK */
	l.ob_size = 16;    /* PyVarObject.ob_size: not described, fixed since 2.x */
	l.unicode_compact_size = l.unicode_ascii_size + 16; /* + utf8_length, utf8 */
	l.linetable_format = PYCODE_LINETABLE_311;
	*cfg = c;
	*code = l;
	*ret_interp_id = id;
	return 0;
}

int pyrt__check_chain(const struct pyrt_reader *rd, const struct gp_py_config *c,
		      uint32_t interp_id_off, const struct proc_tid_map *tids)
{
	uint64_t interp;
	int err;

	err = rd->read_u64(rd->ctx, c->interp_head_addr, &interp);
	if (err)
		return err == -EFAULT ? -EUCLEAN : err;
	if (!interp)
		return -EAGAIN;
	return pyrt__check_interps(rd, c, interp, interp_id_off, tids);
}

int pyrt__check_interps(const struct pyrt_reader *rd, const struct gp_py_config *c, uint64_t interp,
			uint32_t interp_id_off, const struct proc_tid_map *tids)
{
	uint64_t last = 0, ts, back, tid, id;
	pid_t host;
	bool any_thread = false, tid_matched = false;
	int i, j, err = 0;

	for (i = 0; interp && i < GP_PY_MAX_INTERPS; i++) {
		if (interp & 7) {
			err = -EUCLEAN;
			goto out;
		}
		err = rd->read_u64(rd->ctx, interp + c->interp_threads_head, &ts);
		for (j = 0; !err && ts && j < GP_PY_MAX_THREADS; j++) {
			err = rd->read_u64(rd->ctx, ts + c->tstate_interp, &back);
			if (!err && back != interp)
				err = -EUCLEAN; /* every thread state points at its interpreter */
			if (!err && tids) {
				err = rd->read_u64(rd->ctx, ts + c->tstate_thread_id, &tid);
				if (!err && tid > 0 && tid <= INT32_MAX &&
				    proc_tid_map__lookup(tids, (pid_t)tid, &host))
					tid_matched = true;
			}
			any_thread = true;
			if (!err)
				err = rd->read_u64(rd->ctx, ts + c->tstate_next, &ts);
		}
		last = interp;
		if (!err)
			err = rd->read_u64(rd->ctx, interp + c->interp_next, &interp);
		if (err) {
			err = err == -EFAULT ? -EUCLEAN : err;
			goto out;
		}
	}
	/* The main interpreter (id 0) is the oldest, so the last one. */
	if (!interp) {
		err = rd->read_u64(rd->ctx, last + interp_id_off, &id);
		if (err || id != 0) {
			err = err && err != -EFAULT ? err : -EUCLEAN;
			goto out;
		}
	}
	if (!any_thread)
		err = -EAGAIN;
	else if (tids && !tid_matched)
		err = -EUCLEAN;
out:
	return err;
}

