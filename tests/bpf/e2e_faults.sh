#!/usr/bin/env bash
# Faults: a loader SIGKILLed mid-run harms nothing (the program runs on and
# exits on time); bad flags, no root and an unwritable output are clear errors.
source "$(dirname "$0")/lib.sh"

# The program launches from its go (SIGUSR1), given once the loader reads its
# ring, until SIGTERM; the loader is SIGKILLed once it has joined launches:
# mid-run. The program must launch on (spin prints its count on SIGUSR2),
# then end soon after SIGTERM: its exit must not wait on the dead loader (at
# most one tick, by design; 5 s only fails a program held by it).
start_stub "$PROGS/spin" -S -s 0 -i 500 >"$WORK/a.log"; A=${PIDS[-1]}
wait_file "$WORK/a.log" 30
"$LOADER" -v -o "$WORK/k.pb.gz" --pid "$A" 2>"$WORK/k.err" &
L=$!
wait_line "$WORK/k.err" "reading the shim ring of pid $A" 60 || fail "the loader never read the ring"
kill -USR1 "$A"
wait_line "$WORK/k.err" "^counters: .* joined=[1-9]" 60 || fail "the loader joined no launch"
kill -9 "$L"
wait "$L" 2>/dev/null || true
progress() { sed -n 's/^spin: progress launches=//p' "$WORK/a.log" | tail -1; }
kill -USR2 "$A"
wait_line "$WORK/a.log" "^spin: progress" 60 || fail "the program stopped after its loader was killed"
c1=$(progress)
launched_past() { kill -USR2 "$A" && [ "$(progress)" -gt "$c1" ]; }
wait_until 60 launched_past || fail "the program stopped launching after its loader was killed"
start=$(now_ms)
kill -TERM "$A"
wait_exit "$A" 60 || fail "the program failed after its loader was killed"
end=$(now_ms)
grep -q "spin: launches=" "$WORK/a.log" || fail "the program did not finish its work"
[ $((end - start)) -lt 5000 ] || fail "exit delayed: the program ended $((end - start)) ms after SIGTERM"
ok "a SIGKILLed loader left the program running and exiting on time ($((end - start)) ms after SIGTERM)"

set +e
v=$("$LOADER" --version); rc=$?
[ $rc = 0 ] && [[ "$v" =~ ^gpuprobe-bpf\ [0-9a-z.-]+$ ]] || fail "--version: rc=$rc '$v'"
"$LOADER" --bogus 2>"$WORK/err"; rc=$?
[ $rc = 2 ] || fail "bad flag exit $rc"
"$LOADER" -d -3 --all-cgroups 2>"$WORK/err"; rc=$?
[ $rc = 2 ] || fail "bad duration exit $rc"
"$LOADER" -o /nonexistent-dir/x.pb.gz --all-cgroups 2>"$WORK/err"; rc=$?
[ $rc = 1 ] && grep -q "cannot write the output" "$WORK/err" || fail "unwritable output: $rc $(cat "$WORK/err")"
# An output that is a directory: refused before the command runs (it would have run, then failed).
"$LOADER" -o "$WORK" -- sh -c "touch $WORK/ran" 2>"$WORK/err"; rc=$?
[ $rc = 1 ] && grep -q "it is a directory" "$WORK/err" && [ ! -e "$WORK/ran" ] ||
	fail "a directory as the output: $rc $(cat "$WORK/err")"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$LOADER" --all-cgroups -o /tmp/x.pb.gz 2>"$WORK/err"; rc=$?
	[ $rc = 1 ] && grep -q "needs root" "$WORK/err" || fail "non-root: $rc $(cat "$WORK/err")"
fi
set -e
ok "--version says the build; bad flags exit 2; unwritable output and no root exit 1 with one clear line"

# The program SIGKILLed mid-capture: the loader notices it gone, stops, and
# writes what it had (its launches joined with their GPU time).
# The program runs until killed; the loader, given -d 300, must stop on its death.
start_stub "$PROGS/spin" -s 0 -i 500 >"$WORK/k.log"; K=${PIDS[-1]}
wait_file "$WORK/k.log" 30
"$LOADER" -v -o "$WORK/gone.pb.gz" --pid "$K" -d 300 2>"$WORK/gone.err" &
L=$!
PIDS+=($L)
wait_line "$WORK/gone.err" "^counters: .* joined=[1-9]" 60 || fail "the loader joined no launch"
kill -9 "$K"
# It notices within a tick; writing and detaching take the rest: 60 s only fails a loader that runs on.
wait_until 60 exited "$L" || fail "the loader did not stop within 60 s of its program's death"
wait "$L" || fail "loader failed after its program was SIGKILLed: $(grep -v '^libbpf\|^counters' "$WORK/gone.err")"
grep -q "pid $K exited" "$WORK/gone.err" || fail "the loader did not say pid $K is gone"
n=$($CHECK "$WORK/gone.pb.gz" totals "$K" | awk '$2=="spin_kernel"{n += $4} END {print n + 0}')
[ "$n" -gt 0 ] || fail "no launches of the SIGKILLed program in the profile"
ok "a program SIGKILLed mid-capture: the loader saw it gone and wrote its $n launches"
