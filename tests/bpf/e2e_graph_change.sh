#!/usr/bin/env bash
# CUDA graphs changed after they were made, on the stub vendor
# (tests/progs/graphchange N M): an executable graph updated from a second
# capture (cuGraphExecUpdate), then given new parameters; a graph of child
# graphs, nested, replayed. Every replayed kernel sits under the site that
# made its node, then "[graph captured at]", then the replay's stack, count
# and GPU time exact: replays before the update under the first capture,
# after it under the second (the replays before it launched before the
# update, their kernels run after it); each child graph's kernel under its own
# capture or node-adding call, found by its place in the executable graph.
source "$(dirname "$0")/lib.sh"

N=6 M=4
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/g.pb.gz" --libcuda "$STUBLIB" \
	--cupti "$B/stub/libcupti.so" -- "$PROGS/graphchange" $N $M 2>"$WORK/g.err" >"$WORK/out" ||
	{ cat "$WORK/g.err"; fail "loader failed"; }
grep -q "graphchange: kernels=$((3 * N + 6 * M + 1))" "$WORK/out" || fail "graphchange: $(cat "$WORK/out")"
field() { # NAME: its value on the last counters line
	grep "^counters:" "$WORK/g.err" | tail -n 1 | sed -n "s/.*[ (]$1=\([0-9]*\).*/\1/p"
}
SC="python3 $ROOT/tests/bpf/stack_check.py"
check() { # KERNEL COUNT GRID SITE REPLAY
	$SC "$WORK/g.pb.gz" graph "$1" "$2" $(($2 * $3 * 1000)) "$4" "$5" ||
		{ grep "^counters:" "$WORK/g.err" | tail -1; fail "$1 not under $4 and $5"; }
}
check k_one $N 2 cap_one replay_old
check k_two $N 3 cap_two replay_new
check k_three $N 4 cap_two replay_set
check k_child $M 1 cap_child replay_child
check k_child2 $M 2 cap_child replay_child
check k_inner $M 3 cap_inner replay_child
check k_deep $M 4 cap_deep replay_child
check k_nest $M 5 nest_site replay_child
check k_parent $M 6 child_site replay_child
[ "$(field graph_activities)" = $((3 * N + 6 * M)) ] &&
	[ "$(field under_capture)" = $((3 * N + 6 * M)) ] && [ "$(field node_unknown)" = 0 ] &&
	[ "$(field capture_unknown)" = 0 ] && [ "$(field updated)" = 1 ] &&
	[ "$(field params_set)" = 2 ] && [ "$(field embedded)" = 5 ] &&
	[ "$(field layouts_refused)" = 0 ] && [ "$(field unattributed)" = 0 ] ||
	{ grep "^counters:" "$WORK/g.err" | tail -1; fail "graph counters"; }
ok "$((3 * N + 6 * M)) kernels of updated and child graphs under the sites that made their nodes, exact"
