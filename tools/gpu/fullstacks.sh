#!/usr/bin/env bash
# The PyTorch loop under full profiling with each --stack-copy size given,
# profiles and logs packed into OUTDIR/fullstacks.tgz for tools/stack-share.py.
# Usage (repo root, GPU machine, after make static all):
#   tools/gpu/fullstacks.sh OUTDIR [KIB...]      (default: 32 64)
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; shift
sizes=${*:-32 64}
mkdir -p "$out/fs"
PY=${PY:-/opt/torch/.venv/bin/python3}
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
for k in $sizes; do
	STEPS=60 GRAPH_REPLAYS=200 timeout 300 build/static/gpuprobe-bpf --stack-copy "$k" \
		--shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" -o "$out/fs/train-$k.pb.gz" \
		-- $PY tools/gpu/train.py >"$out/fs/train-$k.log" 2>&1
	echo "== $k KiB: exit=$?"
	grep -E "^timing|^loader" "$out/fs/train-$k.log"
	grep "^counters" "$out/fs/train-$k.log" | tr ' ' '\n' | grep -E "launch_events|ringbuf_full|copy_|unattributed=|stacks_short|python_" | tr '\n' ' '
	echo
done
tar czf "$out/fullstacks.tgz" -C "$out" fs
