#!/usr/bin/env bash
# Real CUPTI at a window's opening and at a stop (the loader waits for the
# shims): train.py under --duty 0.5 --window 1 (each window's probes wait
# until the shim records: duty_unready, launches_before_recording), then a
# --pid -d 5 attached to a running train.py and stopped while it runs on
# (the stop reads on until the shim has flushed: how long it took, and
# whether every launch before it joined).
# Usage (repo root, GPU machine, after make static and the shim):
#   [STEPS=400] tools/gpu/stop_check.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
fields() { grep "^counters:" "$1" | tail -1 | tr ' ' '\n' |
	grep -E "^(duty_windows|duty_unready|launches_before_recording|launches_without_record|unattributed|ring_dropped|launches_outside|joined)="; }

echo "== duty 0.5, windows of 1 s"
$L -v --duty 0.5 --window 1 --shim "$SHIM" -o "$out/duty.pb.gz" -- \
	env STEPS="${STEPS:-400}" GRAPH_REPLAYS=0 $PY tools/gpu/train.py >"$out/duty.log" 2>"$out/duty.err"
echo "loader exit $?"
grep "^verdict\|^duty:" "$out/duty.err"
fields "$out/duty.err"
echo "windows opened: $(grep -c 'duty: window open' "$out/duty.err")"

echo "== --pid -d 5 on a running train.py, stopped while it runs on"
CUDA_INJECTION64_PATH="$SHIM" STEPS=100000 GRAPH_REPLAYS=0 $PY tools/gpu/train.py >"$out/pid.log" 2>&1 &
T=$!
sleep 20 # its start (CUDA, cuDNN, the first steps)
$L -v --pid $T -d 5 -o "$out/pid.pb.gz" 2>"$out/pid.err"
echo "loader exit $?"
kill $T; wait $T 2>/dev/null
grep "^verdict" "$out/pid.err"
fields "$out/pid.err"
grep "wrote\|stopping at\|stopped: read on" "$out/pid.err"
