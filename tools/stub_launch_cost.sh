#!/usr/bin/env bash
# What the BPF probes add per driver call, without a GPU: the launcher on the
# stub vendor (7 probed calls per iteration, the stub's own work a few ns),
# bare and with a loader attached (--all-cgroups, no shim), interleaved for
# ROUNDS rounds; prints ns per call for each and the median difference.
# Root, repo root, after make. Usage: tools/stub_launch_cost.sh [ROUNDS] [N]
set -euo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
rounds=${1:-5} n=${2:-50000}
B=build
work=$(mktemp -d /tmp/gpuprobe-cost.XXXXXX)
L=
trap '[ -n "$L" ] && kill -INT $L 2>/dev/null; rm -rf "$work"' EXIT
calls=$((7 * n))
run() { # -> seconds of one launcher run
	local t0 t1
	t0=$(date +%s%N)
	LD_LIBRARY_PATH=$B/stub $B/tests/progs/launcher -t 1 -n "$n" >/dev/null
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / calls ))
}
for r in $(seq 1 "$rounds"); do
	bare=$(run)
	$B/gpuprobe-bpf --all-cgroups --libcuda $B/stub/libcuda.so.1 -v -o "$work/p.pb.gz" \
		2>"$work/err" & L=$!
	for _ in $(seq 1 200); do grep -q "^counters:" "$work/err" && break; sleep 0.05; done
	bpf=$(run)
	kill -INT $L; wait $L || true; L=
	echo "round $r: bare_ns_per_call=$bare bpf_ns_per_call=$bpf added=$((bpf - bare))"
done | tee "$work/rounds"
sort -t= -k4 -n "$work/rounds" | awk -F'added=' '{a[NR] = $2} END {print "median added ns per call:", a[int((NR + 1) / 2)]}'
