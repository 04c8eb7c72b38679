#!/usr/bin/env bash
# Whether CUPTI's whole RUNTIME and DRIVER activity kinds can be switched
# with the duty windows (tools/gpu/cupti_api_kinds.cu): REPS runs of each
# ORDER, THREADS threads launching while the kinds go on and off every 20 ms.
# Prints each run's total line and the threads' lines.
# Usage (repo root, GPU machine): [REPS=3] [CYCLES=200] tools/gpu/api_kinds_facts.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
nvcc -O2 -I"$CUDA/extras/CUPTI/include" -o build/cupti_api_kinds tools/gpu/cupti_api_kinds.cu \
	-Xlinker "$CUPTI" || exit 1
export CYCLES=${CYCLES:-200}
for r in $(seq 1 "${REPS:-3}"); do
	for o in ${ORDERS:-kernel-first api-first}; do
		f="$out/$r-$o.txt"
		ORDER=$o LD_LIBRARY_PATH=$(dirname "$CUPTI") timeout 120 build/cupti_api_kinds >"$f" 2>&1
		echo "run $r rc=$? $(grep '^total' "$f")"
		grep '^thread' "$f" | sed 's/^/    /'
	done
done | tee "$out/api_kinds_facts.txt"
