#!/usr/bin/env bash
# Where the BPF half's per-launch cost goes, on the empty-kernel launch loop
# (or, with WL=train, on tools/gpu/train.py's median step, in ms):
# interleaved rounds of
#   bare   the loop alone
#   trap   the probes attached for another process (--pid of an idle one that
#          maps libcuda): every launch traps into the kernel and the program
#          returns at the pid filter
#   fp     the loop followed, frame-pointer stacks (--unwind fp)
#   cfi    the loop followed, stack copies for CFI (the default)
#   perf   as cfi, with a perf-event uprobe per entry point
#          (GPUPROBE_UPROBES=perf) instead of one uprobe_multi link
#   cfib   as cfi, with the loader at $CFI_B when set (another build, to
#          compare two versions of the program in one run)
#   cN     as cfi, every copy N KiB (--stack-copy N): what the copy's size
#          costs (stacks deeper than N end truncated)
#   v_NAME as cfi, with build/abl/gp_NAME: a program with a part left out
#          (tools/gpu/ablate-build.sh makes them), to see what each part costs
# and prints ns per launch (median, min, max) and the median added to bare:
# of each run's mean, and of each run's median batch (empty_launch's
# batch_median_ns, which a stall in the run moves less).
# PIN=CPU runs the workload on that CPU and the loaders on the CPUs of
# other cores (lscpu), in every mode, so rounds differ less by placement.
# With PROG_STATS=1 it also turns on the kernel's BPF run-time statistics
# (kernel.bpf_stats_enabled, restored after; they add two clock reads per
# run to every mode) and prints the launch program's own ns per run, from
# the loader's program fd: what is left of "added" is the trap itself; with
# WL=train, also the program's ns per run after train.py's first step (its
# stacks met, the stack cache filled).
# MODES picks and orders the modes (default: all of them).
# Usage (repo root, GPU machine, after make static all):
#   [PROG_STATS=1] [WL=train] [MODES="bare cfi"] tools/gpu/probe_cost.sh OUTDIR [ROUNDS]
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:-5}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
L=$PWD/build/static/gpuprobe-bpf
LIBCUDA=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
[ -n "$LIBCUDA" ] || LIBCUDA=/usr/local/nvidia/lib64/libcuda.so.1
LAUNCHES=${LAUNCHES:-200000}
[ -x build/empty_launch ] || nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu || exit 1
$PY -c 'import ctypes, time; ctypes.CDLL("libcuda.so.1"); time.sleep(100000)' &
idle=$!
trap 'kill $idle 2>/dev/null' EXIT
sleep 1
res="$out/probe_cost.txt"; : >"$res"
resb="$out/probe_cost_batch.txt"; : >"$resb"
. "$(dirname "$0")/pin.sh"
prog="$out/prog_stats.txt"; : >"$prog"
prog_first="$out/prog_stats_first.txt"; : >"$prog_first"
if [ "${PROG_STATS:-0}" = 1 ]; then
	stats_was=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	trap 'kill $idle 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=$stats_was' EXIT
