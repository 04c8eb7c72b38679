#!/usr/bin/env bash
# Side-by-side costs on a GPU machine, interleaved rounds (A B C D, A B C D, ...):
#   bare       the program alone
#   shim       CUDA_INJECTION64_PATH set, no loader
#   bpf        the loader attached (--all-cgroups, stacks on), no shim
#   full       gpuprobe-bpf -- program
# Workloads: (a) empty-kernel launch loop, ns per launch; (b) PyTorch training
# loop, median step time. Prints one table with medians, spread and ratios.
# Usage: tools/gpu/bench.sh OUTDIR [ROUNDS]   (repo root, root, after make static all)
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:-5}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
export GPUPROBE_CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
[ -x build/empty_launch ] || nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu
res="$out/bench-raw.txt"; : >"$res"

# Prints the workload's figure: ns per launch, or median step ms.
figure() { sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p; s/.*median_step_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }

run_mode() { # MODE WORKLOAD LOG
	local mode=$1 wl=$2 log=$3 cmd
	if [ "$wl" = launch ]; then cmd=(build/empty_launch 200000); else cmd=(env STEPS=60 $PY tools/gpu/train.py); fi
	case $mode in
	bare) timeout 300 "${cmd[@]}" >"$log" 2>&1 ;;
	shim) CUDA_INJECTION64_PATH=$SHIM timeout 300 "${cmd[@]}" >"$log" 2>&1 ;;
	bpf)
		$L --all-cgroups -o "$out/bpf-$wl.pb.gz" >"$log.loader" 2>&1 &
		local lp=$!
		sleep 1.5
		timeout 300 "${cmd[@]}" >"$log" 2>&1
		kill -INT $lp; wait $lp ;;
	full)
		timeout 300 $L --shim "$SHIM" -o "$out/full-$wl.pb.gz" -- "${cmd[@]}" >"$log" 2>&1 ;;
	esac
}

for r in $(seq 1 "$rounds"); do
	for wl in launch train; do
		for mode in bare shim bpf full; do
			log="$out/run-$wl-$mode-$r.log"
			run_mode $mode $wl "$log"
			echo "$wl $mode $r $(figure "$log")" >>"$res"
		done
	done
done
grep -h "counters:" "$out"/run-*-full-*.log | tail -2 >"$out/bench-counters.txt"
grep -h "^loader:" "$out"/run-*-full-*.log >>"$out/bench-counters.txt"
python3 - "$res" <<'PY' | tee "$out/bench-table.txt"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4:
        rows.setdefault((p[0], p[1]), []).append(float(p[3]))
for wl, unit in (("launch", "ns/launch"), ("train", "ms/step")):
    base = statistics.median(rows.get((wl, "bare"), [float("nan")]))
    print(f"{wl} ({unit})")
    print(f"  {'mode':6} {'median':>10} {'min':>10} {'max':>10} {'ratio':>7} {'added':>10}")
    for mode in ("bare", "shim", "bpf", "full"):
        v = rows.get((wl, mode), [])
        if not v:
            continue
        m = statistics.median(v)
        print(f"  {mode:6} {m:10.1f} {min(v):10.1f} {max(v):10.1f} {m/base:7.3f} {m-base:10.1f}")
PY
