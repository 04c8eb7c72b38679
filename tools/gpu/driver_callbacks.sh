#!/usr/bin/env bash
# The shim's launch callbacks from the driver's domain alone, switched at
# every duty window (GPUPROBE_API_CALLBACKS=driver), against the default
# ("read": the runtime's and the driver's, on while a loader reads): is every launch
# still joined (a runtime call reaches the driver's callbacks with its own
# correlation id), does a duty cycle's switching still leave no id stuck,
# and what does being attached cost between the windows, where "driver"
# leaves no callback on.
#   1. train.py under `gpuprobe-bpf -- ...` once in each mode: the joins;
#   2. duty_hangs.sh's N runs (--pid, 1 s windows) in "driver" mode;
#   3. attach_cost.sh on (b) in each mode, one process each, CYCLES cycles.
# Usage (repo root, GPU machine, after make static and the shim):
#   [N=5] [CYCLES=4] [WANT="result ..."] tools/gpu/driver_callbacks.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
N=${N:-5}; CYCLES=${CYCLES:-4}
. "$(dirname "$0")/cupti_env.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
sum=$out/driver_callbacks.txt; : >"$sum"
joins() { # the loader's join counters, one line
	for k in launch_events joined launches_without_activity launches_without_record corr_reused \
		unattributed api_without_launch copies; do
		grep -o "\b$k=[0-9]*" "$1" | tail -1
	done | tr '\n' ' '
}
for mode in driver read; do
	export GPUPROBE_API_CALLBACKS=$mode
	STEPS=200 GRAPH_REPLAYS=40 BIG_STEPS=5 GPUPROBE_COUNTERS=all timeout 300 "$L" -v --shim "$SHIM" \
		--cupti "$CUPTI" -o "$out/full-$mode.pb.gz" -- "$PY" tools/gpu/train.py \
		>"$out/full-$mode.log" 2>&1
	echo "full $mode: rc=$? $(joins "$out/full-$mode.log")" >>"$sum"
	grep "^verdict\|^losses" "$out/full-$mode.log" | tail -2 >>"$sum"
done
export GPUPROBE_API_CALLBACKS=driver
STEPS=1200 LOADER_ARGS=-v tools/gpu/duty_hangs.sh "$out/hangs" "$N" >/dev/null 2>&1
cat "$out/hangs/duty_hangs.log" >>"$sum"
for mode in driver read; do
	export GPUPROBE_API_CALLBACKS=$mode
	echo "attach_cost $mode:" >>"$sum"
	MODEL=small CYCLES=$CYCLES ON=10 OFF=10 tools/gpu/attach_cost.sh "$out/ac-$mode" >>"$sum" 2>&1
done
cat "$sum"
