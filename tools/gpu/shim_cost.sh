#!/usr/bin/env bash
# What the shim costs per launch on the empty-kernel launch loop, beside
# CUPTI's own floor: interleaved rounds of
#   bare   the loop alone
#   floor  CUPTI's kernel records alone (tools/gpu/cupti_trace.c,
#          CUPTI_TRACE_KINDS=kernel)
#   peer   the bench's CUPTI tracer (kernel, runtime, driver, memcpy records)
#   shim   CUDA_INJECTION64_PATH=build/libgpuprobe_shim.so, no loader
#          (the idle shim: no reader, no records, no callbacks)
#   cbon   as shim, its launch callbacks on (GPUPROBE_API_CALLBACKS=always):
#          a process a loader read once and left (the callbacks stay on,
#          every call dropped by its time); printed against shim too
#   shimb  as shim, with the shim at $SHIM_B (another build)
#   s_NAME as shim, with build/abl/shim_NAME.so (a build with a part left
#          out, made by hand for the experiment)
# and prints ns per launch (median, min, max, added to the same round's bare),
# of each run's mean and of its median batch. It also says which clock source
# the kernel uses and what one clock_gettime(CLOCK_MONOTONIC) costs, as the
# shim's timestamp callback makes one per timestamp CUPTI takes.
# Usage (repo root, GPU machine, after make static all):
#   [SHIM_B=path] [MODES="bare floor shim"] tools/gpu/shim_cost.sh OUTDIR [ROUNDS]
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:-5}
mkdir -p "$out"
LAUNCHES=${LAUNCHES:-200000}
. "$(dirname "$0")/launch_tools.sh"
printf '#include <stdio.h>\n#include <time.h>\nint main(void){struct timespec t,a,b;long n=2000000;
clock_gettime(CLOCK_MONOTONIC,&a);for(long i=0;i<n;i++)clock_gettime(CLOCK_MONOTONIC,&t);
clock_gettime(CLOCK_MONOTONIC,&b);printf("clock_gettime_ns=%%.1f\\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/n);return 0;}\n' \
	>build/clock_cost.c && gcc -O2 -o build/clock_cost build/clock_cost.c || exit 1
echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) $(build/clock_cost)" |
	tee "$out/clock.txt"
res="$out/raw.txt"; : >"$res"
modes=${MODES:-bare floor peer shim${SHIM_B:+ shimb}}
for r in $(seq 1 "$rounds"); do
	for m in $modes; do
		env=()
		case $m in
		floor) env=(CUDA_INJECTION64_PATH=$PWD/build/cupti_trace.so CUPTI_TRACE_KINDS=kernel) ;;
		peer) env=(CUDA_INJECTION64_PATH=$PWD/build/cupti_trace.so) ;;
		shim) env=(CUDA_INJECTION64_PATH=$PWD/build/libgpuprobe_shim.so) ;;
		cbon) env=(CUDA_INJECTION64_PATH=$PWD/build/libgpuprobe_shim.so GPUPROBE_API_CALLBACKS=always) ;;
		shimb) env=(CUDA_INJECTION64_PATH=${SHIM_B:?SHIM_B: the other shim}) ;;
		s_*) env=(CUDA_INJECTION64_PATH=$PWD/build/abl/shim_${m#s_}.so)
			[ -f "build/abl/shim_${m#s_}.so" ] || { echo "$0: no build/abl/shim_${m#s_}.so" >&2; exit 2; } ;;
		bare) ;;
		*) echo "$0: unknown mode $m" >&2; exit 2 ;;
		esac
		env -u CUPTI_TRACE_KINDS "${env[@]}" build/empty_launch "$LAUNCHES" >"$out/$m-$r.log" 2>&1
		sed -n "s/.*ns_per_launch=\([0-9.]*\).*batch_median_ns=\([0-9.]*\).*/$m $r \1 \2/p" \
			"$out/$m-$r.log" >>"$res"
	done
done
python3 - "$res" <<'PY' | tee "$out/table.txt"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m, r, mean, batch = line.split()
    rows.setdefault(m, {})[int(r)] = (float(mean), float(batch))
bare = rows.get("bare", {})
for i, what in ((0, "ns per launch (run mean)"), (1, "ns per launch (run's median batch)")):
    print(what)
    print("  %-6s %9s %9s %9s %9s  %s" % ("mode", "median", "min", "max", "added", "added per round"))
    for m, v in rows.items():
        x = [v[r][i] for r in sorted(v)]
        per = [v[r][i] - bare[r][i] for r in sorted(v) if r in bare]
        print("  %-6s %9.1f %9.1f %9.1f %+9.1f  %s" % (m, statistics.median(x), min(x), max(x),
              statistics.median(per) if per else 0, " ".join("%+.0f" % p for p in per)))
    shim, cbon = rows.get("shim", {}), rows.get("cbon", {})
    d = [cbon[r][i] - shim[r][i] for r in sorted(cbon) if r in shim]
    if d:
        print("  cbon - shim: median %+.0f (%+.0f to %+.0f, %d rounds)" %
              (statistics.median(d), min(d), max(d), len(d)))
PY
