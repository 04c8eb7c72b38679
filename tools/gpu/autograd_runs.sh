#!/usr/bin/env bash
# tools/gpu/autograd.py's modes under full profiling (and MODE=compile under
# torch.profiler), profiles and logs packed into OUTDIR/autograd.tgz for
# tools/stack-share.py: how much GPU time reaches each step function.
# Usage (repo root, GPU machine, after make static all):
#   tools/gpu/autograd_runs.sh OUTDIR [MODE...]   (default: compile two eager)
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; shift
modes=${*:-compile two eager}
mkdir -p "$out/ag"
. "$(dirname "$0")/launch_tools.sh"
for m in $modes; do
	MODE=$m STEPS=${STEPS:-20} timeout 400 build/static/gpuprobe-bpf \
		--shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" -o "$out/ag/$m.pb.gz" \
		-- $PY tools/gpu/autograd.py >"$out/ag/$m.log" 2>&1
	echo "== $m: exit=$?"
	grep -E "^timing|^loader" "$out/ag/$m.log"
	grep "^counters" "$out/ag/$m.log" | tr ' ' '\n' | grep -E "autograd|unattributed=|stacks_short" | tr '\n' ' '
	echo
	MODE=$m STEPS=${STEPS:-20} TORCH_PROFILE="$out/ag/$m.torch.json" timeout 400 $PY tools/gpu/autograd.py \
		>"$out/ag/$m.torch.log" 2>&1
	echo "   torch.profiler: exit=$?"
	grep "^timing" "$out/ag/$m.torch.log"
done
tar czf "$out/autograd.tgz" -C "$out" ag
