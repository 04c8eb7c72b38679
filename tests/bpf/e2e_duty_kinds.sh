#!/usr/bin/env bash
# e2e_duty.sh with the shim's API records taken from CUPTI's whole RUNTIME and
# DRIVER activity kinds, switched with the windows (GPUPROBE_API_RECORDS=kinds,
# nvidia/injection.c): the same exact windows, the kinds switched by the
# shim's own thread, on in every window and off between, and no launch
# callback ever on.
export GPUPROBE_API_RECORDS=kinds
exec bash "$(dirname "$0")/e2e_duty.sh"
