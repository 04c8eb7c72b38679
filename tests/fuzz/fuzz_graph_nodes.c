/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a process's graph-node records, as a hostile ring can
 * make them (user/join/graph_nodes.c). The input is a list of 16-byte
 * operations: a kind byte, then small graph ids and indexes (so that made
 * nodes, copies, updates and lookups meet each other), a thread and a time.
 * Kinds: a node made, a node cloned, an update, new parameters, a call
 * that binds its thread's nodes, and a kernel record's lookup (find, then
 * the origin at a time, then its site). Must never crash, leak, or return
 * a handle past the table.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "user/join/graph_nodes.h"

static __u64 node_of(const uint8_t *b)
{
	/* Graph ids near 0 and near 2^32 (wrap), indexes up to 255. */
	__u32 graph = b[0] & 0x80 ? 0xffffff80u | b[0] : b[0];

	return (__u64)graph << 32 | b[1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct graph_nodes *gn = NULL;
	struct graph_nodes_stats st;

	if (graph_nodes__new(&gn))
		return 0;
	for (size_t at = 0; at + 16 <= size; at += 16) {
		const uint8_t *op = data + at;
		__u64 node = node_of(op + 1), other = node_of(op + 3), ts;
		__u32 tid = op[5] & 3, handle, origin;
		__u64 site;
		__u32 probe;

		memcpy(&ts, op + 8, sizeof(ts));
		ts &= 0xffffffffffull;
		switch (op[0] % 6) {
		case 0:
			graph_nodes__add(gn, node, 0, tid, ts);
			break;
		case 1:
			graph_nodes__add(gn, node, other, tid, ts);
			break;
		case 2:
			graph_nodes__update(gn, node, other, ts);
			break;
		case 3:
			graph_nodes__set_params(gn, node);
			break;
		case 4:
			graph_nodes__on_call(gn, tid, ts, ts + op[6], 1 + op[7], op[7]);
			break;
		default:
			handle = graph_nodes__find(gn, node);
			origin = graph_nodes__origin(gn, handle, ts);
			if (graph_nodes__site(gn, origin, &site, &probe) && !site)
				__builtin_trap();
			break;
		}
	}
	graph_nodes__stats(gn, &st);
	if (st.nodes > GRAPH_NODES_MAX)
		__builtin_trap();
	graph_nodes__destroy(gn);
	return 0;
}
