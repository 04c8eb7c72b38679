#!/usr/bin/env bash
# A loader attached mid-run (--pid) to a PyTorch training loop started with
# the shim and no loader: before the attach the shim records nothing (no
# reader, no records: shim/gp_abi.h), so the loader finds no stale ring;
# after its switch-on every launch is joined. The loader ends with the
# program, so nothing is cut at a stop. Prints the ring header before the
# attach and the loader's verdict and counters. DELAY counts from the
# shim's ring (CUDA started), not from the program's start.
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
# DELAY seconds after CUDA started (its ring made): a cold machine took more
# than 13 s to get there, and an attach before it tests nothing mid-run.
for _ in $(seq 600); do
	python3 tests/bpf/shm_peek.py $P >/dev/null 2>&1 && break
	kill -0 $P 2>/dev/null || { echo "midrun: train.py ended (see $out/train.log)" >&2; exit 1; }
	sleep 0.2
done
sleep "$DELAY"
echo "before the attach ($DELAY s after CUDA started): $(python3 tests/bpf/shm_peek.py $P)"
$L -v --pid $P -o "$out/midrun.pb.gz" 2>"$out/loader.err"
wait $P; echo "train.py exit $?"
grep "^verdict" "$out/loader.err"
grep "^counters" "$out/loader.err" | tail -1 | tr ' ' '\n' | grep -v '=0$\|=0)$' | tr '\n' ' '; echo
# The stack cache's word on the attach, zeros too.
echo "$(grep "^counters" "$out/loader.err" | tail -1 | grep -o ' stack_cache_mismatch=[0-9]*\| ring_dropped=[0-9]*')" \
	"$(grep "^loader" "$out/loader.err" | tail -1 | grep -o ' cache_other_state=[0-9]*\| cache_forgotten=[0-9]*')"
