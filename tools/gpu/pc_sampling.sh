#!/usr/bin/env bash
# PC sampling on the real GPU (--pc-sampling; tools/gpu/pc_hot.cu):
#  1. facts: the hot kernel's report line (its stall reasons and hottest
#     instruction: expected long_scoreboard, at the instruction after the
#     chain's load) and the counters, into OUTDIR/pc_hot.log; the SASS of
#     both kernels (cuobjdump -sass) beside it, to find that instruction;
#  2. the hang test: R runs that unload the module every round while
#     sampling, each within a minute (OUTDIR/pc_unload.N.log);
#  3. cost: the same program bare, profiled, profiled with PC sampling,
#     interleaved, 5 rounds each (OUTDIR/pc_cost.txt: wall seconds).
# Usage (repo root, GPU machine, after make static all): tools/gpu/pc_sampling.sh OUTDIR [R]
set -uo pipefail
export GPUPROBE_COUNTERS=all
out=${1:?OUTDIR}; runs=${2:-10}
. "$(dirname "$0")/launch_tools.sh"
nvcc -cubin -arch=sm_90 -lineinfo -o build/pc_hot.cubin tools/gpu/pc_hot.cu || exit 1
nvcc -O2 -o build/pc_hot tools/gpu/pc_hot.cu -lcuda || exit 1
cuobjdump -sass build/pc_hot.cubin >"$out/pc_hot.sass" 2>&1
loader() { build/static/gpuprobe-bpf --shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI" "$@"; }

loader --pc-sampling -o "$out/pc_hot.pb.gz" -- build/pc_hot build/pc_hot.cubin 10 20 >"$out/pc_hot.log" 2>&1
echo "pc_hot: exit=$?"
grep -E "^pc_hot|^verdict|^PC samples" -A6 "$out/pc_hot.log" | grep -v "^counters"
grep "^counters" "$out/pc_hot.log" | tail -1 | grep -o "pc_[a-z_]*=[0-9]*" | tr '\n' ' '; echo

hung=0
for i in $(seq 1 "$runs"); do
	timeout 60 loader --pc-sampling -o "$out/pc_unload.$i.pb.gz" -- \
		build/pc_hot build/pc_hot.cubin 20 5 unload >"$out/pc_unload.$i.log" 2>&1
	rc=$?
	[ $rc = 124 ] && hung=$((hung + 1))
	echo "pc_unload run $i: exit=$rc $(grep '^counters' "$out/pc_unload.$i.log" | tail -1 | grep -o 'pc_unload_busy=[0-9]*\|pc_dropped=[0-9]*' | tr '\n' ' ')"
done
echo "pc_unload: $((runs - hung)) of $runs completed"

: >"$out/pc_cost.txt"
for round in 1 2 3 4 5; do
	for mode in bare full pc; do
		t0=$(date +%s.%N)
		case $mode in
		bare) build/pc_hot build/pc_hot.cubin 10 20 >/dev/null ;;
		full) loader -o /tmp/pc_cost.pb.gz -- build/pc_hot build/pc_hot.cubin 10 20 >/dev/null 2>&1 ;;
		pc) loader --pc-sampling -o /tmp/pc_cost.pb.gz -- build/pc_hot build/pc_hot.cubin 10 20 >/dev/null 2>&1 ;;
		esac
		echo "$round $mode $(echo "$(date +%s.%N) - $t0" | bc)" >>"$out/pc_cost.txt"
	done
done
cat "$out/pc_cost.txt"
