#!/usr/bin/env bash
# Full profiling against torch.profiler, each measured inside its own process
# (issue #19's "full below torch.profiler"): train.py's small step (b) then
# its GPU-bound step (e), RUNS rounds, each a pair of processes run one after
# the other:
#   full: the loader's duty cycle (--duty 0.5 --window WINDOW): in each window
#         the shim records and the launch probes are attached; between, the
#         shim is idle and the probes detached;
#   peer: torch.profiler (activities=[CUDA], the bench's peer) started and
#         stopped by train.py itself in windows of the same length and duty
#         (PEER_WINDOWS, tools/gpu/peer.py).
# Each step is labelled on/off/edge by its process's logged windows; the cost
# is median(on) / median(off) - 1 with its 95% bootstrap interval, by step
# and by window (the one to judge by: tools/gpu/probe_windows.py), then by
# window over all the rounds.
# Usage (repo root, GPU machine, after make static and the shim):
#   [STEPS=2000] [BIG_STEPS=600] [WINDOW=1] [RUNS=3] tools/gpu/peer_windows.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
STEPS=${STEPS:-2000}; BIG_STEPS=${BIG_STEPS:-600}; WINDOW=${WINDOW:-1}; RUNS=${RUNS:-3}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
run_env=(STEPS="$STEPS" BIG_STEPS="$BIG_STEPS" GRAPH_REPLAYS=0 WINDOW="$WINDOW")
report() { # MODE RUN EDGES
	[ "$STEPS" -gt 0 ] && { echo "$1 $2 (b):"; $PY tools/gpu/probe_windows.py "$3" "$out/steps-b-$1-$2.txt"; }
	[ "$BIG_STEPS" -gt 0 ] && { echo "$1 $2 (e):"; $PY tools/gpu/probe_windows.py "$3" "$out/steps-e-$1-$2.txt"; }
}
for r in $(seq "$RUNS"); do
	$L -v --duty 0.5 --window "$WINDOW" --shim "$PWD/build/libgpuprobe_shim.so" -o "$out/full-$r.pb.gz" -- \
		env "${run_env[@]}" STEP_TIMES="$out/steps-b-full-$r.txt" BIG_STEP_TIMES="$out/steps-e-full-$r.txt" \
		$PY tools/gpu/train.py >"$out/train-full-$r.log" 2>"$out/loader-$r.log"
	echo "round $r: loader exit $?"
	grep "^verdict\|^duty:" "$out/loader-$r.log"
	grep "duty: window\|stopping at" "$out/loader-$r.log" >"$out/edges-full-$r.txt"
	env "${run_env[@]}" PEER_WINDOWS="$out/edges-peer-$r.txt" STEP_TIMES="$out/steps-b-peer-$r.txt" \
		BIG_STEP_TIMES="$out/steps-e-peer-$r.txt" $PY tools/gpu/train.py >"$out/train-peer-$r.log" 2>&1
	echo "round $r: peer exit $?"
	report full "$r" "$out/edges-full-$r.txt"
	report peer "$r" "$out/edges-peer-$r.txt"
done
for m in full peer; do # by window over every round
	[ "$STEPS" -gt 0 ] && $PY tools/gpu/probe_windows.py --runs "$m (b), all rounds" "$out/edges-$m" "$out/steps-b-$m" "$RUNS"
	[ "$BIG_STEPS" -gt 0 ] && $PY tools/gpu/probe_windows.py --runs "$m (e), all rounds" "$out/edges-$m" "$out/steps-e-$m" "$RUNS"
done
true
