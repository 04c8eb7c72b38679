# Shared helpers for the root-only end-to-end tests (sourced).
set -euo pipefail
B=${GP_BUILD:?GP_BUILD: the absolute build dir}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOADER="$B/gpuprobe-bpf"
SHIM="$B/libgpuprobe_shim.so"
STUBLIB="$B/stub/libcuda.so.1"
PROGS="$B/tests/progs"
CHECK="python3 $ROOT/tests/bpf/profile_check.py"
WORK=$(mktemp -d /tmp/gpuprobe-test.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# A test that cannot run here says why and exits 77: counted skipped, never
# passed (tools/run-tests.sh); make check fails on it where every test can
# run (root, BPF), so the reason is only ever something that machine lacks.
skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok: $*"; }
# Runs a program on the stub vendor with the shim injected, in the background.
start_stub() {
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" "$@" &
	PIDS+=($!)
}
wait_file() { # FILE SECONDS
	for _ in $(seq 1 $(( $2 * 20 ))); do [ -s "$1" ] && return 0; sleep 0.05; done
	fail "timed out waiting for $1"
}
# Waits until a line of FILE matches PATTERN, at most SECONDS; 1 if none did.
wait_line() { # FILE PATTERN SECONDS
	for _ in $(seq 1 $(( $3 * 20 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
# Waits for a background child to exit, at most SECONDS; returns its status.
wait_exit() { # PID SECONDS
	local st
	for _ in $(seq 1 $(( $2 * 20 ))); do
		st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || break
		[ "$st" = Z ] && break
		sleep 0.05
	done
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || st=gone
	[ "$st" = Z ] || [ "$st" = gone ] || fail "pid $1 still runs after $2 s"
	wait "$1"
}
