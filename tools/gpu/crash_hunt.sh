#!/usr/bin/env bash
# Hunts a rare fault of the profiled program under the duty cycle: PAR
# train.py processes at once, each with its own loader (--duty 0.5 --window 1:
# a CUPTI switch on and off every two seconds or so), each with
# tools/gpu/segv_trace.so preloaded, which prints the faulting thread and its
# backtrace. Each process runs (b)'s steps for about SECS seconds.
# Usage (repo root, GPU machine, after make static and the shim):
#   [PAR=4] [SECS=240] tools/gpu/crash_hunt.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
PAR=${PAR:-4}; SECS=${SECS:-240}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
gcc -O1 -g -shared -fPIC -o build/segv_trace.so tools/gpu/segv_trace.c || exit 1
steps=$((SECS * 80))
for i in $(seq "$PAR"); do
	timeout $((SECS * 2 + 60)) $L -v --duty 0.5 --window 1 --shim "$PWD/build/libgpuprobe_shim.so" \
		-o "$out/h$i.pb.gz" -- env LD_PRELOAD="$PWD/build/segv_trace.so" STEPS=$steps GRAPH_REPLAYS=0 \
		$PY tools/gpu/train.py >"$out/train-$i.log" 2>"$out/loader-$i.log" &
done
wait
for i in $(seq "$PAR"); do
	echo "process $i: $(grep -c 'duty: window open' "$out/loader-$i.log") windows; $(grep '^verdict' "$out/loader-$i.log" | cut -c1-160)"
	grep -A40 'segv_trace' "$out/loader-$i.log" "$out/train-$i.log" | head -60
done
