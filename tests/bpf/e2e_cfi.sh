#!/usr/bin/env bash
# CFI unwinding: a program built with -fomit-frame-pointer (rbp holds garbage
# across every call) launching through three levels of functions in two
# libraries, from two threads. With --unwind cfi (the default) every launch's
# stack is exactly the known chain, ending at a root; frame pointers alone
# cannot find it (the second run proves the test tells the two apart).
source "$(dirname "$0")/lib.sh"

N=100
CHAIN=(nofp_level3 nofp_level2 nofp_level1 "main|worker")
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/cfi.pb.gz" -- "$PROGS/nofp" $N >"$WORK/out" 2>"$WORK/err" ||
	fail "loader: $(tail -3 "$WORK/err")"
grep -q "nofp: launches=$((2 * N))" "$WORK/out" || fail "the program did not run"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/cfi.pb.gz" chain nofp_kernel $((2 * N)) "${CHAIN[@]}" ||
	fail "cfi stacks"
ok "every launch's stack is the known chain through two libraries without frame pointers"

LD_LIBRARY_PATH="$B/stub" "$LOADER" --unwind fp -o "$WORK/fp.pb.gz" -- "$PROGS/nofp" $N >/dev/null 2>"$WORK/err" ||
	fail "loader --unwind fp: $(tail -3 "$WORK/err")"
set +e
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/fp.pb.gz" chain nofp_kernel $((2 * N)) "${CHAIN[@]}" \
	>"$WORK/fpcheck" 2>&1
rc=$?
set -e
# 3: every launch was counted, and the stacks differ from the chain
[ $rc = 3 ] || fail "frame pointers: want the chain missed, got rc=$rc: $(cat "$WORK/fpcheck")"
ok "frame pointers alone do not find it: $(cut -c1-120 "$WORK/fpcheck")"

# Deep stacks: the second thread's root frame holds 96 KiB, mostly never
# touched (not resident: those chunks of the copy stay zero), and that thread
# makes its N launches twice, the second once the loader has read the first
# (GP_NOFP_GO, touched when its counters say so). With --stack-copy auto
# a thread's copies cover its whole stack until the loader has seen what
# they need, so its launches reach the root (at most N, one round, may end
# short). A fixed 32 KiB copy ends all 2N short (the test tells the two apart).
GP_NOFP_GO="$WORK/deep.go" LD_LIBRARY_PATH="$B/stub" "$LOADER" -v -o "$WORK/deep.pb.gz" -- \
	"$PROGS/nofp" $N 96 >"$WORK/out" 2>"$WORK/err" &
L=$!
PIDS+=($L)
# The first round read and unwound (joined): the copy sized from what it needed.
first_round() { [ "$(grep -o " joined=[0-9]*" "$WORK/err" | tail -1 | cut -d= -f2)" -ge $((2 * N)) ] 2>/dev/null; }
wait_until 60 first_round || fail "the first round was not joined in 60 s: $(grep '^counters' "$WORK/err" | tail -1)"
touch "$WORK/deep.go"
wait_exit "$L" 60 || fail "loader (deep): $(grep -v '^libbpf\|^counters\|^loader' "$WORK/err" | tail -3)"
grep -q "nofp: launches=$((3 * N))" "$WORK/out" || fail "the program did not run (deep)"
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/deep.pb.gz" chain-short nofp_kernel $((3 * N)) $N "${CHAIN[@]}" \
	>"$WORK/deepcheck" || fail "deep stacks with --stack-copy auto: $(cat "$WORK/deepcheck")"
ok "96 KiB deeper stacks, copy sized per thread: $(cat "$WORK/deepcheck")"
LD_LIBRARY_PATH="$B/stub" "$LOADER" --stack-copy 32 -o "$WORK/deep32.pb.gz" -- "$PROGS/nofp" $N 96 \
	>/dev/null 2>"$WORK/err" || fail "loader (deep, 32 KiB): $(tail -3 "$WORK/err")"
set +e
python3 "$ROOT/tests/bpf/stack_check.py" "$WORK/deep32.pb.gz" chain-short nofp_kernel $((3 * N)) $N "${CHAIN[@]}" \
	>"$WORK/deep32check" 2>&1
rc=$?
set -e
[ $rc = 3 ] || fail "a fixed 32 KiB copy: want the deep thread's stacks short, got rc=$rc: $(cat "$WORK/deep32check")"
ok "a fixed 32 KiB copy ends them short: $(cut -c1-100 "$WORK/deep32check")"
