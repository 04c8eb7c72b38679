#!/usr/bin/env bash
# The duty cycle's average cost (README, "Duty cycle"): interleaved rounds of
#   bare  tools/gpu/window_cost.py's training step alone, SECS seconds
#   duty  the same with the shim, under a node-wide loader at its default
#         duty cycle (--all-cgroups --interval INTERVAL: 10% in 1 s windows)
#   idle  the shim alone, no loader (no reader, no records)
#   probes the loader at its default duty cycle, no shim (its probes' part)
#   noapi the shim alone without its per-call API records
#         (GPUPROBE_API_RECORDS=off: what idle costs beyond them)
#   duty_old  duty with another loader build, L_OLD (default
#         build/old/gpuprobe-bpf): a change's effect, interleaved
# (MODES picks them, default "bare duty") on train.py's small step ((b), MODEL=small) or its GPU-bound bf16 step
# ((e), MODEL=big). Each run writes its step times; duty runs label each step
# by its shim's state (on: in a window; after/idle: between). Then
# tools/gpu/duty_table.py: per round, the ratio of mean step times duty/bare
# (the average cost: windows and the time between them), with the mean and
# 95% interval over rounds; and, in the duty runs, on against between.
# Usage (repo root, GPU machine, after make static and the shim):
#   [MODES="bare duty"] [MODEL=small|big] [ROUNDS=3] [SECS=40] [INTERVAL=20] tools/gpu/duty_cost.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
MODEL=${MODEL:-small}; ROUNDS=${ROUNDS:-3}; SECS=${SECS:-40}; INTERVAL=${INTERVAL:-20}
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
L_OLD=${L_OLD:-$PWD/build/old/gpuprobe-bpf}
SHIM=$PWD/build/libgpuprobe_shim.so
LIBCUDA=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
export GPUPROBE_COUNTERS=all
MODES=${MODES:-bare duty}
# mode round: one run of SECS seconds, its steps in $out/MODE-MODEL-R.txt
run() {
	local m=$1 r=$2 lp= env=()
	case $m in
	bare|probes) env=(LABELS=bare) ;;
	idle|duty|duty_old) env=(CUDA_INJECTION64_PATH=$SHIM) ;;
	noapi) env=(CUDA_INJECTION64_PATH=$SHIM GPUPROBE_API_RECORDS=off) ;;
	esac
	if [ "$m" = duty ] || [ "$m" = duty_old ] || [ "$m" = probes ]; then
		local loader=$L
		[ "$m" = duty_old ] && loader=$L_OLD
		$loader -v --all-cgroups --interval "$INTERVAL" --libcuda "$LIBCUDA" -o "$out/$m-$MODEL-$r.pb.gz" \
			2>"$out/loader-$m-$MODEL-$r.err" &
		lp=$!
		until grep -q "^counters:" "$out/loader-$m-$MODEL-$r.err" 2>/dev/null; do
			kill -0 $lp 2>/dev/null || { cat "$out/loader-$m-$MODEL-$r.err"; exit 1; }
			sleep 0.2
		done
	fi
	env "${env[@]}" DURATION=$SECS MODEL=$MODEL $PY tools/gpu/window_cost.py "$out/$m-$MODEL-$r.txt" \
		>"$out/$m-$MODEL-$r.log" 2>&1 || { cat "$out/$m-$MODEL-$r.log"; exit 1; }
	[ -n "$lp" ] || return 0
	kill -INT $lp; wait $lp
	echo "$m $r: $(grep "^duty:" "$out/loader-$m-$MODEL-$r.err" | tail -1)"
	grep "^counters:" "$out/loader-$m-$MODEL-$r.err" | tail -1 | tr ' ' '\n' |
		grep -E "^(joined|launches_without_record|unattributed|ring_dropped|launches_outside|activities_outside|launches_before_recording|duty_windows|duty_probe_errors|recording_on|autograd_passes|autograd_nodes|caller_unknown)=" | tr '\n' ' '; echo
	grep "^loader:" "$out/loader-$m-$MODEL-$r.err" | tail -1 | cut -c1-80
}
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		run "$m" "$r"
	done
done
python3 tools/gpu/duty_table.py "$out" "$MODEL" "$ROUNDS" $MODES
