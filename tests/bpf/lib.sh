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
# Every counter on the loader's last line, zeros too: the tests read them by name.
export GPUPROBE_COUNTERS=all
PIDS=()
# A failed test leaves its work directory (the loader's logs, profiles) and says where.
# Every process it started goes with it, and their descendants first (a
# wrapper's child, killed after it, would live on, reparented: a spin left
# waiting for SIGUSR1 attached every later test's loader to the stub early).
kill_tree() { # PID
	local c
	kill -STOP "$1" 2>/dev/null || return 0
	for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
	kill -9 "$1" 2>/dev/null || true
}
cleanup() {
	local rc=$?
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill_tree "$p"; done
	if [ $rc != 0 ] && [ $rc != 77 ]; then echo "(kept $WORK)" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# NAME's value on FILE's last counters line (the loader's -v output); "" when absent.
counter() { # FILE NAME
	grep "^counters:" "$1" | tail -n 1 | sed -n "s/.*[ (]$2=\([0-9]*\).*/\1/p"
}
# Sibling cgroups of the test's own, one per SUFFIX, made now and removed at
# exit: CGS holds their directories, CG_BASE the test's own cgroup path.
# Skips where there is no cgroup2 hierarchy or it cannot be written.
test_cgroups() { # SUFFIX...
	local root dir s
	root=$(awk '$3=="cgroup2"{print $2; exit}' /proc/self/mounts)
	[ -n "$root" ] || skip "no cgroup2 mount"
	CG_BASE=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
	# A cgroup with processes cannot take children where controllers are
	# enabled; plain membership is all a test needs: siblings under our parent.
	dir="$root${CG_BASE%/}"
	CGS=()
	for s in "$@"; do CGS+=("$dir/gpuprobe-test-$s-$$"); done
	mkdir "${CGS[@]}" || { rmdir "${CGS[@]}" 2>/dev/null; skip "cannot create cgroups under $dir"; }
	trap 'cleanup; rm_cgroups' EXIT
}
# The test's cgroups removed: a killed process leaves its cgroup a moment
# after it is reaped, so each rmdir is tried again while the cgroup is busy
# (for 5 s at most: a cgroup left behind is only litter, said so).
rm_cgroups() {
	local d i
	for d in "${CGS[@]:-}"; do
		for i in $(seq 1 100); do
			rmdir "$d" 2>/dev/null || [ ! -d "$d" ] && break
			sleep 0.05
		done
		[ -d "$d" ] && echo "(cgroup $d left behind)" >&2
	done
	return 0
}
# A test that cannot run here says why and exits 77: counted skipped, never
# passed (tools/run-tests.sh); make check fails on it where every test can
# run (root, BPF), so the reason is only ever something that machine lacks.
skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok: $*"; }
# Runs a program on the stub vendor with the shim injected, in the background.
# STUB_DIR=DIR runs it on another copy of the stub vendor.
start_stub() {
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="${STUB_DIR:-$B/stub}" "$@" &
	PIDS+=($!)
}
# Bounds on waits are generous: they only end a run that is truly stuck. A
# test waits for what it needs (a file, a line, an exit), never a fixed time.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Runs COMMAND... until it succeeds, at most SECONDS by the clock; 1 if it never did.
wait_until() { # SECONDS COMMAND...
	local end=$(( $(now_ms) + $1 * 1000 )); shift
	until "$@"; do
		[ "$(now_ms)" -lt $end ] || return 1
		sleep 0.02
	done
}
has_line() { grep -q -- "$2" "$1" 2>/dev/null; } # FILE PATTERN
wait_file() { # FILE SECONDS
	wait_until "$2" test -s "$1" || fail "timed out after $2 s waiting for $1"
}
# Waits until a line of FILE matches PATTERN, at most SECONDS; 1 if none did.
wait_line() { # FILE PATTERN SECONDS
	wait_until "$3" has_line "$1" "$2"
}
# Waits until at least COUNT lines of FILE match PATTERN, at most SECONDS; 1 if not.
has_lines() { [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ]; } # FILE PATTERN COUNT
wait_lines() { # FILE PATTERN COUNT SECONDS
	wait_until "$4" has_lines "$1" "$2" "$3"
}
# Waits for a background child to exit, at most SECONDS; returns its status.
exited() { # PID: a zombie, or gone
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[ "$st" = Z ]
}
wait_exit() { # PID SECONDS
	wait_until "$2" exited "$1" || fail "pid $1 still runs after $2 s"
	wait "$1"
}
# The launches spin (its log LOG) made, echoed once PROFILE is found to hold
# each of them, for PID, under spin_kernel with its GPU time; fails the test
# otherwise, saying WHAT.
spin_exact() { # PROFILE PID LOG WHAT
	local want got
	want=$(sed -n 's/^spin: launches=//p' "$3")
	[ -n "$want" ] && [ "$want" -gt 0 ] || fail "$4: spin printed no launch count"
	$CHECK "$1" totals "$2" >"$WORK/spin_exact.totals"
	got=$(awk '$2=="spin_kernel" {n += $4} END {print n + 0}' "$WORK/spin_exact.totals")
	[ "$got" = "$want" ] || { cat "$WORK/spin_exact.totals"; fail "$4: $got launches of spin_kernel, it made $want"; }
	echo "$want"
}
# Waits until PID's shim records (a shim records only while a loader reads
# its ring, from a moment after the loader found it): launches before are
# labelled [no GPU record: before the shim recorded].
wait_recording() { # PID SECONDS
	wait_until "$2" bash -c "python3 '$ROOT/tests/bpf/shm_peek.py' $1 2>/dev/null | grep -q ' recording=1 '"
}