fi
# The loader's most-run uprobe program (prog_type 2, kprobe: the launch
# program, not the tracepoints that watch every process's mmap calls):
# "run_cnt run_time_ns".
prog_runs() {
	local f best_c=0 best_t=0 c t
	for f in /proc/$1/fdinfo/*; do
		[ "$(awk '$1=="prog_type:"{print $2}' "$f" 2>/dev/null)" = 2 ] || continue
		c=$(awk '$1=="run_cnt:"{print $2}' "$f" 2>/dev/null)
		t=$(awk '$1=="run_time_ns:"{print $2}' "$f" 2>/dev/null)
		[ -n "$c" ] && [ "$c" -gt "$best_c" ] && { best_c=$c; best_t=$t; }
	done
	echo "$best_c $best_t"
}
loop() { # MODE ROUND [LOADER ARGS...]
	local mode=$1 r=$2 lp=
	shift 2
	if [ "$mode" != bare ]; then
		"${ldr_pin[@]}" "$@" --libcuda "$LIBCUDA" -o "$out/$mode-$r.pb.gz" >"$out/$mode-$r.loader" 2>&1 &
		lp=$!
		sleep 1.5
	fi
	if [ "${WL:-launch}" = train ]; then
		local mark="$out/$mode-$r.mark" sampler=
		rm -f "$mark"
		if [ -n "$lp" ] && [ "${PROG_STATS:-0}" = 1 ]; then
			( for _ in $(seq 1 30000); do [ -e "$mark" ] && break; sleep 0.01; done
			  echo "$mode $r $(prog_runs $lp)" >>"$prog_first" ) &
			sampler=$!
		fi
		FIRST_STEP_MARK=$mark STEPS=${STEPS:-60} GRAPH_REPLAYS=20 timeout 300 "${app_pin[@]}" \
			$PY tools/gpu/train.py >"$out/$mode-$r.log" 2>&1
		[ -n "$sampler" ] && wait $sampler
	else
		"${app_pin[@]}" build/empty_launch "$LAUNCHES" >"$out/$mode-$r.log" 2>&1
	fi
	[ -n "$lp" ] && [ "${PROG_STATS:-0}" = 1 ] && echo "$mode $r $(prog_runs $lp)" >>"$prog"
	[ -n "$lp" ] && { kill -INT $lp; wait $lp; }
	sed -n "s/.*ns_per_launch=\([0-9.]*\).*/$mode $r \1/p;
		s/.*median_step_ms=\([0-9.]*\).*/$mode $r \1/p" "$out/$mode-$r.log" >>"$res"
	sed -n "s/.*batch_median_ns=\([0-9.]*\).*/$mode $r \1/p" "$out/$mode-$r.log" >>"$resb"
}
modes=${MODES:-bare trap fp cfi perf${CFI_B:+ cfib}}
for r in $(seq 1 "$rounds"); do
	for m in $modes; do
		case $m in
		bare) loop bare $r ;;
		trap) loop trap $r $L --pid $idle ;;
		fp) loop fp $r $L --all-cgroups --unwind fp ;;
		cfi) loop cfi $r $L --all-cgroups ;;
		perf) GPUPROBE_UPROBES=perf loop perf $r $L --all-cgroups ;;
		cfib) loop cfib $r "${CFI_B:?CFI_B: the other build}" --all-cgroups ;;
		v_*) loop $m $r "$PWD/build/abl/gp_${m#v_}" --all-cgroups ;;
		c[0-9]*) loop $m $r $L --all-cgroups --stack-copy "${m#c}" ;;
		esac
	done
done
for f in "$res" "$resb"; do
[ -s "$f" ] || continue
[ "$f" = "$resb" ] && echo "of each run's median batch:"
python3 - "$f" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    mode, r, v = line.split()
    rows.setdefault(mode, {})[int(r)] = float(v)
bare = rows.get("bare", {})
print("%-10s %9s %9s %9s %9s  %s" % ("mode", "median", "min", "max", "added", "added per round"))
for mode in rows:
    v = rows[mode]
    per = [v[r] - bare[r] for r in sorted(v) if r in bare]
    print("%-10s %9.2f %9.2f %9.2f %+9.2f  %s" % (mode, statistics.median(v.values()), min(v.values()),
          max(v.values()), statistics.median(per) if per else 0, " ".join("%+.4g" % p for p in per)))
PY
done
[ -s "$prog" ] && python3 - "$prog" "$prog_first" <<'PY'
import statistics, sys
rows, runs, first = {}, {}, {}
for line in open(sys.argv[2]):
    mode, r, cnt, ns = line.split()
    first[(mode, r)] = (int(cnt), int(ns))
after = {}
for line in open(sys.argv[1]):
    mode, r, cnt, ns = line.split()
    if int(cnt):
        rows.setdefault(mode, []).append(int(ns) / int(cnt))
        runs.setdefault(mode, []).append(int(cnt))
        if (mode, r) in first and int(cnt) > first[(mode, r)][0]:
            c0, t0 = first[(mode, r)]
            after.setdefault(mode, []).append((int(ns) - t0) / (int(cnt) - c0))
print("program ns per run (kernel.bpf_stats_enabled): median, min, max; runs (median)")
for mode, v in rows.items():
    if v:
        print("%-10s %9.1f %9.1f %9.1f %9d" % (mode, statistics.median(v), min(v), max(v),
                                               statistics.median(runs[mode])))
if after:
    print("program ns per run after the first step: median, min, max (each run)")
    for mode, v in after.items():
        print("%-10s %9.1f %9.1f %9.1f  %s" % (mode, statistics.median(v), min(v), max(v),
                                              " ".join("%.0f" % x for x in v)))
PY
