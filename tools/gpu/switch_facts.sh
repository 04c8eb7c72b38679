#!/usr/bin/env bash
# Facts behind "no reader, no records" on the real driver: (1) what CUPTI
# records when its activity is switched on after CUDA is up, in each order
# (tools/gpu/cupti_switch.cu); (2) the stack cache on tools/gpu/window_cost.py's
# training step (train mode) under a loader from the start (-- COMMAND)
# beside one attached mid-run (--pid), with -v: the frames where two stacks
# under one key part.
# Usage (repo root, GPU machine, after make static and the shim):
#   tools/gpu/switch_facts.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
export GPUPROBE_COUNTERS=all
nvcc -O2 -I"$CUDA/extras/CUPTI/include" -o build/cupti_switch tools/gpu/cupti_switch.cu -Xlinker "$CUPTI" || exit 1
for o in api-kinds kinds-api api-kinds-api; do
	ORDER=$o LD_LIBRARY_PATH=$(dirname "$CUPTI") build/cupti_switch
done
cache() { # LOG: the cache's line and the partings
	grep "^verdict" "$1"
	grep "^loader" "$1" | tail -1 | tr ' ' '\n' | grep -E "cache_(hits|audits|splits|split_keys|young)" | tr '\n' ' '; echo
	echo "partings: $(grep -c 'two stacks under one' "$1")"
	grep 'two stacks under one' "$1" | sed 's/.*native frame/native frame/' | sort | uniq -c | sort -rn | head -8
}
echo "== from the start (-- COMMAND)"
DURATION=20 timeout 120 $L -v --shim "$SHIM" --cupti "$CUPTI" -o "$out/start.pb.gz" \
	-- $PY tools/gpu/window_cost.py "$out/start-steps.txt" >"$out/start.log" 2>&1
cache "$out/start.log"
echo "== attached mid-run (--pid, 3 s into the steps, for 10 s)"
DURATION=20 CUDA_INJECTION64_PATH=$SHIM $PY tools/gpu/window_cost.py "$out/mid-steps.txt" >"$out/mid-prog.log" 2>&1 &
P=$!
until grep -q "window_cost: ready" "$out/mid-prog.log" 2>/dev/null; do kill -0 $P || exit 1; sleep 0.2; done
sleep 3
$L -v --pid $P -d 10 -o "$out/mid.pb.gz" >"$out/mid.log" 2>&1
wait $P
cache "$out/mid.log"
