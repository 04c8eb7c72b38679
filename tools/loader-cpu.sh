#!/usr/bin/env bash
# The loader's own CPU without a GPU, for LOADER builds side by side
# (interleaved rounds), on the stub vendor (tools/stub_load.py's loads):
#   idle   --pid of a process that maps libcuda and sleeps: CPU ms and
#          context switches per second of the loader's threads (5 s)
#   paced  --pid of 280 steps of 40 launches 25 ms apart (shim injected):
#          the loader's CPU ms and context switches while they run
#   deep   -- COMMAND of 6,000 x 8 launches under 25 Python calls made
#          through C each: the loader's cpu_s and events stage (its loader: line)
# CPU is read from /proc/PID/task/*/schedstat, so no perf is needed.
# Root, repo root, after make. Usage: tools/loader-cpu.sh ROUNDS LOADER...
set -uo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
rounds=${1:?ROUNDS}; shift
[ $# -ge 1 ] || { echo "usage: $0 ROUNDS LOADER..." >&2; exit 2; }
B=$PWD/build
SHIM=$B/libgpuprobe_shim.so
work=$(mktemp -d /tmp/gpuprobe-loadercpu.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$B/stub

cpu_ns() { # PID: CPU ns of all its threads
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'
}
ctxsw() { # PID: context switches of all its threads
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/ctxt_switches/ {s += $2} END {printf "%d", s}'
}
wait_line() { # FILE PATTERN
	for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
idle() { # LOADER -> "cpu_ms_per_s cs_per_s"
	local p l c0 s0 ns
	python3 -c 'import ctypes, time; ctypes.CDLL("libcuda.so.1"); time.sleep(30)' & p=$!
	sleep 0.3
	"$1" --pid $p -v -o "$work/idle.pb.gz" 2>"$work/idle.err" & l=$!
	wait_line "$work/idle.err" "^counters:"; sleep 1
	c0=$(cpu_ns $l) s0=$(ctxsw $l)
	sleep 5
	ns=$(( $(cpu_ns $l) - c0 ))
	echo "$(( ns / 5000000 )).$(( ns / 500000 % 10 )) $(( ($(ctxsw $l) - s0) / 5 ))"
	kill $p; wait $p 2>/dev/null; wait $l
}
paced() { # LOADER -> "cpu_ms cs"
	local p l c0 s0 c1 s1
	rm -f "$work/go"
	CUDA_INJECTION64_PATH=$SHIM python3 tools/stub_load.py paced 280 40 25 "$work/go" >"$work/paced.out" 2>&1 & p=$!
	sleep 0.3
	"$1" --pid $p -v -o "$work/paced.pb.gz" 2>"$work/paced.err" & l=$!
	wait_line "$work/paced.err" "CPython 3"
	c0=$(cpu_ns $l) s0=$(ctxsw $l)
	touch "$work/go"
	wait $p
	c1=$(cpu_ns $l) s1=$(ctxsw $l)
	wait $l
	grep -q "launches=11200" "$work/paced.out" || echo "paced: the program failed: $(cat "$work/paced.out")" >&2
	echo "$(( (c1 - c0) / 1000000 )) $(( s1 - s0 ))"
}
deep() { # LOADER -> "cpu_s events_ms"
	"$1" --shim "$SHIM" -o "$work/deep.pb.gz" -- python3 tools/stub_load.py deep 6000 25 \
		>"$work/deep.out" 2>"$work/deep.err"
	grep -q "launches=48000" "$work/deep.out" || echo "deep: the program failed: $(cat "$work/deep.out")" >&2
	sed -n 's/^loader: cpu_s=\([0-9.]*\).* events=\([0-9.]*\).*/\1 \2/p' "$work/deep.err"
}
printf "%-32s %5s %14s %10s %14s %10s %10s %13s\n" loader round idle_cpu_ms/s idle_cs/s \
	paced_cpu_ms paced_cs deep_cpu_s deep_events_ms
for r in $(seq 1 "$rounds"); do
	for L in "$@"; do
		printf "%-32s %5s %14s %10s %14s %10s %10s %13s\n" "$L" "$r" $(idle "$L") $(paced "$L") $(deep "$L")
	done
done
