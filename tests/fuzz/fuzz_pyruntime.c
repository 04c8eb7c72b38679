/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes what CPython detection reads of a profiled process
 * (user/python/pyrt_check.c): the input is the process's memory from
 * BASE, _PyRuntime at its start. Its first bytes are parsed as 3.13's
 * _Py_DebugOffsets; where they do not parse, a layout is made of them.
 * Then the interpreter and thread chain is walked through that memory.
 * Every offset taken must be bounded, and the walk's reads bounded in
 * number whatever the chain's pointers say.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "user/python/pyrt_check.h"

#define BASE 0x10000ull
#define OFFSET_MAX 65536u
#define READS_MAX (GP_PY_MAX_INTERPS * (GP_PY_MAX_THREADS * 3 + 2) + 2)

struct mem {
	const uint8_t *data;
	size_t size;
	unsigned reads;
};

static int mem_read_u64(void *ctx, uint64_t addr, uint64_t *ret)
{
	struct mem *m = ctx;

	m->reads++;
	if (addr < BASE || addr - BASE > m->size || m->size - (addr - BASE) < 8)
		return -14; /* -EFAULT */
	memcpy(ret, m->data + (addr - BASE), 8);
	return 0;
}

static uint32_t u16_at(const uint8_t *d, size_t size, size_t at)
{
	return at + 2 <= size ? (uint32_t)d[at] | (uint32_t)d[at + 1] << 8 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = { .data = data, .size = size };
	struct pyrt_reader rd = { .read_u64 = mem_read_u64, .ctx = &m };
	struct gp_py_config c;
	struct pycode_layout code;
	uint32_t id = 0;

	if (pyrt__parse_debug(data, size, BASE, 0x030d00f0u, &c, &code, &id) == 0) {
		if (c.interp_head_addr - BASE >= OFFSET_MAX || id >= OFFSET_MAX ||
		    c.interp_next >= OFFSET_MAX || c.interp_threads_head >= OFFSET_MAX ||
		    c.tstate_next >= OFFSET_MAX || c.tstate_interp >= OFFSET_MAX ||
		    c.tstate_thread_id >= OFFSET_MAX || code.co_name >= OFFSET_MAX)
			__builtin_trap();
	} else {
		/* A table's layout, its offsets from the input. */
		memset(&c, 0, sizeof(c));
		c.interp_head_addr = BASE + u16_at(data, size, 0);
		c.interp_next = u16_at(data, size, 2) % 512;
		c.interp_threads_head = u16_at(data, size, 4) % 512;
		c.tstate_next = u16_at(data, size, 6) % 512;
		c.tstate_interp = u16_at(data, size, 8) % 512;
		c.tstate_thread_id = u16_at(data, size, 10) % 512;
		id = u16_at(data, size, 12) % 512;
	}
	pyrt__check_chain(&rd, &c, id, NULL);
	if (m.reads > READS_MAX)
		__builtin_trap();
	return 0;
}
