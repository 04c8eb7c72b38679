#!/usr/bin/env bash
# The stack cache on the PyTorch loop, checked whole: tools/gpu/train.py under
# full profiling with every cache hit audited (--stack-audit 1: each hit is
# sent whole and compared with its key's stack, so two stacks sharing a key
# show as stack_cache_mismatch), then with the default audits; and
# torch.profiler's counts of the same steps (torchprof.json) for
# tools/completeness.py. Prints each run's result line, losses and cache fields;
# V=1 runs the loader with -v (it names the frames where two stacks under one
# key part).
# Usage (repo root, GPU machine, after make static all): tools/gpu/cache_audit.sh OUTDIR
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
out=${1:?OUTDIR}
mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
SHIM=$PWD/build/libgpuprobe_shim.so
export STEPS=${STEPS:-60} GRAPH_REPLAYS=${GRAPH_REPLAYS:-200}
for a in ${AUDITS:-1 64}; do
	timeout 300 "$L" ${V:+-v} --stack-audit "$a" --shim "$SHIM" --cupti "$CUPTI" -o "$out/audit$a.pb.gz" \
		-- $PY tools/gpu/train.py >"$out/audit$a.log" 2>&1
	echo "== --stack-audit $a: exit=$?"
	grep -E "^result|^timing" "$out/audit$a.log"
	grep "^counters" "$out/audit$a.log" | tail -1 | tr ' ' '\n' |
		grep -E "launch_events|unattributed=|stacks_short|python_short|mismatch|lost|ringbuf_full|copy_skipped" |
		tr '\n' ' '
	echo
	grep "^loader" "$out/audit$a.log" | tail -1 | tr ' ' '\n' |
		grep -E "cpu_share|max_rss|cache_|maps_changed|py_replaced|copy_kib" | tr '\n' ' '
	echo
done
TORCH_PROFILE=$out/torchprof.json timeout 300 $PY tools/gpu/train.py >"$out/torchprof.log" 2>&1
echo "== torch.profiler: exit=$?"
grep -E "^result|^timing" "$out/torchprof.log"
