#!/usr/bin/env bash
# Which CUPTI switch makes the duty cycle's two faults (a thread's stuck
# correlation id; a thread's kernel records that stop coming), without
# PyTorch: tools/gpu/cupti_faults.cu, THREADS threads launching while the
# launch callbacks, the kernel records, or both are switched every 20 ms,
# REPS runs of each. Prints each run's total line; OUTDIR keeps the rest.
# Usage (repo root, GPU machine): [REPS=3] [CYCLES=200] tools/gpu/fault_facts.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
nvcc -O2 -I"$CUDA/extras/CUPTI/include" -o build/cupti_faults tools/gpu/cupti_faults.cu \
	-Xlinker "$CUPTI" -lcuda || exit 1
export CYCLES=${CYCLES:-200}
for r in $(seq 1 "${REPS:-3}"); do
	for v in both:global kinds:global cbs:global both:context; do
		SWITCH=${v%:*} ENABLE=${v#*:} LD_LIBRARY_PATH=$(dirname "$CUPTI") timeout 120 \
			build/cupti_faults >"$out/$r-${v/:/-}.txt" 2>&1
		echo "run $r rc=$? $(grep '^total' "$out/$r-${v/:/-}.txt")"
		grep -E "stuck=[1-9]|bad_windows=[1-9]" "$out/$r-${v/:/-}.txt" | grep -v '^total' | sed 's/^/    /'
	done
done | tee "$out/fault_facts.txt"
