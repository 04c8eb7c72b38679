#!/usr/bin/env bash
# No hangs under the duty cycle's switches: train.py (lazy loading, the
# default) runs with the shim under one loader (--pid, --duty 0.5 --window 1:
# 1 s windows at random offsets, about 15 switches a minute each way), so
# the shim's thread switches CUPTI's activity on and off while kernels run
# and modules load. N runs, each under a watchdog, each result line
# compared with a bare run's.
# Usage (repo root, GPU machine, after make static and the shim):
#   [LOADER_ARGS="-v"] [WANT="result ..."] tools/gpu/duty_hangs.sh OUTDIR [N]
# (WANT: the bare result line, when a caller has it already)
set -uo pipefail
out=${1:?OUTDIR}; n=${2:-10}
mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
export STEPS=${STEPS:-1200} GRAPH_REPLAYS=${GRAPH_REPLAYS:-40} GPUPROBE_COUNTERS=all
log="$out/duty_hangs.log"; : >"$log"
want=${WANT:-$(timeout 120 $PY tools/gpu/train.py | grep "^result")}
echo "bare: $want" >>"$log"
ok=0
for i in $(seq 1 "$n"); do
	CUDA_INJECTION64_PATH=$SHIM $PY tools/gpu/train.py >"$out/run-$i.log" 2>&1 &
	p=$!
	(sleep 120; kill -9 $p 2>/dev/null) &
	dog=$!
	$L --pid $p --duty 0.5 --window 1 ${LOADER_ARGS:-} -o "$out/d-$i.pb.gz" >"$out/loader-$i.log" 2>&1
	wait $p; rc=$?
	kill $dog 2>/dev/null
	got=$(grep '^result' "$out/run-$i.log")
	sw=$(grep -o "recording_on=[0-9]* recording_off=[0-9]*" "$out/loader-$i.log" | tail -1)
	win=$(grep -o "duty_windows=[0-9]*" "$out/loader-$i.log" | tail -1)
	if [ "$got" = "$want" ] && [ $rc = 0 ]; then ok=$((ok + 1)); fi
	echo "run $i: rc=$rc $win $sw $([ "$got" = "$want" ] && echo same || echo "got '$got'")" >>"$log"
	# the join's losses, and with -v the first ids two calls held, so that a stuck run's facts come back
	for k in joined launch_events corr_reused activities_on_reused launches_without_activity unattributed \
		api_without_launch; do
		grep -o "\b$k=[0-9]*" "$out/loader-$i.log" | tail -1
	done | tr '\n' ' ' | sed 's/^/    /; s/$/\n/' >>"$log"
	grep -m 4 "held twice" "$out/loader-$i.log" | sed 's/^/    /' >>"$log"
done
echo "1 s windows switched under the program: $ok of $n runs completed with the bare result" >>"$log"
cat "$log"
