#!/usr/bin/env bash
# Python frames without flags: a CPython program (the system's python3, 3.10+)
# launching kernels on the stub through ctypes, profiled as `gpuprobe-bpf --
# python3 pyprog.py`: every kernel's GPU time sits under the script's own
# functions, in call order and with their lines, placed where the interpreter
# runs them among the native frames, and each stack ends at _start.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cache_lib.sh"

PY=${GP_TEST_PYTHON:-/usr/bin/python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null ||
	skip "no CPython 3.10+ at $PY (set GP_TEST_PYTHON)"
N=200
# The program waits for GO until the loader has found the interpreter, and
# at its end for DONE until every launch was read (its code objects named):
# handshakes, not sleeps, on a machine of any speed.
run_py() { # OUT LAUNCHES SCRIPT ARGS...: the loader (-v) on python3 SCRIPT; E its stderr
	local out=$1 n=$2 go done
	shift 2
	go="$WORK/$(basename "$out" .pb.gz).go" done="$WORK/$(basename "$out" .pb.gz).done"
	GP_PY_GO=$go GP_PY_DONE=$done start_loader "$out" -- "$PY" "$@"
	wait_line "$E" "CPython 3" 60 || fail "the loader did not find CPython: $(grep -v '^libbpf\|^counters\|^loader' "$E")"
	touch "$go"
	joined_all() { [ "$(field joined "$E")" -ge "$n" ] 2>/dev/null; }
	wait_until 60 joined_all || fail "not every launch joined in 60 s: $(grep '^counters' "$E" | tail -1)"
	touch "$done"
	finish_loader
}
# py_back is launched by a native thread while the Python caller waits, as
# PyTorch's autograd threads run backward(): it goes under the caller's frames.
PYPROG_NATIVE_LIB="$PROGS/libgp_nofp_a.so" run_py "$WORK/py.pb.gz" $((3 * N)) "$ROOT/tests/bpf/pyprog.py" $N
grep -q "pyprog: launches=$((3 * N))" "$E.out" || fail "the program did not run: $(cat "$E.out")"
grep "^counters" "$E" | tail -1 | grep -q " unattributed=0 " || fail "unattributed GPU time: $(grep counters "$E" | tail -1)"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/py.pb.gz" python "$ROOT/tests/bpf/pyprog.py" $N ||
	fail "python stacks"
ok "$("$PY" -V): GPU time under the script's functions, in order, with lines; a native thread's under its waiting caller"

# With each process's code-object cache bounded at one byte it is flushed
# at every lookup, also while a stack's earlier frames keep their names
# (held until the profile has them: freed, they came out wrong). Names are
# read from the live process: a --pid run stopped, its profile written,
# before the program may end (after its exit, only cached objects can be named).
LD_LIBRARY_PATH="$B/stub" CUDA_INJECTION64_PATH="$SHIM" GP_PY_GO="$WORK/fgo" GP_PY_DONE="$WORK/fdone" \
	PYPROG_NATIVE_LIB="$PROGS/libgp_nofp_a.so" "$PY" "$ROOT/tests/bpf/pyprog.py" $N >"$WORK/outf" 2>&1 &
P=$!; PIDS+=($P)
GPUPROBE_TEST_PY_CACHE_BYTES=1 "$LOADER" -v -o "$WORK/pyflush.pb.gz" --pid $P 2>"$WORK/errf" &
L=$!; PIDS+=($L)
wait_line "$WORK/errf" "CPython 3" 60 || fail "flushed cache: the loader did not find CPython: $(grep -v '^libbpf\|^counters' "$WORK/errf")"
# go once the shim records too (its ring's header says so): it switches on
# at its next look for a reader, which may come after the loader found CPython
recording_flushed() { python3 "$ROOT/tests/bpf/shm_peek.py" $P | grep -q " recording=1 "; }
wait_until 60 recording_flushed || fail "flushed cache: the shim did not record in 60 s: $(python3 "$ROOT/tests/bpf/shm_peek.py" $P)"
touch "$WORK/fgo"
joined_flushed() { [ "$(field joined "$WORK/errf")" -ge $((3 * N)) ] 2>/dev/null; }
wait_until 60 joined_flushed || fail "flushed cache: not every launch joined in 60 s: $(grep '^counters' "$WORK/errf" | tail -1)"
kill -INT $L
wait_exit $L 60 || fail "flushed cache: loader failed: $(grep -v '^libbpf\|^counters\|^loader' "$WORK/errf" | tail -5)"
touch "$WORK/fdone"
wait $P || fail "flushed cache: the program failed: $(cat "$WORK/outf")"
grep "^counters" "$WORK/errf" | tail -1 | grep -q " python_unresolved=0 " ||
	fail "flushed cache: frames not named: $(grep counters "$WORK/errf" | tail -1)"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/pyflush.pb.gz" python "$ROOT/tests/bpf/pyprog.py" $N ||
	fail "python stacks, the cache flushed at every lookup"
ok "a code-object cache flushed at every lookup names every frame of a stack right"

# Several Python threads (the walk steps over the others' thread states to
# find each launching thread's own) and a recursion deeper than the walk copies.
run_py "$WORK/thr.pb.gz" 350 "$ROOT/tests/bpf/pythreads.py" 50 6 100
grep -q "pythreads: launches=350" "$E.out" || fail "the program did not run: $(cat "$E.out")"
grep "^counters" "$E" | tail -1 | grep -q " python_short=1 " || fail "python_short (one distinct stack): $(grep counters "$E" | tail -1)"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/thr.pb.gz" pythreads "$ROOT/tests/bpf/pythreads.py" 50 6 ||
	fail "python threads and deep stacks"
ok "six Python threads each under their own frames; a 100-deep recursion copies 64 frames and says so"

# Started before the loader (--pid): the frames come all the same.
LD_LIBRARY_PATH="$B/stub" CUDA_INJECTION64_PATH="$SHIM" "$PY" -c '
import sys, time, runpy, ctypes
ctypes.CDLL("libcuda.so.1")  # mapped before the loader looks
sys.argv = ["pyprog.py", "'$N'"]
while not __import__("os").path.exists("'$WORK/go'"): time.sleep(0.02)
runpy.run_path("'$ROOT/tests/bpf/pyprog.py'", run_name="__main__")' >"$WORK/out2" 2>&1 &
P=$!; PIDS+=($P)
"$LOADER" -v -o "$WORK/pid.pb.gz" --pid $P 2>"$WORK/err2" &
L=$!
# go once the loader has found the interpreter (it says so with -v)
wait_line "$WORK/err2" "CPython 3" 60 || fail "--pid: the loader did not find CPython: $(grep -v '^libbpf\|^counters' "$WORK/err2")"
touch "$WORK/go"
wait $P || fail "the program failed: $(cat "$WORK/out2")"
wait $L || fail "loader --pid: $(tail -3 "$WORK/err2")"
go tool pprof -traces "$WORK/pid.pb.gz" 2>/dev/null | grep -A12 py_relu | grep -q "attention" ||
	fail "--pid: no Python frames: $(grep -v '^libbpf\|^counters' "$WORK/err2"; go tool pprof -traces "$WORK/pid.pb.gz" 2>&1 | head -30)"
ok "a Python process started before the loader gets its Python frames"
