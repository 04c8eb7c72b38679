#!/usr/bin/env bash
# tools/gpu/graph_api.cu under full profiling: OUTDIR/graph_api.pb.gz and
# .log, for tests/bpf/stack_check.py's graph mode (k_cap under capture_site,
# k_api and the memset under api_site, each then replay_site).
# Usage (repo root, GPU machine, after make static all): tools/gpu/graph_api.sh OUTDIR [R]
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; r=${2:-100}
. "$(dirname "$0")/launch_tools.sh"
nvcc -O2 -o build/graph_api tools/gpu/graph_api.cu || exit 1
build/static/gpuprobe-bpf --shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" \
	-o "$out/graph_api.pb.gz" -- build/graph_api "$r" >"$out/graph_api.log" 2>&1
echo "graph_api: exit=$?"
grep -E "^graph_api" "$out/graph_api.log"
grep "^counters" "$out/graph_api.log" | tail -1 | grep -o "graph_activities=[^)]*)\|graph_nodes=[^)]*)\|api_without_launch=[0-9]*\|launches_without_record=[0-9]*"
