#!/usr/bin/env bash
# CUDA graphs on the stub vendor (tests/progs/graphcap N M: graph 1 captured
# in capture_one, two g_one launches; graph 2 in capture_two, one g_two;
# graph 3 built in build_three by cuGraphAddKernelNode, one g_three; replayed
# N, M and N times from replay_loop): every replayed kernel sits under the
# stack that captured (or added) its node, then "[graph captured at]", then
# the replay's stack, with its count and GPU time exact; the eager kernel keeps
# its own stack. Without the shim's node records (a CUPTI without the graph
# getters), the replays keep the replay's stack, counted by reason.
source "$(dirname "$0")/lib.sh"

N=7 M=5
run() { # OUT ERR [ENV...]
	local out=$1 err=$2
	shift 2
	env "$@" LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$out" --libcuda "$STUBLIB" \
		--cupti "$B/stub/libcupti.so" -- "$PROGS/graphcap" $N $M 2>"$err" >"$WORK/out" ||
		{ cat "$err"; fail "loader failed"; }
	grep -q "graphcap: replays=$((2 * N + M)) kernels=$((3 * N + M + 1))" "$WORK/out" ||
		fail "graphcap: $(cat "$WORK/out")"
}
SC="python3 $ROOT/tests/bpf/stack_check.py"

run "$WORK/g.pb.gz" "$WORK/g.err"
$SC "$WORK/g.pb.gz" graph g_one $((2 * N)) $((4000 * N)) capture_one replay_loop ||
	{ cat "$WORK/g.err"; fail "g_one not under its capture"; }
$SC "$WORK/g.pb.gz" graph g_two $M $((3000 * M)) capture_two replay_loop ||
	fail "g_two not under its capture"
$SC "$WORK/g.pb.gz" graph g_three $N $((4000 * N)) build_three replay_loop ||
	fail "g_three not under the call that added its node"
$SC "$WORK/g.pb.gz" chain g_eager 1 main || fail "the eager launch"
[ "$(counter "$WORK/g.err" graph_activities)" = $((3 * N + M)) ] &&
	[ "$(counter "$WORK/g.err" under_capture)" = $((3 * N + M)) ] &&
	[ "$(counter "$WORK/g.err" node_unknown)" = 0 ] && [ "$(counter "$WORK/g.err" capture_unknown)" = 0 ] &&
	[ "$(counter "$WORK/g.err" replay_unattributed)" = 0 ] && [ "$(counter "$WORK/g.err" bound)" = 4 ] &&
	[ "$(counter "$WORK/g.err" unbound)" = 0 ] && [ "$(counter "$WORK/g.err" waiting)" = 0 ] &&
	[ "$(counter "$WORK/g.err" unattributed)" = 0 ] ||
	{ grep "^counters:" "$WORK/g.err" | tail -1; fail "graph counters"; }
ok "$((3 * N + M)) replayed kernels under their capture (or node-adding) sites, exact"
# Device 0 shows as a tag: a numeric label 0 without a unit, pprof's readers drop.
go tool pprof -tags "$WORK/g.pb.gz" 2>/dev/null | grep -A1 "^ device:" | grep -qE "\(  100%\): 0$" ||
	fail "device 0 not among the profile's tags: $(go tool pprof -tags "$WORK/g.pb.gz" 2>&1 | head -20)"
ok "device 0 shown by go tool pprof -tags"

# A CUPTI that cannot name graph nodes: no node records, the replay's stack, counted.
run "$WORK/n.pb.gz" "$WORK/n.err" GPUPROBE_STUB_NO_GRAPH_IDS=1
$SC "$WORK/n.pb.gz" chain g_one $((2 * N)) replay_loop main || fail "g_one without node records"
[ "$(counter "$WORK/n.err" under_capture)" = 0 ] && [ "$(counter "$WORK/n.err" node_unknown)" = $((3 * N + M)) ] ||
	{ grep "^counters:" "$WORK/n.err" | tail -1; fail "counters without node records"; }
ok "without node records: the replay's stack, $((3 * N + M)) counted node_unknown"

# Graph nodes under the bound all processes share (here two nodes' worth,
# GPUPROBE_TEST_GRAPH_SHARE_BYTES): the nodes past it are not held, counted
# graph_nodes_over_share; their replays keep the replay's stack, and no
# kernel is lost.
run "$WORK/s.pb.gz" "$WORK/s.err" GPUPROBE_TEST_GRAPH_SHARE_BYTES=256
over=$(counter "$WORK/s.err" graph_nodes_over_share) under=$(counter "$WORK/s.err" under_capture)
[ "${over:-0}" -gt 0 ] && [ "${under:-0}" -lt $((3 * N + M)) ] &&
	[ "$(counter "$WORK/s.err" graph_activities)" = $((3 * N + M)) ] &&
	[ "$(counter "$WORK/s.err" unattributed)" = 0 ] ||
	{ grep "^counters:" "$WORK/s.err" | tail -1; fail "graph nodes past the shared bound"; }
$SC "$WORK/s.pb.gz" chain g_two $M replay_loop main || fail "g_two past the shared bound"
ok "graph nodes past the shared bound: $over refused (graph_nodes_over_share), $under of $((3 * N + M)) replays under capture, none lost"
