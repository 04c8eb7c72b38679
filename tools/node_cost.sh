#!/usr/bin/env bash
# What the autograd node probe costs a node, without a GPU, and what taking
# it away once learnt saves (user/session/node_watch.h): the stand-in
# engine's thread runs N passes of 64 nodes itself (tests/progs/engine,
# `autograd_cases nodes N`: nothing launched, each node a trap while the
# probe is on), under `gpuprobe-bpf -- ...` with the probe on every node
# (GPUPROBE_NODE_PROBE=always) and with it taken away first (the program
# begins passes until it is gone, GP_TEST_QUIET_NODES=1), interleaved for
# ROUNDS rounds; prints ns a node for each and the median difference.
# Root, repo root, after make. Usage: tools/node_cost.sh [ROUNDS] [N]
set -euo pipefail
rounds=${1:-5} n=${2:-20000}
B=build
work=$(mktemp -d /tmp/gpuprobe-nodes.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { # ENV... -> ns a node
	env LD_LIBRARY_PATH="$B/stub" "$@" "$B/gpuprobe-bpf" -o "$work/p.pb.gz" --libcuda "$B/stub/libcuda.so.1" \
		--cupti "$B/stub/libcupti.so" -- "$B/tests/progs/autograd_cases" nodes "$n" 2>"$work/err" >"$work/out" ||
		{ cat "$work/err" "$work/out" >&2; exit 1; }
	sed -n 's/.*ns_per_node=\([0-9.]*\).*/\1/p' "$work/out"
}
for r in $(seq 1 "$rounds"); do
	on=$(run GPUPROBE_NODE_PROBE=always)
	away=$(run GP_TEST_QUIET_NODES=1)
	echo "round $r: probe_on_ns_per_node=$on probe_away_ns_per_node=$away saved=$(awk -v a="$on" -v b="$away" 'BEGIN {printf "%.1f", a - b}')"
done | tee "$work/rounds"
sed 's/.*saved=//' "$work/rounds" | sort -n | awk '{a[NR] = $1} END {print "median saved ns a node:", a[int((NR + 1) / 2)], "(rounds:", NR ")"}'
