#!/usr/bin/env bash
# The stack cache and a Python code object freed and another made at its
# address (tests/bpf/pyreuse.py, on the stub vendor through ctypes): the
# launches after it get the new function's name, those before keep the old
# one's, though the two share a stack-cache key (same stack pointer, return
# address, kernel, and a Python hash over the same addresses).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cache_lib.sh"

PY=${GP_TEST_PYTHON:-/usr/bin/python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
	skip "no CPython 3.11+ at $PY (set GP_TEST_PYTHON)"
N=3000
start_loader "$WORK/py.pb.gz" -- "$PY" "$ROOT/tests/bpf/pyreuse.py" $N "$WORK/ready" "$WORK/go" \
	"$WORK/done"
wait_line "$E" "CPython 3" 30 || fail "the loader did not find CPython: $(grep -v '^libbpf\|^counters\|^loader' "$E")"
touch "$WORK/ready"
go_after_installs 1 "$WORK/go"
# The program lives until the loader has found the swap (it reads the code
# objects of a live process).
replaced() { [ "$(field py_replaced "$E")" -ge 1 ] 2>/dev/null; }
wait_until 60 replaced || fail "no code object found replaced in 60 s: $(grep '^loader' "$E" | tail -1)"
touch "$WORK/done"
finish_loader
grep -q "pyreuse: launches=$((2 * N))" "$E.out" || fail "pyreuse: $(cat "$E.out")"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/py.pb.gz" split py_reuse first_fn=$N other_fn=$N >"$WORK/check" ||
	fail "a code object made at a freed one's address: $(cat "$WORK/check")"
[ "$(field py_replaced "$E")" -ge 1 ] || fail "no code object found replaced: $(grep '^loader' "$E" | tail -1)"
ok "$("$PY" -V): a code object made at a freed one's address: $(cat "$WORK/check")"
