#!/usr/bin/env bash
# The main job on a built-in default: profile the bundled stub workload (no
# GPU needed) and print the report and the profile's top entries. On a
# machine with an NVIDIA GPU and nvcc, GPUPROBE_DEMO_GPU=1 also profiles the
# bundled CUDA sample (tools/gpu/empty_launch.cu).
# Usage: tools/demo.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
out="$build/demo.pb.gz"
if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root (BPF); run: sudo make demo" >&2
	exit 1
fi
echo "== gpuprobe-bpf -- launcher (stub vendor: a fake libcuda + CUPTI, no GPU needed)"
LD_LIBRARY_PATH="$build/stub" "$build/gpuprobe-bpf" -o "$out" \
	--libcuda "$build/stub/libcuda.so.1" -- "$build/tests/progs/launcher" -t 4 -n 200
echo
echo "== go tool pprof -top $out"
go tool pprof -top "$out" 2>/dev/null | head -25
if [ "${GPUPROBE_DEMO_GPU:-0}" = 1 ] && command -v nvidia-smi >/dev/null && command -v nvcc >/dev/null; then
	echo
	echo "== the CUDA sample on the real GPU"
	nvcc -O2 -o "$build/empty_launch" tools/gpu/empty_launch.cu -lcuda
	"$build/gpuprobe-bpf" -o "$build/demo-gpu.pb.gz" -- "$build/empty_launch" 20000
	go tool pprof -top "$build/demo-gpu.pb.gz" 2>/dev/null | head -15
fi
