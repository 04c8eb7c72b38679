#!/usr/bin/env bash
# Where the loader's memory goes on a PyTorch job: the CFI table and function
# symbols of every shared library under torch/lib and the nvidia wheels
# (gpuprobe-table-cost, one line each), then one train.py run under full
# profiling whose loader line gives the totals held (syms_mb, cfi_mb) and
# the peak RSS, and the loader's mappings at that peak (smaps).
# Usage (repo root, GPU machine, after make static all):
#   tools/gpu/tables.sh OUTDIR
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}
mkdir -p "$out"
PY=${PY:-/opt/torch/.venv/bin/python3}
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
find "$site/torch/lib" "$site/nvidia" -name '*.so*' -type f -size +1M | sort |
	xargs -r build/static/gpuprobe-table-cost >"$out/tables.txt" 2>&1
sort -t= -k5 -rn "$out/tables.txt" | head -40
awk '{for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "cfi_mb") c += kv[2];
	if (kv[1] == "syms_mb") s += kv[2] } } END { printf "all files: cfi_mb=%.1f syms_mb=%.1f\n", c, s }' \
	"$out/tables.txt"
STEPS=${STEPS:-60} GRAPH_REPLAYS=${GRAPH_REPLAYS:-200} timeout 300 build/static/gpuprobe-bpf -v \
	--shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" -o "$out/train.pb.gz" \
	-- $PY tools/gpu/train.py >"$out/train.log" 2>&1 &
lp=$!
# The loader (timeout's child): its mappings at its largest resident size.
for _ in $(seq 50); do
	loader=$(pgrep -P $lp -x gpuprobe-bpf) && break
	sleep 0.1
done
peak=0
while [ -n "$loader" ] && kill -0 $loader 2>/dev/null; do
	cat /proc/$loader/smaps >"$out/smaps.now" 2>/dev/null
	rss=$(awk '/^Rss:/ { s += $2 } END { print s + 0 }' "$out/smaps.now")
	[ "$rss" -gt "$peak" ] && { peak=$rss; cp "$out/smaps.now" "$out/smaps.peak"; }
	sleep 0.2
done
wait $lp
echo "train: exit=$?"
echo "loader mappings at its peak ($((peak / 1024)) MB resident), largest first:"
awk '/^[0-9a-f]+-[0-9a-f]+ / { name = NF >= 6 ? $6 : "[anon]" }
	/^Rss:/ { rss[name] += $2 } END { for (n in rss) printf "%8.1f MB  %s\n", rss[n] / 1024, n }' \
	"$out/smaps.peak" | sort -rn | head -12
grep -E "^timing|^loader" "$out/train.log"
grep "^counters" "$out/train.log" | tail -1 | tr ' ' '\n' |
	grep -E "launch_events|ringbuf_full|copy_|unattributed=|stacks_short" | tr '\n' ' '
echo
