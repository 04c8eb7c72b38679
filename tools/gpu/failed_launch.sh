#!/usr/bin/env bash
# Refused launches on the real driver (tools/gpu/failed_launch.cu) under the
# loader: the report must count no launch without its activity, and every
# good launch joined.
# Usage (repo root, GPU machine, after make static and the shim):
#   tools/gpu/failed_launch.sh OUTDIR [N]
set -uo pipefail
out=${1:?OUTDIR}; n=${2:-100}; mkdir -p "$out"
nvcc -O2 -o build/failed_launch tools/gpu/failed_launch.cu -lcuda || exit 1
build/static/gpuprobe-bpf --shim "$PWD/build/libgpuprobe_shim.so" -o "$out/failed.pb.gz" -- \
	build/failed_launch "$n" >"$out/failed.out" 2>"$out/failed.err"
echo "exit $?"; cat "$out/failed.out"
grep '^verdict' "$out/failed.err"
grep '^counters' "$out/failed.err" | tail -1 | tr ' ' '\n' | grep 'launch_events\|joined\|without\|^unattributed'
