#!/usr/bin/env bash
# No hangs, same results: the PyTorch loop under lazy loading, N runs with the
# shim only and M with the loader attached, each under a timeout, each result
# line compared with a bare run's; then one EAGER run whose modules must all be
# captured or counted. Usage: tools/gpu/hangs.sh OUTDIR [N] [M]
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; n=${2:-30}; m=${3:-10}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
export GPUPROBE_CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
export STEPS=5 GRAPH_REPLAYS=5
log="$out/hangs.log"; : >"$log"
want=$(timeout 120 $PY tools/gpu/train.py | grep '^result')
echo "bare: $want" >>"$log"
ok=0
for i in $(seq 1 "$n"); do
	got=$(CUDA_INJECTION64_PATH=$SHIM timeout 60 $PY tools/gpu/train.py 2>>"$log" | grep '^result'); rc=$?
	[ "$got" = "$want" ] && ok=$((ok + 1)) || echo "shim run $i: rc=$rc got '$got'" >>"$log"
done
echo "shim only: $ok of $n runs completed with the bare result" >>"$log"
ok=0
for i in $(seq 1 "$m"); do
	timeout 90 $L --shim "$SHIM" -o "$out/h$i.pb.gz" -- $PY tools/gpu/train.py >"$out/full-$i.log" 2>&1; rc=$?
	got=$(grep '^result' "$out/full-$i.log")
	if [ "$got" = "$want" ] && [ $rc = 0 ] && grep -q "unattributed=0 " "$out/full-$i.log"; then ok=$((ok + 1));
	else echo "full run $i: rc=$rc got '$got' $(grep counters "$out/full-$i.log")" >>"$log"; fi
done
echo "loader attached: $ok of $m runs completed, same result, zero unattributed" >>"$log"
grep -h counters "$out/full-$m.log" >>"$log"
echo "== EAGER" >>"$log"
CUDA_MODULE_LOADING=EAGER timeout 300 $L --shim "$SHIM" -o "$out/eager.pb.gz" -- $PY tools/gpu/train.py >"$out/eager.log" 2>&1
echo "eager rc=$?" >>"$log"
grep -h "^result\|counters" "$out/eager.log" >>"$log"
cat "$log"
