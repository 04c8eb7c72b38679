#!/usr/bin/env bash
# A backward pass's final callback (tools/gpu/post_callback.py) under full
# profiling, and which engine symbols libtorch exports for the pass's post
# processing. Writes OUTDIR/post.pb.gz, OUTDIR/post.log and prints a summary.
# Usage (repo root, GPU machine, after make static all): tools/gpu/post_callback.sh OUTDIR
set -uo pipefail
export GPUPROBE_COUNTERS=all
out=${1:?OUTDIR}
. "$(dirname "$0")/launch_tools.sh"
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
echo "== post-processing symbols in libtorch_cpu"
nm -D --defined-only "$site/torch/lib/libtorch_cpu.so" | grep -E "post_processing|GraphTask" | c++filt | head -20
STEPS=${STEPS:-20} timeout 300 build/static/gpuprobe-bpf --shim "$PWD/build/libgpuprobe_shim.so" \
	--cupti "$CUPTI" -o "$out/post.pb.gz" -- $PY tools/gpu/post_callback.py >"$out/post.log" 2>&1
echo "== profiled: exit=$?"
grep -E "^post_callback|^verdict" "$out/post.log"
grep "^counters" "$out/post.log" | tail -1 | tr ' ' '\n' | grep -E "autograd|caller|own_thread|after_node|nested" | tr '\n' ' '
echo
