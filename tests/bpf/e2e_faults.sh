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
v=$("$LOADER" --version); rc=$?
[ $rc = 0 ] && [[ "$v" =~ ^gpuprobe-bpf\ [0-9a-z.-]+$ ]] || fail "--version: rc=$rc '$v'"
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
ok "--version says the build; bad flags exit 2; unwritable output and no root exit 1 with one clear line"

# The program SIGKILLed mid-capture: the loader notices it gone, stops, and
# writes what it had (its launches joined with their GPU time).
start_stub "$PROGS/spin" -s 20 -i 500 >"$WORK/k.log"; K=${PIDS[-1]}
wait_file "$WORK/k.log" 5
"$LOADER" -v -o "$WORK/gone.pb.gz" --pid "$K" -d 30 2>"$WORK/gone.err" &
L=$!
for _ in $(seq 1 100); do grep -q "^counters:" "$WORK/gone.err" && break; sleep 0.05; done
sleep 1
kill -9 "$K"
start=$(date +%s%N)
wait "$L" || fail "loader failed after its program was SIGKILLed: $(grep -v '^libbpf\|^counters' "$WORK/gone.err")"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 5000 ] || fail "the loader did not stop soon after its program died"
grep -q "pid $K exited" "$WORK/gone.err" || fail "the loader did not say pid $K is gone"
n=$($CHECK "$WORK/gone.pb.gz" totals "$K" | awk '$2=="spin_kernel"{n += $4} END {print n + 0}')
[ "$n" -gt 0 ] || fail "no launches of the SIGKILLed program in the profile"
ok "a program SIGKILLed mid-capture: the loader saw it gone and wrote its $n launches"
