#!/usr/bin/env bash
# CUPTI's cubin CRC on real cubins, and the cubins themselves, so the
# algorithm can be matched offline by tools/crc-match.py.
# Usage (repo root, GPU machine): tools/gpu/crc.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}
mkdir -p "$out/cubins"
PY=${PY:-/opt/torch/.venv/bin/python3}
site=$($PY -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* 2>/dev/null | head -1)
gcc -O2 -o build/crc_probe tools/gpu/crc_probe.c -ldl || exit 1
for a in 80 90; do
	nvcc -cubin -arch=sm_$a -o "$out/cubins/empty_sm$a.cubin" tools/gpu/empty_launch.cu
	nvcc -cubin -arch=sm_$a -G -o "$out/cubins/empty_dbg_sm$a.cubin" tools/gpu/empty_launch.cu
done
# a few real library cubins, small ones first
lib=$(ls "$site"/torch/lib/libtorch_cuda.so 2>/dev/null)
if [ -n "$lib" ] && command -v cuobjdump >/dev/null; then
	(cd "$out/cubins" && timeout 120 cuobjdump -xelf all "$site"/torch/lib/libc10_cuda.so >/dev/null 2>&1)
fi
ls -S "$out/cubins" | tail -8 | sed "s|^|$out/cubins/|" >"$out/list"
build/crc_probe "$CUPTI" $(cat "$out/list") | tee "$out/crc.txt"
# keep at most a few MB of cubins for the offline match
find "$out/cubins" -size +2M -delete
