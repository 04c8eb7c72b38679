#!/usr/bin/env bash
# What the shim's launch callbacks cost with no loader reading, per launch
# of the empty-kernel loop (a), interleaved rounds of
#   bare   the loop alone
#   idle   the shim, no reader: no records, no callbacks (as a process no
#          loader ever read)
#   cbon   the shim, no reader, its launch callbacks on
#          (GPUPROBE_API_CALLBACKS=always): as a process a loader read once
#          and left (the callbacks stay on, every call dropped by its time)
# Prints each mode's ns per launch (median batch) per round and the
# per-round differences to bare and to idle, median and range.
# Usage (repo root, GPU machine, after make all):
#   [LAUNCHES=1000000] tools/gpu/callback_cost.sh OUTDIR [ROUNDS]
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:-5}
mkdir -p "$out"
LAUNCHES=${LAUNCHES:-1000000}
. "$(dirname "$0")/launch_tools.sh"
SHIM=$PWD/build/libgpuprobe_shim.so
res="$out/raw.txt"; : >"$res"
for r in $(seq 1 "$rounds"); do
	for m in bare idle cbon; do
		case $m in
		bare) env=() ;;
		idle) env=(CUDA_INJECTION64_PATH=$SHIM) ;;
		cbon) env=(CUDA_INJECTION64_PATH=$SHIM GPUPROBE_API_CALLBACKS=always) ;;
		esac
		env "${env[@]}" build/empty_launch "$LAUNCHES" >"$out/$m-$r.log" 2>&1
		sed -n "s/.*batch_median_ns=\([0-9.]*\).*/$m $r \1/p" "$out/$m-$r.log" >>"$res"
	done
done
python3 - "$res" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    m, r, ns = line.split()
    v[m][int(r)] = float(ns)
def show(name, a, b):
    d = [v[a][r] - v[b][r] for r in v[a] if r in v[b]]
    if d:
        print("%s: median %+.0f ns a launch (%+.0f to %+.0f, %d rounds)" %
              (name, statistics.median(d), min(d), max(d), len(d)))
for m in ("bare", "idle", "cbon"):
    print(m, " ".join("%.0f" % v[m][r] for r in sorted(v[m])))
show("idle - bare", "idle", "bare")
show("cbon - bare", "cbon", "bare")
show("cbon - idle", "cbon", "idle")
PY
