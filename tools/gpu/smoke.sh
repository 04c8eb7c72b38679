#!/usr/bin/env bash
# First look on a GPU machine: the static loader runs, the shim loads real
# CUPTI, and full profiles of the CUDA C sample and the PyTorch loop come out.
# Usage (from the repo root, as root): tools/gpu/smoke.sh OUTDIR
# Needs build/static/gpuprobe-bpf and build/libgpuprobe_shim.so (make static all).
set -uo pipefail
out=${1:?OUTDIR}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
L=build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
site=$($PY -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* 2>/dev/null | head -1)
{
	echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r
	$PY -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
	echo "libcuda: $(ldconfig -p | grep 'libcuda.so.1 ' | head -1)"; echo "cupti: $CUPTI"
	echo "== $L --help"; $L --help | head -3
} >"$out/smoke.log" 2>&1
nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu >>"$out/smoke.log" 2>&1
echo "== full: empty_launch 20000" >>"$out/smoke.log"
timeout 120 $L --shim "$SHIM" --cupti "$CUPTI" -o "$out/empty.pb.gz" -- build/empty_launch 20000 >>"$out/smoke.log" 2>&1
echo "exit=$?" >>"$out/smoke.log"
echo "== bare train.py" >>"$out/smoke.log"
STEPS=10 timeout 300 $PY tools/gpu/train.py >>"$out/smoke.log" 2>&1
echo "== shim only train.py" >>"$out/smoke.log"
STEPS=10 CUDA_INJECTION64_PATH=$SHIM GPUPROBE_CUPTI=$CUPTI timeout 300 $PY tools/gpu/train.py >>"$out/smoke.log" 2>&1
echo "exit=$?" >>"$out/smoke.log"
echo "== full: train.py" >>"$out/smoke.log"
STEPS=10 timeout 300 $L --shim "$SHIM" --cupti "$CUPTI" -o "$out/train.pb.gz" -- $PY tools/gpu/train.py >>"$out/smoke.log" 2>&1
echo "exit=$?" >>"$out/smoke.log"
cat "$out/smoke.log"
