#!/usr/bin/env bash
# A short PyTorch training run profiled with --trace, for the browser test
# (tests/browser/view_check.py) and the README's pictures: train.py's small
# step (STEPS steps, GRAPH_REPLAYS replays) under `gpuprobe-bpf -- ...`; the
# timeline is checked against the profile (tests/bpf/trace_check.py) and
# comes back gzipped beside the profile and the loader's log.
# Usage (repo root, GPU machine, after make static and the shim):
#   [STEPS=8] [GRAPH_REPLAYS=5] tools/gpu/timeline.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}; mkdir -p "$out"
. "$(dirname "$0")/launch_tools.sh"
L=$PWD/build/static/gpuprobe-bpf
trace=/tmp/timeline.json
$L --shim "$PWD/build/libgpuprobe_shim.so" -o "$out/train.pb.gz" --trace "$trace" -- \
	env STEPS="${STEPS:-8}" GRAPH_REPLAYS="${GRAPH_REPLAYS:-5}" $PY tools/gpu/train.py \
	>"$out/train.log" 2>"$out/loader.log"
echo "loader exit $?"
grep "^verdict\|wrote" "$out/loader.log"
ls -la "$trace"
$PY tests/bpf/trace_check.py "$trace" "$out/train.pb.gz" train_step
gzip -9c "$trace" >"$out/train.json.gz"
ls -la "$out"
