#!/usr/bin/env bash
# #23's average cost of an always-on loader at a duty cycle, measured inside
# one process: train.py runs with the shim injected (as a node's jobs do),
# and a loader attaches to it (--pid, --duty DUTY in windows of WINDOW s over
# -d ON seconds) and goes away again, CYCLES times: ON seconds attached,
# then OFF seconds with no loader (the shim idle: no reader, no records).
# Each step is labelled by the phase it lies wholly inside; steps beginning
# within EDGE seconds of an attach or a detach are left out (an always-on
# loader starts once). The cost is mean(attached) / mean(detached) - 1
# (means: windows of 10% hide under a median), per cycle (each attached
# phase against the detached phase after it) and over all, with a 95%
# bootstrap interval over the cycles (tools/gpu/attach_cost.py); then the
# same for the attached steps wholly between the duty windows (the loader's
# -v window edges): what being attached costs apart from recording; and
# the extra time split by where it falls: in windows, at their edges (ARM
# seconds either side, default 0.2), between them.
# The shim's own cost, with no loader, is not in it: that is idle against
# bare, across processes (tools/gpu/duty_cost.sh MODES="bare idle"). Nor,
# since the shim's launch callbacks go on at its first reader and stay on
# (GPUPROBE_API_CALLBACKS=once), is theirs: the detached phases after the
# first attach have them on too (tools/gpu/shim_cost.sh's cbon mode measures them;
# GPUPROBE_API_CALLBACKS=read exported puts them back in, switched at each
# attach and detach).
# Usage (repo root, GPU machine, after make static and the shim):
#   [MODEL=big|small] [CYCLES=6] [ON=20] [OFF=20] [DUTY=0.1] [WINDOW=1] [EDGE=2] [L=LOADER]
#   tools/gpu/attach_cost.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
MODEL=${MODEL:-big}; CYCLES=${CYCLES:-6}; ON=${ON:-20}; OFF=${OFF:-20}
DUTY=${DUTY:-0.1}; WINDOW=${WINDOW:-1}; EDGE=${EDGE:-2}
. "$(dirname "$0")/cupti_env.sh"
L=${L:-$PWD/build/static/gpuprobe-bpf}
SHIM=$PWD/build/libgpuprobe_shim.so
steps=$out/steps.txt phases=$out/phases.txt
: >"$steps"; : >"$phases"; : >"$out/windows.txt"; : >"$out/loader_lines.txt"
now() { "$PY" -c 'import time; print(time.monotonic_ns())'; }
if [ "$MODEL" = big ]; then
	set -- STEPS=1 GRAPH_REPLAYS=0 BIG_STEPS=100000000 BIG_STEP_TIMES="$steps"
else
	set -- STEPS=100000000 GRAPH_REPLAYS=0 STEP_TIMES="$steps"
fi
env "$@" CUDA_INJECTION64_PATH="$SHIM" "$PY" tools/gpu/train.py >"$out/train.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 240); do # its first 50 steps (CUDA's start, warm-up)
	[ "$(wc -l <"$steps")" -ge 50 ] && break
	kill -0 $pid 2>/dev/null || { echo "attach_cost: train.py ended (see $out/train.log)" >&2; exit 1; }
	sleep 0.5
done
sleep "$OFF"
for c in $(seq "$CYCLES"); do
	echo "attach $(now)" >>"$phases"
	timeout $((ON + 60)) "$L" -v --pid $pid -d "$ON" --duty "$DUTY" --window "$WINDOW" \
		--shim "$SHIM" --cupti "$CUPTI" -o "$out/p$c.pb.gz" >"$out/loader-$c.log" 2>&1
	rc=$?
	echo "detach $(now)" >>"$phases"
	echo "cycle $c: loader exit $rc; $(grep '^duty:' "$out/loader-$c.log" | tail -1)"
	grep "^verdict" "$out/loader-$c.log" | tail -1
	grep "duty: window\|stopping at" "$out/loader-$c.log" >>"$out/windows.txt"
	grep "^loader:\|^duty:" "$out/loader-$c.log" >>"$out/loader_lines.txt"
	# A stuck correlation id's facts (the first ids two calls held, the join's counters) are kept.
	{ grep -m 8 "held twice" "$out/loader-$c.log"; grep "^counters" "$out/loader-$c.log" | tail -1; } |
		sed "s/^/cycle $c: /" >>"$out/loader_lines.txt"
	rm -f "$out/loader-$c.log" "$out/p$c.pb.gz" # the device tool brings back few files
	sleep "$OFF"
done
kill $pid 2>/dev/null
wait $pid 2>/dev/null
"$PY" tools/gpu/attach_cost.py "$phases" "$steps" "$EDGE" "$out/windows.txt"
