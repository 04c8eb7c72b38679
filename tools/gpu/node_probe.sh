#!/usr/bin/env bash
# The autograd node probe taken away once learnt (user/session/node_watch.h)
# against it kept on every node (GPUPROBE_NODE_PROBE=always, the way before),
# on train.py's small step (b): first completeness with the probe away for
# most of the run (cache_audit.sh with V=1: the loader's "autograd node probe
# away/back" lines, then tools/completeness.py against torch.profiler and
# tools/stack-share.py), then ROUNDS interleaved pairs of probe_windows.sh
# runs (full - shim in one process each: steps in windows against steps
# between), learn first then always.
# Usage (repo root, GPU machine, after make static all):
#   [STEPS=3000] [AUDIT_STEPS=600] tools/gpu/node_probe.sh OUTDIR [ROUNDS]
set -uo pipefail
out=${1:?OUTDIR}; rounds=${2:-2}
mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
STEPS=${STEPS:-3000}
STEPS=${AUDIT_STEPS:-600} AUDITS=64 V=1 tools/gpu/cache_audit.sh "$out/audit"
echo "== node probe lines (audit64):"
grep -o "autograd node probe [a-z]*" "$out/audit/audit64.log" | uniq -c
grep "^counters" "$out/audit/audit64.log" | tail -1 | grep -o "autograd_launches=.*autograd_nodes=[0-9]*"
$PY tools/completeness.py "$out/audit/audit64.pb.gz" "$out/audit/torchprof.json" | tail -4
$PY tools/stack-share.py "$out/audit/audit64.pb.gz" train.py 3 | head -6
for r in $(seq "$rounds"); do
	for mode in learn always; do
		echo "== round $r, node probe: $mode"
		if [ "$mode" = always ]; then
			GPUPROBE_NODE_PROBE=always RUNS=1 STEPS="$STEPS" BIG_STEPS=0 \
				tools/gpu/probe_windows.sh "$out/$mode-$r"
		else
			RUNS=1 STEPS="$STEPS" BIG_STEPS=0 tools/gpu/probe_windows.sh "$out/$mode-$r"
		fi
		grep -o "autograd node probe [a-z]*" "$out/$mode-$r/loader-1.log" | uniq -c
		grep "^counters" "$out/$mode-$r/loader-1.log" | tail -1 |
			grep -o "unattributed=[0-9]*\|caller_unknown=[0-9]*\|under_caller=[0-9]*\|autograd_nodes=[0-9]*\|joined=[0-9]*"
		rm -f "$out/$mode-$r"/*.pb.gz
	done
done
