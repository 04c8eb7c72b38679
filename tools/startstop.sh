#!/usr/bin/env bash
# The loader's start and stop on the stub vendor (no GPU needed), as root:
# the kernel time of one start (BPF verification, attach) and how long N
# loaders take to exit after SIGINT when they stop at once (uprobe removal).
# Usage (repo root, after make): tools/startstop.sh [N] (default 4)
set -euo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
n=${1:-4}
B=build
export LD_LIBRARY_PATH=$B/stub
work=$(mktemp -d /tmp/gpuprobe-startstop.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/time -f "one start+run: user_s=%U sys_s=%S wall_s=%e" \
	$B/gpuprobe-bpf -o "$work/one.pb.gz" -- $B/tests/progs/launcher -t 2 -n 50 2>&1 >/dev/null |
	grep "^one start"
pids=()
for k in $(seq 1 "$n"); do
	$B/gpuprobe-bpf -o "$work/l$k.pb.gz" --libcuda $B/stub/libcuda.so.1 -v -- \
		$B/tests/progs/spin -s 30 -i 1000 >/dev/null 2>"$work/l$k.err" &
	pids+=($!)
done
for k in $(seq 1 "$n"); do
	for _ in $(seq 1 200); do grep -q "^counters:" "$work/l$k.err" && break; sleep 0.05; done
done
sleep 1
t0=$(date +%s.%N)
kill -INT "${pids[@]}"
for k in $(seq 1 "$n"); do
	wait "${pids[$((k - 1))]}" || true
	echo "loader $k of $n exited $(echo "$(date +%s.%N) - $t0" | bc) s after SIGINT"
done
