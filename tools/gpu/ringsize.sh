#!/usr/bin/env bash
# What the BPF ring's size costs and buys: the launch loop and the PyTorch
# loop under full profiling with --ringbuf-mb N for each size given,
# interleaved over ROUNDS rounds; per run the loader's peak RSS, the launch
# queue's peak and every counter that says an event or a stack copy was lost.
# Usage (repo root, GPU machine, after make static all):
#   tools/gpu/ringsize.sh OUTDIR [ROUNDS] [MB...]     (default: 3 rounds of 8 16 32)
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; rounds=${2:-3}; shift $(( $# < 2 ? $# : 2 ))
sizes=${*:-8 16 32}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
[ -x build/empty_launch ] || nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu || exit 1
for r in $(seq 1 "$rounds"); do
	for mb in $sizes; do
		for wl in launch train; do
			log="$out/$wl-$mb-$r.log"
			if [ $wl = launch ]; then cmd=(build/empty_launch 200000); else cmd=($PY tools/gpu/train.py); fi
			STEPS=60 GRAPH_REPLAYS=200 timeout 300 $L --ringbuf-mb "$mb" --shim "$SHIM" \
				--cupti "$CUPTI" -o "$out/$wl-$mb-$r.pb.gz" -- "${cmd[@]}" >"$log" 2>&1
			echo "$wl ring=${mb}MiB round=$r exit=$? $(sed -n 's/^loader: .*\(max_rss_mb=[0-9.]*\).*\(queue_peak_mb=[0-9.]*\).*/\1 \2/p' "$log")" \
				"$(grep '^counters' "$log" | tr ' ' '\n' | grep -E '^(launch_events|ringbuf_full|copy_skipped|copy_errors|stacks_short|unattributed)=' | tr '\n' ' ')"
		done
	done
done
