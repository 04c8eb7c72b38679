#!/usr/bin/env bash
# --trace: the timeline of a Python program launching on the stub, beside its
# profile. Every launch call is on its thread inside its stack's slices
# (the script's functions among them), every kernel on its GPU track with an
# arrow from its call, and the kernels and GPU time equal the profile's
# (tests/bpf/trace_check.py); a graph launch's call sends an arrow to each
# of its kernels. What cannot be a timeline is refused before
# the command runs.
source "$(dirname "$0")/lib.sh"

PY=${GP_TEST_PYTHON:-/usr/bin/python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null ||
	skip "no CPython 3.10+ at $PY (set GP_TEST_PYTHON)"
N=100
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/py.pb.gz" --trace "$WORK/py.json" -- \
	"$PY" "$ROOT/tests/bpf/pyprog.py" $N >"$WORK/out" 2>"$WORK/err" || fail "loader: $(tail -3 "$WORK/err")"
grep -q "pyprog: launches=$((2 * N))" "$WORK/out" || fail "the program did not run: $(cat "$WORK/out")"
grep -q "wrote $WORK/py.json: $((2 * N)) launch calls, $((2 * N)) GPU activities" "$WORK/err" ||
	fail "no line saying what the timeline holds: $(grep wrote "$WORK/err")"
res=$(python3 "$ROOT/tests/bpf/trace_check.py" "$WORK/py.json" "$WORK/py.pb.gz" train_step layer model _start) ||
	fail "the timeline (above)"
ok "$res"

# Threads, streams and graph launches (one call, several kernels: an arrow to each).
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/l.pb.gz" --trace "$WORK/l.json" -- \
	"$PROGS/launcher" -t 4 -n 100 >"$WORK/out.l" 2>"$WORK/err.l" || fail "loader (launcher): $(tail -3 "$WORK/err.l")"
res=$(python3 "$ROOT/tests/bpf/trace_check.py" "$WORK/l.json" "$WORK/l.pb.gz" worker) || fail "the launcher's timeline (above)"
read -r calls acts <<<"$(echo "$res" | sed -n 's/.*: \([0-9]*\) launch calls.*, \([0-9]*\) GPU activities.*/\1 \2/p')"
[ "$acts" -gt "$calls" ] || fail "no call with several activities (graph launches): $res"
ok "launcher: $res"

# Refused at once, the command never run: a timeline per --interval, the
# profile's own file, a directory.
for args in "--interval 5" "-o $WORK/same.json" "--trace-dir"; do
	rm -f "$WORK/ran"
	t="$WORK/same.json"
	[ "$args" = "--trace-dir" ] && { mkdir -p "$WORK/d"; t="$WORK/d"; args=; }
	set +e
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH="$B/stub" "$LOADER" $args --trace "$t" -- touch "$WORK/ran" 2>"$WORK/err.r"
	rc=$?
	set -e
	[ $rc = 1 ] || [ $rc = 2 ] || fail "--trace $t $args: exit $rc, want 1 or 2"
	[ ! -e "$WORK/ran" ] || fail "--trace $t $args: the command ran"
	grep -q "trace\|$t" "$WORK/err.r" || fail "--trace $t $args: no error naming it: $(cat "$WORK/err.r")"
done
ok "--trace refused with --interval, as -o's own file, and as a directory, before the command ran"
