#!/usr/bin/env bash
# Which CUPTI switch makes the duty cycle's two faults (a thread's stuck
# correlation id; a thread's kernel records that stop coming), without
# PyTorch: tools/gpu/cupti_faults.cu, THREADS threads launching while the
# launch callbacks (both, the runtime's or the driver's alone, by id or by
# domain), the kernel records, or both are switched every 20 ms, REPS runs
# of each (VARIANTS: SWITCH:ENABLE:CBWAY words). Prints each run's total
# line and the threads' lines with a fault; OUTDIR keeps the rest.
# Usage (repo root, GPU machine): [REPS=3] [CYCLES=200] [VARIANTS=...] tools/gpu/fault_facts.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
nvcc -O2 -I"$CUDA/extras/CUPTI/include" -o build/cupti_faults tools/gpu/cupti_faults.cu \
	-Xlinker "$CUPTI" -lcuda || exit 1
export CYCLES=${CYCLES:-200}
for r in $(seq 1 "${REPS:-3}"); do
	for v in ${VARIANTS:-both:global:id kinds:global:id cbs:global:id rt:global:id drv:global:id cbs:global:domain both:context:id}; do
		IFS=: read -r sw en way <<<"$v"
		f="$out/$r-${v//:/-}.txt"
		SWITCH=$sw ENABLE=$en CBWAY=$way LD_LIBRARY_PATH=$(dirname "$CUPTI") timeout 120 \
			build/cupti_faults >"$f" 2>&1
		echo "run $r rc=$? $(grep '^total' "$f")"
		grep -E " stuck=[1-9]|bad_windows=[1-9]|_stuck=[1-9]|exit_not_enter=[1-9]|unseen=[1-9]|enter_only=[1-9]" "$f" |
			grep -v '^total' | sed 's/^/    /'
	done
done | tee "$out/fault_facts.txt"
