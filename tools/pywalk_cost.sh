#!/usr/bin/env bash
# What the launch program costs per run on a Python launch, without a GPU:
# tools/stub_load.py's modules load (nested callable objects, nn.Module's
# call shape: every level a C-stack entry frame on 3.12, three Python frames
# above it) on the stub vendor, under each loader given (--all-cgroups, no
# shim), interleaved for ROUNDS rounds, with the kernel's BPF run-time
# statistics on (kernel.bpf_stats_enabled, restored after). Prints each
# build's ns per run of cu_call per round and its median; the cache's hits
# dominate (the stacks repeat), as on a training step after its first.
# LOAD=worker runs tests/bpf/pyworker.py instead (N launches at a time from
# one native thread for the main thread, which waits at two sites in turn, 3
# rounds): launches for a waiting main thread, as PyTorch's backward pass.
# Root, repo root, after make. Usage:
#   [PY=python3.12] [N=20000] [DEPTH=6] [LOAD=modules|worker] tools/pywalk_cost.sh ROUNDS LOADER...
set -euo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
rounds=${1:?ROUNDS}; shift
[ $# -gt 0 ] || { echo "usage: $0 ROUNDS LOADER..." >&2; exit 2; }
PY=${PY:-python3} N=${N:-20000} DEPTH=${DEPTH:-6}
work=$(mktemp -d /tmp/gpuprobe-pywalk.XXXXXX)
was=$(sysctl -n kernel.bpf_stats_enabled)
L=
trap '[ -n "$L" ] && kill -INT $L 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=$was; rm -rf "$work"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
stats() { # -> "run_cnt run_time_ns" of the cu_call programs loaded now
	bpftool prog show name cu_call -j 2>/dev/null |
		python3 -c 'import json,sys; p=json.load(sys.stdin); p=p if isinstance(p,list) else [p]; print(sum(x.get("run_cnt",0) for x in p), sum(x.get("run_time_ns",0) for x in p))'
}
# One run at a time with the tests: a node-wide loader claims every shim ring.
exec 9>>/tmp/gpuprobe-tests.lock
flock 9
for r in $(seq 1 "$rounds"); do
	i=0
	for ldr in "$@"; do
		i=$((i + 1))
		"$ldr" --all-cgroups --libcuda build/stub/libcuda.so.1 -v -o "$work/p.pb.gz" 2>"$work/err" 9>&- &
		L=$!
		for _ in $(seq 1 200); do grep -q "^counters:" "$work/err" && break; sleep 0.05; done
		if [ "${LOAD:-modules}" = worker ]; then
			touch "$work/go"
			PYPROG_NATIVE_LIB=build/tests/progs/libgp_nofp_a.so LD_LIBRARY_PATH=build/stub \
				"$PY" tests/bpf/pyworker.py "$N" 3 "$work/go" "$work/go" >/dev/null 9>&-
		else
			LD_LIBRARY_PATH=build/stub "$PY" tools/stub_load.py modules "$N" "$DEPTH" >/dev/null 9>&-
		fi || echo "$0: the ${LOAD:-modules} load failed under $ldr" >&2
		read -r c t < <(stats) || { c=0; t=0; }
		kill -INT $L; wait $L || true; L=
		grep -o "cache_\(hits\|misses\|audits\|hit_pct\)=[0-9.]*" "$work/err" | tail -4 | tr "\n" " " >"$work/cache" || true
		echo "round $r build $i ($ldr): runs=$c ns_per_run=$((c ? t / c : 0)) $(cat "$work/cache")" |
			tee -a "$work/rounds"
	done
done
for i in $(seq 1 $#); do
	awk -v b="build $i " 'index($0, b) { sub(/.*ns_per_run=/, ""); sub(/ .*/, ""); print }' "$work/rounds" |
		sort -n | awk -v i="$i" '{a[NR] = $1} END {printf "build %d: median %d ns per run (%d..%d, %d rounds)\n", i, a[int((NR + 1) / 2)], a[1], a[NR], NR}'
done
