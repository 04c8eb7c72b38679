#!/usr/bin/env bash
# Facts for capturing API calls by CUPTI's launch callbacks instead of its
# API activity records (callbacks can be switched while CUDA runs; the
# records cannot): tools/gpu/cupti_cb_switch.cu, launch callbacks and kernel
# records switched on and off while the main thread launches, then their
# cost in one process. Prints what it counted. docs/BENCHMARKS.md
# (2026-12-04) has the results and what the shim built on them did.
# Usage (repo root, GPU machine): tools/gpu/cb_facts.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
nvcc -O2 -I"$CUDA/extras/CUPTI/include" -o build/cupti_cb_switch tools/gpu/cupti_cb_switch.cu \
	-Xlinker "$CUPTI" || exit 1
LD_LIBRARY_PATH=$(dirname "$CUPTI") build/cupti_cb_switch | tee "$out/cb_switch.txt"
