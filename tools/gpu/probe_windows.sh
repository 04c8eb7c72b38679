#!/usr/bin/env bash
# The probes' cost in one process (tools/gpu/probe_windows.py): train.py's
# small step (b) then its GPU-bound step (e), then (with LAUNCHES > 0) the
# empty-kernel launch loop (a) in a process of its own, its batches of 5,000
# launches labelled as the steps are; the shim recording throughout
# (GPUPROBE_RECORD=always), the loader's launch probes attached in duty
# windows (--duty 0.5 --window WINDOW) and detached between. RUNS processes.
# Usage (repo root, GPU machine, after make static and the shim):
#   [STEPS=3000] [BIG_STEPS=1000] [LAUNCHES=0] [WINDOW=1] [RUNS=2] tools/gpu/probe_windows.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
STEPS=${STEPS:-3000}; BIG_STEPS=${BIG_STEPS:-1000}; WINDOW=${WINDOW:-1}; RUNS=${RUNS:-2}
LAUNCHES=${LAUNCHES:-0}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
train_run() { # RUN
	local r=$1
	$L -v --duty 0.5 --window "$WINDOW" --shim "$PWD/build/libgpuprobe_shim.so" -o "$out/p$r.pb.gz" -- \
		env GPUPROBE_RECORD=always STEPS="$STEPS" BIG_STEPS="$BIG_STEPS" GRAPH_REPLAYS=0 \
		STEP_TIMES="$out/steps-b-$r.txt" BIG_STEP_TIMES="$out/steps-e-$r.txt" $PY tools/gpu/train.py \
		>"$out/train-$r.log" 2>"$out/loader-$r.log"
	echo "run $r: loader exit $?"
	grep "^verdict\|^duty:" "$out/loader-$r.log"
	grep "duty: window\|stopping at" "$out/loader-$r.log" >"$out/edges-$r.txt"
	echo "(b):"; $PY tools/gpu/probe_windows.py "$out/edges-$r.txt" "$out/steps-b-$r.txt"
	echo "(e):"; $PY tools/gpu/probe_windows.py "$out/edges-$r.txt" "$out/steps-e-$r.txt"
}
launch_run() { # RUN
	local r=$1
	$L -v --duty 0.5 --window "$WINDOW" --shim "$PWD/build/libgpuprobe_shim.so" -o "$out/a$r.pb.gz" -- \
		env GPUPROBE_RECORD=always BATCH_TIMES="$out/steps-a-$r.txt" build/empty_launch "$LAUNCHES" \
		>"$out/launch-$r.log" 2>"$out/loader-a-$r.log"
	echo "run $r (a): loader exit $?"
	grep "^verdict\|^duty:" "$out/loader-a-$r.log"
	grep "duty: window\|stopping at" "$out/loader-a-$r.log" >"$out/edges-a-$r.txt"
	echo "(a):"; $PY tools/gpu/probe_windows.py "$out/edges-a-$r.txt" "$out/steps-a-$r.txt" 20 5000
}
for r in $(seq "$RUNS"); do
	[ "$STEPS" -gt 0 ] || [ "$BIG_STEPS" -gt 0 ] && train_run "$r"
	[ "$LAUNCHES" -gt 0 ] && launch_run "$r"
done
