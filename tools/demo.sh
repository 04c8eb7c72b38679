#!/usr/bin/env bash
# The main job on a built-in default: profile the bundled stub workload (no
# GPU needed), and print the loader's report, the profile's top functions
# and one whole stack, each after the exact command that made it, and a
# timeline of the run (--trace). On a
# machine with an NVIDIA GPU and nvcc, GPUPROBE_DEMO_GPU=1 also profiles the
# bundled CUDA sample (tools/gpu/empty_launch.cu).
# Usage: [DEMO_OUT=DIR] tools/demo.sh BUILD_DIR (DIR: where the profile and
# the timeline go, BUILD_DIR by default)
set -euo pipefail
build=${1:-build}
dir=${DEMO_OUT:-$build}
out="$dir/demo.pb.gz"
if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root (BPF); run: sudo make demo" >&2
	exit 1
fi
# Each step prints the command it runs, exactly, then what it printed.
run() {
	printf '\n$'
	printf ' %q' "$@"
	printf '\n'
	"$@"
}
echo "== the bundled workload on the stub vendor (a fake libcuda + CUPTI, no GPU needed)"
run env LD_LIBRARY_PATH="$build/stub" "$build/gpuprobe-bpf" -o "$out" --trace "$dir/demo.json" \
	--libcuda "$build/stub/libcuda.so.1" -- "$build/tests/progs/launcher" -t 4 -n 200
echo
echo "== the profile: GPU time by function (leaf and callers)"
run go tool pprof -top "$out"
echo
echo "== one whole stack (the profile's first sample), kernel first"
printf '\n$ go tool pprof -traces %q | (the first sample)\n' "$out"
go tool pprof -traces "$out" | awk '/^-+\+-+$/ { if (n++) exit } n'
echo
echo "== the timeline: $dir/demo.json (trace-event JSON: open it in ui.perfetto.dev,"
echo "   chrome://tracing or speedscope; each launch call under its stack, each kernel"
echo "   on its stream, an arrow between)"
if [ "${GPUPROBE_DEMO_GPU:-0}" = 1 ] && command -v nvidia-smi >/dev/null && command -v nvcc >/dev/null; then
	echo
	echo "== the CUDA sample on the real GPU"
	nvcc -O2 -o "$build/empty_launch" tools/gpu/empty_launch.cu -lcuda
	run "$build/gpuprobe-bpf" -o "$build/demo-gpu.pb.gz" -- "$build/empty_launch" 20000
	run go tool pprof -top "$build/demo-gpu.pb.gz"
fi
