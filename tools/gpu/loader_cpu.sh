#!/usr/bin/env bash
# The loader's own CPU on the bench's (b) workload (tools/gpu/train.py as
# `gpuprobe-bpf -- python3 train.py`, the full mode), for one or more loader
# builds side by side: interleaved rounds (L1 L2 ..., L1 L2 ...), each
# loader's `loader:` line kept. Prints, per build, the medians of its CPU
# share (with the CRC helper's, as the bench counts it), CPU seconds (user,
# kernel, the start stage's, the event pump thread's), peak RSS, the stages'
# ms, the memo's hit rate and maps re-reads. A build without a field (an
# older one) shows "-" for it.
# Usage (repo root, GPU machine, after make static all):
#   tools/gpu/loader_cpu.sh OUTDIR ROUNDS [LOADER...]   (default: build/static/gpuprobe-bpf)
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:?ROUNDS}; shift 2
[ $# -ge 1 ] || set -- "$PWD/build/static/gpuprobe-bpf"
mkdir -p "$out"
. "$(dirname "$0")/cupti_env.sh"
SHIM=$PWD/build/libgpuprobe_shim.so
STEPS=${STEPS:-60}; REPLAYS=${REPLAYS:-200}
for r in $(seq 1 "$rounds"); do
	i=0
	for L in "$@"; do
		i=$((i + 1))
		STEPS=$STEPS GRAPH_REPLAYS=$REPLAYS timeout 300 "$L" --shim "$SHIM" --cupti "$CUPTI" \
			-o "$out/l$i-$r.pb.gz" -- "$PY" tools/gpu/train.py >"$out/l$i-$r.log" 2>&1 ||
			echo "loader $i round $r: exit $? (see $out/l$i-$r.log)" >&2
	done
	echo "round $r done: $(date +%T)" >&2
done
PYTHONPATH="$(dirname "$0")" python3 - "$out" "$rounds" "$@" <<'PY' | tee "$out/loader_cpu.txt"
import statistics, sys
import loader_line
out, rounds, loaders = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
keys = ["share_with_helper_pct", "cpu_s", "cpu_user_s", "cpu_sys_s", "start_cpu_s", "pump_cpu_s",
        "helper_cpu_s", "max_rss_mb", "queue_peak_mb", "memo_hit_pct", "maps_reread", "unwind_ms",
        "lookups", "lookup_ms", "settle_cpu_ms"]
for i, path in enumerate(loaders, 1):
    got = {}
    for r in range(1, rounds + 1):
        kv = loader_line.last("%s/l%d-%d.log" % (out, i, r))
        for k, v in (kv or {}).items():
            if k in keys or k.startswith("stage_"):
                got.setdefault(k, []).append(v)
    print("loader %d: %s (%d runs)" % (i, path, len(got.get("cpu_s", []))))
    for k in keys + sorted(k for k in got if k.startswith("stage_")):
        v = got.get(k)
        print("  %-22s %s" % (k, "-" if not v else "median %.3f  (%s)" % (
            statistics.median(v), " ".join("%.3f" % x for x in v))))
PY
