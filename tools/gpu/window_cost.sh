#!/usr/bin/env bash
# Recording windows in one process (tools/gpu/window_cost.py): the program
# runs with the shim and no loader; a loader attaches (--pid) for ON seconds,
# leaves for OFF seconds, CYCLES times. Steps are labelled by the shim's own
# state; the output says what an "on" step costs against an "idle" one and
# what is left "after" activity was switched off. With GPUPROBE_RECORD=always
# LABEL_BY=reader (exported), steps are labelled by whether a loader held the
# ring: "on" is a loader attached for ON seconds (its start included), "idle"
# and "after" the shim alone, and the output's attached / shim is what such
# a short attach costs while it lasts (the probes' steady cost:
# tools/gpu/probe_windows.sh).
# Usage (repo root, GPU machine, after make static and the shim):
#   [MODEL=small|big] [ON=8] [OFF=8] [CYCLES=3] tools/gpu/window_cost.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
ON=${ON:-8}; OFF=${OFF:-8}; CYCLES=${CYCLES:-3}; MODEL=${MODEL:-small}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
export GPUPROBE_COUNTERS=all
# idle first (OFF s), then CYCLES of on + off, then a margin
DURATION=$((OFF + CYCLES * (ON + OFF + 3) + 5)) MODEL=$MODEL \
	CUDA_INJECTION64_PATH=$PWD/build/libgpuprobe_shim.so \
	$PY tools/gpu/window_cost.py "$out/steps-$MODEL.txt" >"$out/window-$MODEL.log" 2>&1 &
P=$!
until grep -q "window_cost: ready" "$out/window-$MODEL.log" 2>/dev/null; do
	kill -0 $P 2>/dev/null || { cat "$out/window-$MODEL.log"; exit 1; }
	sleep 0.2
done
sleep "$OFF"
for c in $(seq "$CYCLES"); do
	$L --pid $P -d "$ON" -o "$out/window-$MODEL-$c.pb.gz" >"$out/loader-$MODEL-$c.log" 2>&1
	grep "^verdict" "$out/loader-$MODEL-$c.log"
	sleep "$OFF"
done
wait $P
cat "$out/window-$MODEL.log"
