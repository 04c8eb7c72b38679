#!/usr/bin/env bash
# A loader attached mid-run (--pid) to a PyTorch training loop started with
# the shim and no loader: before the attach the shim records nothing (no
# reader, no records: shim/gp_abi.h), so the loader finds no stale ring;
# after its switch-on every launch is joined. The loader ends with the
# program, so nothing is cut at a stop. Prints the ring header before the
# attach and the loader's verdict and counters.
# Usage (repo root, GPU machine, after make static and the shim):
#   [DELAY=13] [STEPS=3000] tools/gpu/midrun.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
DELAY=${DELAY:-13}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
export GPUPROBE_COUNTERS=all
STEPS=${STEPS:-3000} GRAPH_REPLAYS=200 CUDA_INJECTION64_PATH=$PWD/build/libgpuprobe_shim.so \
	$PY tools/gpu/train.py >"$out/train.log" 2>&1 &
P=$!
sleep "$DELAY"
echo "before the attach ($DELAY s in): $(python3 tests/bpf/shm_peek.py $P)"
$L -v --pid $P -o "$out/midrun.pb.gz" 2>"$out/loader.err"
wait $P; echo "train.py exit $?"
grep "^verdict" "$out/loader.err"
grep "^counters" "$out/loader.err" | tail -1 | tr ' ' '\n' | grep -v '=0$\|=0)$' | tr '\n' ' '; echo
