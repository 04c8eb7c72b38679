#!/usr/bin/env bash
# The duty cycle's average cost (README, "Duty cycle"): interleaved rounds of
#   bare  tools/gpu/window_cost.py's training step alone, SECS seconds
#   duty  the same with the shim, under a node-wide loader at its default
#         duty cycle (--all-cgroups --interval INTERVAL: 10% in 1 s windows)
# on train.py's small step ((b), MODEL=small) or its GPU-bound bf16 step
# ((e), MODEL=big). Each run writes its step times; duty runs label each step
# by its shim's state (on: in a window; after/idle: between). Then
# tools/gpu/duty_table.py: per round, the ratio of mean step times duty/bare
# (the average cost: windows and the time between them), with the mean and
# 95% interval over rounds; and, in the duty runs, on against between.
# Usage (repo root, GPU machine, after make static and the shim):
#   [MODEL=small|big] [ROUNDS=3] [SECS=40] [INTERVAL=20] tools/gpu/duty_cost.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
MODEL=${MODEL:-small}; ROUNDS=${ROUNDS:-3}; SECS=${SECS:-40}; INTERVAL=${INTERVAL:-20}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
LIBCUDA=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
export GPUPROBE_COUNTERS=all
for r in $(seq "$ROUNDS"); do
	LABELS=bare DURATION=$SECS MODEL=$MODEL $PY tools/gpu/window_cost.py "$out/bare-$MODEL-$r.txt" \
		>"$out/bare-$MODEL-$r.log" 2>&1 || { cat "$out/bare-$MODEL-$r.log"; exit 1; }
	$L -v --all-cgroups --interval "$INTERVAL" --libcuda "$LIBCUDA" -o "$out/duty-$MODEL-$r.pb.gz" \
		2>"$out/loader-$MODEL-$r.err" &
	lp=$!
	until grep -q "^counters:" "$out/loader-$MODEL-$r.err" 2>/dev/null; do
		kill -0 $lp 2>/dev/null || { cat "$out/loader-$MODEL-$r.err"; exit 1; }
		sleep 0.2
	done
	CUDA_INJECTION64_PATH=$SHIM DURATION=$SECS MODEL=$MODEL $PY tools/gpu/window_cost.py \
		"$out/duty-$MODEL-$r.txt" >"$out/duty-$MODEL-$r.log" 2>&1 || { cat "$out/duty-$MODEL-$r.log"; exit 1; }
	kill -INT $lp; wait $lp
	grep "^duty:" "$out/loader-$MODEL-$r.err" | tail -1
	grep "^counters:" "$out/loader-$MODEL-$r.err" | tail -1 | tr ' ' '\n' |
		grep -E "^(joined|launches_without_record|unattributed|ring_dropped|launches_outside|activities_outside|launches_before_recording|duty_windows|duty_probe_errors|recording_on)=" | tr '\n' ' '; echo
done
python3 tools/gpu/duty_table.py "$out" "$MODEL" "$ROUNDS"
