#!/usr/bin/env bash
# No hangs while recording is switched on and off under a running program:
# train.py (lazy loading, the default) runs with the shim and no loader,
# while loaders attach (--pid -d 3) one after the other until it exits: each
# attach makes the shim's thread switch CUPTI's activity on, each departure
# off, while kernels run and modules load. N runs, each under a timeout, each
# result line compared with a bare run's.
# Usage (repo root, GPU machine, after make static and the shim):
#   tools/gpu/toggle_hangs.sh OUTDIR [N]
set -uo pipefail
out=${1:?OUTDIR}; n=${2:-10}
mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
# STEPS long enough that several loaders come and go during the steps
export STEPS=${STEPS:-1200} GRAPH_REPLAYS=${GRAPH_REPLAYS:-40} GPUPROBE_COUNTERS=all
log="$out/toggle_hangs.log"; : >"$log"
want=$(timeout 120 $PY tools/gpu/train.py | grep '^result')
echo "bare: $want" >>"$log"
ok=0
for i in $(seq 1 "$n"); do
	# the program itself (no timeout wrapper: --pid must name it); a watchdog ends a hang
	CUDA_INJECTION64_PATH=$SHIM $PY tools/gpu/train.py >"$out/run-$i.log" 2>&1 &
	p=$!
	(sleep 120; kill -9 $p 2>/dev/null) &
	dog=$!
	k=0
	while kill -0 $p 2>/dev/null; do
		$L --pid $p -d 3 -o "$out/t-$i.pb.gz" >"$out/loader-$i-$k.log" 2>&1
		k=$((k + 1))
	done
	wait $p; rc=$?
	kill $dog 2>/dev/null
	got=$(grep '^result' "$out/run-$i.log")
	# the shim's own counts of its switches, as the loader that saw most of them read them
	sw=$(grep -ho "recording_on=[0-9]* recording_off=[0-9]*" "$out"/loader-$i-*.log | sort -t= -k2 -n | tail -1)
	if [ "$got" = "$want" ] && [ $rc = 0 ]; then ok=$((ok + 1)); fi
	echo "run $i: rc=$rc loaders=$k $sw $([ "$got" = "$want" ] && echo same || echo "got '$got'")" >>"$log"
done
echo "switched on and off under the program: $ok of $n runs completed with the bare result" >>"$log"
cat "$log"
