#!/usr/bin/env bash
# A followed process that is not Python and has not launched yet (an
# inference server waiting for requests, a job loading its data) costs the
# loader next to nothing: its ticks wait for events, also at --tick-ms 20
# (they did not, and it spun at a whole core), and it looks for the
# process's CPython (reading its whole maps each time) after waits that
# double up to 2 s, not at every tick. Then its first launch is profiled as
# any other.
source "$(dirname "$0")/lib.sh"

start_stub "$PROGS/spin" -S -s 1 >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "^spin: ready" 30 || { cat "$WORK/spin.log"; fail "spin never started"; }
# At least 6 s idle under a loader ticking every 20 ms. Looks at every tick
# (what this test guards against) would be one per 50 ms; waits doubling
# to 2 s make 8 in the first 5 s, then one per 2 s. The bound scales with
# the time the loader ran, so a slow machine cannot fail it.
t0=$(now_ms)
"$LOADER" -v --tick-ms 20 --pid "$S" -d 30 -o "$WORK/p.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "reading the shim ring of pid $S\$" 60 || { cat "$WORK/err"; fail "the loader never read the ring"; }
t1=$(now_ms)
since() { [ $(( $(now_ms) - $1 )) -ge "$2" ]; } # T0 MS: MS ms have passed since T0
wait_until 30 since "$t1" 6000 # the idle time itself, on the clock
grep "^loader: " "$WORK/err" | tail -1 >"$WORK/line"
looks=$(sed -n 's/.* py_looks=\([0-9]*\) .*/\1/p' "$WORK/line")
share=$(sed -n 's/.* cpu_share=\([0-9]*\)\.[0-9]*% .*/\1/p' "$WORK/line")
ticks=$(grep -c "^loader: " "$WORK/err")
ran_s=$(( ($(now_ms) - t0) / 1000 + 1 ))
[ -n "$looks" ] && [ "$looks" -ge 1 ] && [ "$looks" -le $((10 + ran_s / 2)) ] ||
	fail "py_looks=$looks over $ticks ticks, $ran_s s, of an idle process that is not Python (want at most $((10 + ran_s / 2)))"
# Its start (the BPF programs' load) and 300 ticks: a few % of a core; a tick that spins, a whole one.
[ -n "$share" ] && [ "$share" -le 30 ] || { cat "$WORK/line"; fail "the loader used $share% of a core following an idle process"; }
kill -USR1 "$S"
wait_exit "$L" 60 || { cat "$WORK/err"; fail "the loader failed"; }
wait_exit "$S" 30 || fail "spin failed"
grep -q "^verdict: .* joined (100.0%)" "$WORK/err" || { grep "^verdict" "$WORK/err"; fail "its launches were not all joined"; }
ok "an idle process that is not Python: $share% of a core, $looks looks for CPython over $ticks ticks; its launches then joined"
