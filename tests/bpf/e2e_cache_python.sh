#!/usr/bin/env bash
# The stack cache and a Python code object freed and another made at its
# address (tests/bpf/pyreuse.py, on the stub vendor through ctypes): the
# launches after it get the new function's name, those before keep the old
# one's, though the two share a stack-cache key (same stack pointer, return
# address, kernel, and a Python hash over the same addresses). And a native
# thread launching for a waiting main thread (tests/bpf/pyworker.py): the
# main thread's kept walk answers only while it has not run.
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
# And until every launch was read and joined: a check the last launches make
# must not run while the interpreter frees its code objects at exit (that
# reads as replaced, and their frames as unreadable: short, not wrong).
all_joined() { [ "$(field joined "$E")" -ge $((2 * N)) ] 2>/dev/null; }
wait_until 60 all_joined || fail "not every launch joined in 60 s: $(grep '^counters' "$E" | tail -1)"
touch "$WORK/done"
finish_loader
grep -q "pyreuse: launches=$((2 * N))" "$E.out" || fail "pyreuse: $(cat "$E.out")"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/py.pb.gz" split py_reuse first_fn=$N other_fn=$N >"$WORK/check" ||
	fail "a code object made at a freed one's address: $(cat "$WORK/check")"
[ "$(field py_replaced "$E")" -ge 1 ] || fail "no code object found replaced: $(grep '^loader' "$E" | tail -1)"
ok "$("$PY" -V): a code object made at a freed one's address: $(cat "$WORK/check")"

# One native thread launches for the main thread, which waits at two call
# sites in turn: the launch program keeps the main thread's walk while it
# waits and walks it again once it has run, so every launch is under the site
# it waited at (a kept walk taken across a run of the main thread would give
# at_b's launches at_a's stack once at_a's key answers hits).
export PYPROG_NATIVE_LIB="$PROGS/libgp_nofp_a.so"
N=300 R=4
# (--stack-young 0: keys answer from their first hit, not after audits the
# loader may confirm only once the burst is over.)
start_loader "$WORK/w.pb.gz" --stack-young 0 -- "$PY" "$ROOT/tests/bpf/pyworker.py" $N $R \
	"$WORK/wready" "$WORK/wgo"
wait_line "$E" "CPython 3" 30 || fail "the loader did not find CPython: $(grep -v '^libbpf\|^counters\|^loader' "$E")"
touch "$WORK/wready"
go_after_installs 2 "$WORK/wgo"
finish_loader
grep -q "pyworker: launches=$((2 * N * (R + 1)))" "$E.out" || fail "pyworker: $(cat "$E.out")"
$SC "$WORK/w.pb.gz" split py_back at_a=$((N * (R + 1))) at_b=$((N * (R + 1))) >"$WORK/wcheck" ||
	fail "launches for a waiting main thread: $(cat "$WORK/wcheck")"
[ "$(field stack_cache_mismatch "$E")" = 0 ] ||
	fail "a kept walk was wrong: $(grep '^counters' "$E" | tail -1)"
[ "$(field cache_hits "$E")" -ge $((N * R)) ] ||
	fail "the backward launches did not hit the cache: $(grep '^loader' "$E" | tail -1)"
# Most of them took the kept walk (each pass's first walks the main thread).
[ "$(field py_kept "$E")" -ge $((N * R)) ] ||
	fail "the main thread's walk was not kept: $(grep '^loader' "$E" | tail -1)"
ok "a native thread's launches for a main thread waiting at two sites in turn: $(cat "$WORK/wcheck")"
