#!/usr/bin/env bash
# PC sampling on the real GPU (--pc-sampling; tools/gpu/pc_hot.cu):
#  1. facts: the hot kernel's report line (its stall reasons and hottest
#     instruction: expected long_scoreboard, at the instruction after the
#     chain's load) and the counters, into OUTDIR/pc_hot.log; the SASS of
#     both kernels (cuobjdump -sass) beside it, to find that instruction;
#  2. the hang test: R runs that unload the module every round while
#     sampling, each within a minute (OUTDIR/pc_unload.N.log);
#  3. cost: the same program bare, profiled, profiled with PC sampling,
#     interleaved, 5 rounds each (OUTDIR/pc_cost.txt: wall seconds);
#  4. the period: pc_hot under --pc-sampling=N for N in PERIODS (def is
#     CUPTI's default: --pc-sampling alone), 3 rounds interleaved with bare: wall seconds, the
#     profile's GPU time and the PC counters (OUTDIR/pc_period.txt).
# Usage (repo root, GPU machine, after make static all): [ONLY_HOT=1] tools/gpu/pc_sampling.sh OUTDIR [R]
set -uo pipefail
export GPUPROBE_COUNTERS=all
out=${1:?OUTDIR}; runs=${2:-10}
. "$(dirname "$0")/launch_tools.sh"
nvcc -cubin -arch=sm_90 -lineinfo -o build/pc_hot.cubin tools/gpu/pc_hot.cu || exit 1
nvcc -O2 -o build/pc_hot tools/gpu/pc_hot.cu -lcuda || exit 1
cuobjdump -sass build/pc_hot.cubin >"$out/pc_hot.sass" 2>&1
nvdisasm -g -c build/pc_hot.cubin >"$out/pc_hot.lines" 2>&1 # each instruction's source line
cp build/pc_hot.cubin "$out/"
L=(build/static/gpuprobe-bpf --shim "$PWD/build/libgpuprobe_shim.so" --cupti "$CUPTI")
loader() { "${L[@]}" "$@"; }
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; } # since T0 (ns)

loader --pc-sampling -o "$out/pc_hot.pb.gz" -- build/pc_hot build/pc_hot.cubin 10 20 >"$out/pc_hot.log" 2>&1
echo "pc_hot: exit=$?"
grep -E "^pc_hot|^verdict|^PC samples" -A6 "$out/pc_hot.log" | grep -v "^counters"
grep "^counters" "$out/pc_hot.log" | tail -1 | grep -o "pc_[a-z_]*=[0-9]*\|cupti_errors=[0-9]*" | tr '\n' ' '; echo
[ "${ONLY_HOT:-0}" = 1 ] && exit 0 # step 1 alone

hung=0
for i in $(seq 1 "$runs"); do
	timeout 60 "${L[@]}" --pc-sampling=11 -o "$out/pc_unload.$i.pb.gz" -- \
		build/pc_hot build/pc_hot.cubin 20 5 unload >"$out/pc_unload.$i.log" 2>&1
	rc=$?
	[ $rc = 124 ] && hung=$((hung + 1))
	echo "pc_unload run $i: exit=$rc $(grep '^counters' "$out/pc_unload.$i.log" | tail -1 | grep -o 'pc_unload_busy=[0-9]*\|pc_dropped=[0-9]*' | tr '\n' ' ')"
done
echo "pc_unload: $((runs - hung)) of $runs completed"

: >"$out/pc_cost.txt"
for round in 1 2 3 4 5; do
	for mode in bare full pc; do
		t0=$(now)
		case $mode in
		bare) build/pc_hot build/pc_hot.cubin 10 20 >/dev/null ;;
		full) loader -o /tmp/pc_cost.pb.gz -- build/pc_hot build/pc_hot.cubin 10 20 >/dev/null 2>&1 ;;
		pc) loader --pc-sampling -o /tmp/pc_cost.pb.gz -- build/pc_hot build/pc_hot.cubin 10 20 >/dev/null 2>&1 ;;
		esac
		echo "$round $mode $(secs "$t0")" >>"$out/pc_cost.txt"
	done
done
cat "$out/pc_cost.txt"

: >"$out/pc_period.txt"
for round in 1 2 3; do
	for n in bare ${PERIODS:-5 8 11 14 17 20}; do
		t0=$(now)
		if [ $n = bare ]; then
			build/pc_hot build/pc_hot.cubin 10 20 >/dev/null
			echo "$round bare wall=$(secs "$t0")" >>"$out/pc_period.txt"
			continue
		fi
		arg=--pc-sampling=$n
		[ $n = def ] && arg=--pc-sampling
		loader $arg -o /tmp/pc_period.pb.gz -- build/pc_hot build/pc_hot.cubin 10 20 \
			>"$out/pc_period.log" 2>&1
		echo "$round $n wall=$(secs "$t0")" \
			"$(grep -o 'GPU time [0-9.]* ms' "$out/pc_period.log" | tail -1 | tr ' ' _)" \
			"$(grep '^counters' "$out/pc_period.log" | tail -1 | grep -o 'pc_[a-z_]*=[0-9]*' | tr '\n' ' ')" \
			>>"$out/pc_period.txt"
	done
done
cat "$out/pc_period.txt"
