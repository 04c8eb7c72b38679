#!/usr/bin/env bash
# tools/gpu/graph_update.cu twice: built with -DFACTS, what CUPTI says of
# updated, re-parametered and child graphs (OUTDIR/graph_update.facts);
# then under full profiling (OUTDIR/graph_update.pb.gz and .log), for
# tests/bpf/stack_check.py graph on each kernel.
# Usage (repo root, GPU machine, after make static all): tools/gpu/graph_update.sh OUTDIR [R]
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; r=${2:-100}
. "$(dirname "$0")/launch_tools.sh"
cupti_inc=$(dirname "$(dirname "$CUPTI")")/include
nvcc -O2 -o build/graph_update tools/gpu/graph_update.cu || exit 1
nvcc -O2 -DFACTS -I"$cupti_inc" -I"$CUDA/extras/CUPTI/include" -o build/graph_update_facts \
	tools/gpu/graph_update.cu -L"$(dirname "$CUPTI")" -l:"$(basename "$CUPTI")" -lcuda -Xlinker -rpath -Xlinker "$(dirname "$CUPTI")" || exit 1
build/graph_update_facts 3 >"$out/graph_update.facts" 2>&1
echo "graph_update facts: exit=$?"
grep -v "^kernel" "$out/graph_update.facts"
awk '/^kernel/ { print $3, $4, $5 }' "$out/graph_update.facts" | sort | uniq -c | head -40
build/static/gpuprobe-bpf --shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" \
	-o "$out/graph_update.pb.gz" -- build/graph_update "$r" >"$out/graph_update.log" 2>&1
echo "graph_update profiled: exit=$?"
grep -E "^graph_update|^verdict" "$out/graph_update.log"
grep "^counters" "$out/graph_update.log" | tail -1 | grep -o "graph_activities=[^)]*)\|graph_nodes=[^)]*)\|api_without_launch=[0-9]*\|launches_without_record=[0-9]*"
