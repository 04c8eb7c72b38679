#!/usr/bin/env bash
# What a stack copy per launch costs, to choose where unwinding runs and the
# default --stack-copy: the empty-kernel launch loop bare, with frame-pointer
# stacks (--unwind fp) and with copies of 4..64 KiB (--unwind cfi), BPF only
# (no shim), interleaved rounds. Prints ns per launch per mode.
# Usage (repo root, GPU machine, after make static): tools/gpu/copy_cost.sh OUTDIR [ROUNDS]
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}; rounds=${2:-3}
mkdir -p "$out"
L=$PWD/build/static/gpuprobe-bpf
[ -x build/empty_launch ] || nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu
res="$out/copy-raw.txt"; : >"$res"
modes=${MODES:-"bare fp cfi4 cfi8 cfi16 cfi32 cfi64"}
for r in $(seq 1 "$rounds"); do
	for m in $modes; do
		log="$out/copy-$m-$r.log"; rm -f "$out/go"
		if [ $m = bare ]; then
			build/empty_launch 200000 >"$log" 2>&1
		else
			if [ $m = fp ]; then args=(--unwind fp); else args=(--unwind cfi --stack-copy ${m#cfi}); fi
			build/empty_launch 200000 "$out/go" >"$log" 2>&1 &
			p=$!
			$L "${args[@]}" --pid $p -o "$out/copy-$m.pb.gz" >"$log.loader" 2>&1 &
			l=$!
			for _ in $(seq 100); do grep -q "following pid\|attached" "$log.loader" 2>/dev/null && break; sleep 0.05; done
			sleep 0.5; touch "$out/go"; wait $p; wait $l
		fi
		echo "$m $r $(sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p' "$log")" >>"$res"
	done
done
grep -h "counters:" "$out"/copy-*.log.loader | head -3 >"$out/copy-counters.txt"
python3 - "$res" <<'PY' | tee "$out/copy-table.txt"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 3:
        rows.setdefault(p[0], []).append(float(p[2]))
base = statistics.median(rows["bare"])
print(f"{'mode':6} {'ns/launch':>10} {'min':>8} {'max':>8} {'added_ns':>9}")
for m, v in rows.items():
    med = statistics.median(v)
    print(f"{m:6} {med:10.1f} {min(v):8.1f} {max(v):8.1f} {med-base:9.1f}")
PY
