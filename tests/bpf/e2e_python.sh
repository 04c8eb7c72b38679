#!/usr/bin/env bash
# Python frames without flags: a CPython program (the system's python3, 3.10+)
# launching kernels on the stub through ctypes, profiled as `gpuprobe-bpf --
# python3 pyprog.py`: every kernel's GPU time sits under the script's own
# functions, in call order and with their lines, placed where the interpreter
# runs them among the native frames, and each stack ends at _start.
source "$(dirname "$0")/lib.sh"

PY=${GP_TEST_PYTHON:-/usr/bin/python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null ||
	skip "no CPython 3.10+ at $PY (set GP_TEST_PYTHON)"
N=200
# py_back is launched by a native thread while the Python caller waits, as
# PyTorch's autograd threads run backward(): it goes under the caller's frames.
PYPROG_NATIVE_LIB="$PROGS/libgp_nofp_a.so" LD_LIBRARY_PATH="$B/stub" \
	"$LOADER" -o "$WORK/py.pb.gz" -- "$PY" "$ROOT/tests/bpf/pyprog.py" $N \
	>"$WORK/out" 2>"$WORK/err" || fail "loader: $(tail -3 "$WORK/err")"
grep -q "pyprog: launches=$((3 * N))" "$WORK/out" || fail "the program did not run: $(cat "$WORK/out")"
grep -q " unattributed=0 " "$WORK/err" || fail "unattributed GPU time: $(grep counters "$WORK/err")"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/py.pb.gz" python "$ROOT/tests/bpf/pyprog.py" $N ||
	fail "python stacks"
ok "$("$PY" -V): GPU time under the script's functions, in order, with lines; a native thread's under its waiting caller"

# Several Python threads (the walk steps over the others' thread states to
# find each launching thread's own) and a recursion deeper than the walk copies.
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/thr.pb.gz" -- "$PY" "$ROOT/tests/bpf/pythreads.py" 50 6 100 \
	>"$WORK/out3" 2>"$WORK/err3" || fail "loader (threads): $(tail -3 "$WORK/err3")"
grep -q "pythreads: launches=350" "$WORK/out3" || fail "the program did not run: $(cat "$WORK/out3")"
grep -q " python_short=1 " "$WORK/err3" || fail "python_short (one distinct stack): $(grep counters "$WORK/err3")"
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
