#!/usr/bin/env bash
# Where the loader's memory goes on the bench's train.py run (full mode,
# `gpuprobe-bpf -v -- python3 train.py`, (b) (c) (d) (e) as tools/gpu/bench
# runs them): the loader's resident set sampled every 100 ms, and at its
# highest sample the mappings summed by kind (tools/gpu/loader_mem.py): the
# BPF ring, the shim's shared ring, the heap, other anonymous memory, files.
# Also the `loader:` line's own figures (peak RSS, queue, symbols, CFI).
# Usage (repo root, GPU machine, after make static all):
#   [L=LOADER] [STEPS=40] [REPLAYS=100] [BIG_STEPS=20] [LOADER_ARGS=...] tools/gpu/loader_mem.sh OUTDIR [ROUNDS]
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:-3}
mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=${L:-$PWD/build/static/gpuprobe-bpf} # the loader (another build to compare: L=PATH)
STEPS=${STEPS:-40}; REPLAYS=${REPLAYS:-100}; BIG_STEPS=${BIG_STEPS:-20}
for r in $(seq 1 "$rounds"); do
	STEPS=$STEPS GRAPH_REPLAYS=$REPLAYS BIG_STEPS=$BIG_STEPS $L -v ${LOADER_ARGS:-} \
		--shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" -o "$out/m$r.pb.gz" -- \
		"$PY" tools/gpu/train.py >"$out/train-$r.log" 2>"$out/loader-$r.log" &
	lp=$! best=0
	while kill -0 $lp 2>/dev/null; do
		rss=$(awk '/^VmRSS:/{print $2}' /proc/$lp/status 2>/dev/null)
		if [ -n "$rss" ] && [ "$rss" -gt "$best" ]; then
			cp /proc/$lp/smaps "$out/smaps-$r.txt" 2>/dev/null && best=$rss
		fi
		sleep 0.1
	done
	wait $lp; echo "round $r: loader exit $?, highest sampled RSS $best kB"
	python3 "$(dirname "$0")/loader_mem.py" "$out/smaps-$r.txt" "$out/loader-$r.log"
done
