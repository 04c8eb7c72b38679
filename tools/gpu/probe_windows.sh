#!/usr/bin/env bash
# The probes' cost in one process (tools/gpu/probe_windows.py): train.py's
# small step (b) then its GPU-bound step (e), then (with LAUNCHES > 0) the
# empty-kernel launch loop (a) in a process of its own, its batches of 5,000
# launches labelled as the steps are; the shim recording throughout
# (GPUPROBE_RECORD=always), the loader's launch probes attached in duty
# windows (--duty 0.5 --window WINDOW) and detached between. RUNS processes;
# each cost by step and by window (the one to judge by: tools/gpu/probe_windows.py),
# then by window over all the runs' windows.
# Usage (repo root, GPU machine, after make static and the shim):
#   [L=LOADER] [STEPS=3000] [BIG_STEPS=1000] [LAUNCHES=0] [WINDOW=1] [RUNS=2] tools/gpu/probe_windows.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
STEPS=${STEPS:-3000}; BIG_STEPS=${BIG_STEPS:-1000}; WINDOW=${WINDOW:-1}; RUNS=${RUNS:-2}
LAUNCHES=${LAUNCHES:-0}
. "$(dirname "$0")/launch_tools.sh"
L=${L:-$PWD/build/static/gpuprobe-bpf} # the loader (a build to compare: L=build/abl/gp_NAME)
# CMD under the loader's windows, the shim recording throughout; the
# program's stdout to STDOUT, the loader's -v log to LOG, its window edges
# to EDGES; prints the loader's exit, verdict and duty lines.
windows() { # LABEL PROFILE STDOUT LOG EDGES CMD...
	local label=$1 pb=$2 stdout=$3 log=$4 edges=$5
	shift 5
	$L -v --duty 0.5 --window "$WINDOW" --shim "$PWD/build/libgpuprobe_shim.so" -o "$pb" -- \
		env GPUPROBE_RECORD=always "$@" >"$stdout" 2>"$log"
	echo "$label: loader exit $?"
	grep "^verdict\|^duty:" "$log"
	grep "duty: window\|stopping at" "$log" >"$edges"
}
train_run() { # RUN
	local r=$1
	windows "run $r" "$out/p$r.pb.gz" "$out/train-$r.log" "$out/loader-$r.log" "$out/edges-$r.txt" \
		STEPS="$STEPS" BIG_STEPS="$BIG_STEPS" GRAPH_REPLAYS=0 STEP_TIMES="$out/steps-b-$r.txt" \
		BIG_STEP_TIMES="$out/steps-e-$r.txt" $PY tools/gpu/train.py
	[ "$STEPS" -gt 0 ] && { echo "(b):"; $PY tools/gpu/probe_windows.py "$out/edges-$r.txt" "$out/steps-b-$r.txt"; }
	[ "$BIG_STEPS" -gt 0 ] && { echo "(e):"; $PY tools/gpu/probe_windows.py "$out/edges-$r.txt" "$out/steps-e-$r.txt"; }
}
launch_run() { # RUN
	local r=$1
	windows "run $r (a)" "$out/a$r.pb.gz" "$out/launch-$r.log" "$out/loader-a-$r.log" \
		"$out/edges-a-$r.txt" BATCH_TIMES="$out/steps-a-$r.txt" build/empty_launch "$LAUNCHES"
	echo "(a):"; $PY tools/gpu/probe_windows.py "$out/edges-a-$r.txt" "$out/steps-a-$r.txt" 20 5000
}
for r in $(seq "$RUNS"); do
	[ "$STEPS" -gt 0 ] || [ "$BIG_STEPS" -gt 0 ] && train_run "$r"
	[ "$LAUNCHES" -gt 0 ] && launch_run "$r"
done
# The cost by window over every run's windows.
pool() { $PY tools/gpu/probe_windows.py --runs "$1, all runs" "$out/$2" "$out/$3" "$RUNS"; }
[ "$STEPS" -gt 0 ] && pool "(b)" edges steps-b
[ "$BIG_STEPS" -gt 0 ] && pool "(e)" edges steps-e
[ "$LAUNCHES" -gt 0 ] && pool "(a)" edges-a steps-a
true
