#!/usr/bin/env bash
# Kernel counts of steps wholly inside duty windows against torch.profiler's
# (tools/gpu/window_counts.py): train.py's small step under --duty 0.5
# --window 1 with --trace, and two torch.profiler runs of STEPS_A and
# STEPS_B steps for the steady step.
# Usage (repo root, GPU machine, after make static and the shim):
#   [STEPS=600] [STEPS_A=20] [STEPS_B=40] tools/gpu/window_counts.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
STEPS=${STEPS:-600}; STEPS_A=${STEPS_A:-20}; STEPS_B=${STEPS_B:-40}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
for n in "$STEPS_A" "$STEPS_B"; do
	STEPS=$n GRAPH_REPLAYS=0 TORCH_PROFILE="$out/torch-$n.json" $PY tools/gpu/train.py >"$out/torch-$n.log" 2>&1 ||
		{ tail -5 "$out/torch-$n.log"; exit 1; }
done
# The trace goes outside OUTDIR: it is large, and only its figures come back.
trace=${TRACE_FILE:-/tmp/window_counts.json}
$L -v --duty 0.5 --window 1 --shim "$PWD/build/libgpuprobe_shim.so" -o "$out/duty.pb.gz" --trace "$trace" -- \
	env STEPS="$STEPS" GRAPH_REPLAYS=0 STEP_TIMES="$out/steps.txt" $PY tools/gpu/train.py \
	>"$out/duty.log" 2>"$out/loader.log"
echo "loader exit $?"
grep "^verdict\|^duty:\|wrote" "$out/loader.log"
grep "^counters:" "$out/loader.log" | tail -1 | tr ' ' '\n' | grep -E "^(ring_dropped|unattributed|launches_without_record|launches_outside|duty_windows)="
ls -la "$trace"
$PY tests/bpf/trace_check.py "$trace" "$out/duty.pb.gz" train_step
$PY tools/gpu/window_counts.py "$trace" "$out/loader.log" "$out/steps.txt" \
	"$out/torch-$STEPS_A.json" "$out/torch-$STEPS_B.json" "$STEPS_A" "$STEPS_B"
