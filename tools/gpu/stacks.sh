#!/usr/bin/env bash
# Full stacks on the GPU machine: the PyTorch loop profiled with CFI
# unwinding and Python frames (the default) and with frame pointers only;
# the profiles come back for tools/stack-share.py. Also the per-launch cost
# of each stack mode on the empty-kernel loop (tools/gpu/copy_cost.sh).
# Usage (repo root, GPU machine, after make static all): tools/gpu/stacks.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
for mode in cfi fp; do
	STEPS=30 timeout 300 $L --unwind $mode --shim "$SHIM" --cupti "$CUPTI" -o "$out/train-$mode.pb.gz" \
		-- $PY tools/gpu/train.py >"$out/train-$mode.log" 2>&1
	echo "train $mode exit=$?" >>"$out/train-$mode.log"
	grep -E "^counters|^loader|exit=|median_step|Python|python" "$out/train-$mode.log" | cut -c1-400
done
MODES="bare fp cfi16 cfi32" tools/gpu/copy_cost.sh "$out/copy" 3 | tail -6
