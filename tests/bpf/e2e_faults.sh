#!/usr/bin/env bash
# Faults: a loader SIGKILLed mid-run harms nothing (the program runs on and
# exits on time); bad flags, no root and an unwritable output are clear errors.
source "$(dirname "$0")/lib.sh"

start_stub "$PROGS/spin" -s 2 -i 500 >"$WORK/a.log"; A=${PIDS[-1]}
wait_file "$WORK/a.log" 5
"$LOADER" -o "$WORK/k.pb.gz" --pid "$A" 2>/dev/null &
L=$!
sleep 0.8
kill -9 "$L"
wait "$L" 2>/dev/null || true
start=$(date +%s%N)
wait "$A" || fail "the program failed after its loader was killed"
end=$(date +%s%N)
grep -q "spin: launches=" "$WORK/a.log" || fail "the program did not finish its work"
# it was asked to run 2 s from start; its exit must not wait on the dead loader
[ $(( (end - start) / 1000000 )) -lt 2500 ] || fail "exit delayed"
ok "a SIGKILLed loader left the program running and exiting on time"

set +e
"$LOADER" --bogus 2>"$WORK/err"; rc=$?
[ $rc = 2 ] || fail "bad flag exit $rc"
"$LOADER" -d -3 --all-cgroups 2>"$WORK/err"; rc=$?
[ $rc = 2 ] || fail "bad duration exit $rc"
"$LOADER" -o /nonexistent-dir/x.pb.gz --all-cgroups 2>"$WORK/err"; rc=$?
[ $rc = 1 ] && grep -q "cannot write the output" "$WORK/err" || fail "unwritable output: $rc $(cat "$WORK/err")"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$LOADER" --all-cgroups -o /tmp/x.pb.gz 2>"$WORK/err"; rc=$?
	[ $rc = 1 ] && grep -q "needs root" "$WORK/err" || fail "non-root: $rc $(cat "$WORK/err")"
fi
set -e
ok "bad flags exit 2; unwritable output and no root exit 1 with one clear line"
