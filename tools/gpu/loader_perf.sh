#!/usr/bin/env bash
# Where the loader's own CPU goes on the bench's (b) workload: train.py as
# `gpuprobe-bpf -- python3 train.py` (the full mode, as loader_cpu.sh runs
# it). perf is attached to the loader's pid once it started (so its first
# milliseconds are missed), cpu-clock at 999 Hz with frame-pointer chains;
# the children it forks later are sampled too, and the reports keep the
# loader's comm only. Writes, per run, the loader's log, the flat profile
# (self time by library and symbol), the inclusive one (by symbol) and the
# callers of the hottest symbols.
# Usage (repo root, GPU machine, after make static all):
#   [PERF="perf"] tools/gpu/loader_perf.sh OUTDIR [RUNS]
# Without perf on the GPU machine, carry one with its libraries, e.g. a
# folder K holding Debian's /usr/bin/perf, the libraries `ldd` lists and
# ld-linux-x86-64.so.2:
#   PERF="$K/ld-linux-x86-64.so.2 --library-path $K $K/perf"
set -uo pipefail
out=${1:?OUTDIR}; runs=${2:-2}
mkdir -p "$out"
PERF=${PERF:-perf}
. "$(dirname "$0")/cupti_env.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
STEPS=${STEPS:-60}; REPLAYS=${REPLAYS:-200}
for r in $(seq 1 "$runs"); do
	STEPS=$STEPS GRAPH_REPLAYS=$REPLAYS "$L" --shim "$SHIM" --cupti "$CUPTI" \
		-o "$out/p$r.pb.gz" -- "$PY" tools/gpu/train.py >"$out/l$r.log" 2>&1 &
	lp=$!
	$PERF record -q -e cpu-clock -F 999 --call-graph fp -p "$lp" -o "$out/perf$r.data" \
		2>"$out/perf$r.err" &
	pp=$!
	wait "$lp"
	kill -INT "$pp" 2>/dev/null
	wait "$pp"
	rep="timeout 60 $PERF report -i $out/perf$r.data --stdio --comms gpuprobe-bpf"
	$rep --no-children --sort dso,sym --percent-limit 0.3 -g none >"$out/self$r.txt" 2>&1
	$rep --children --sort sym --percent-limit 1.5 -g none >"$out/children$r.txt" 2>&1
	$rep --no-children --sort sym --percent-limit 3 -g caller,0.5,callee,function,percent \
		>"$out/callers$r.txt" 2>&1
	echo "run $r: $(grep -o 'loader:.*' "$out/l$r.log" | tail -1 | cut -c1-300)"
done
