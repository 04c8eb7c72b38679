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
PY=${PY:-/opt/torch/.venv/bin/python3}
SHIM=$PWD/build/libgpuprobe_shim.so
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
export GPUPROBE_CUPTI=$CUPTI
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
python3 - "$out" "$rounds" "$@" <<'PY' | tee "$out/loader_cpu.txt"
import re, statistics, sys
out, rounds, loaders = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
keys = ["share_with_helper_pct", "cpu_s", "cpu_user_s", "cpu_sys_s", "start_cpu_s", "pump_cpu_s",
        "helper_cpu_s", "max_rss_mb", "queue_peak_mb", "memo_hit_pct", "maps_reread", "unwind_ms",
        "lookups", "lookup_ms", "settle_cpu_ms"]
for i, path in enumerate(loaders, 1):
    got = {}
    for r in range(1, rounds + 1):
        try:
            lines = [l for l in open("%s/l%d-%d.log" % (out, i, r)) if l.startswith("loader: ")]
        except OSError:
            continue
        if not lines:
            continue
        kv = dict(re.findall(r"(\w+)=([\d.]+)", lines[-1]))
        st = re.search(r"stage_ms (.*?) copy_kib_mean", lines[-1])
        for item in (st.group(1).split() if st else []):
            k, v = item.split("=")
            got.setdefault("stage_" + k, []).append(float(v))
        kv = {k: float(v) for k, v in kv.items()}
        if "cpu_s" in kv and kv.get("wall_s"):
            kv["share_with_helper_pct"] = 100 * (kv["cpu_s"] + kv.get("helper_cpu_s", 0)) / kv["wall_s"]
        for k in keys:
            if k in kv:
                got.setdefault(k, []).append(kv[k])
    print("loader %d: %s (%d runs)" % (i, path, len(got.get("cpu_s", []))))
    for k in keys + sorted(k for k in got if k.startswith("stage_")):
        v = got.get(k)
        print("  %-22s %s" % (k, "-" if not v else "median %.3f  (%s)" % (
            statistics.median(v), " ".join("%.3f" % x for x in v))))
PY
