#!/usr/bin/env bash
# Loader restart: loader A (--pid) is SIGKILLed mid-run, loader B attaches to
# the same pid and takes the shim ring over (A is dead or silent: its claim is
# stale), reading on from where A stopped. The program's output and exit
# status equal a bare run's (the same command beside it, no loader, released
# at the same moment), its exit is not later than the bare run's by more than
# a loader tick (and slack), and B's profile holds GPU time with nothing unattributed but
# "launched before attach" (or, for the one call under way at the attach,
# "launched at attach").
source "$(dirname "$0")/lib.sh"

TICK_MS=100
REAP="python3 $ROOT/tests/bpf/subreaper.py"
ready_pid() { sed -n 's/^spin: ready pid=//p' "$WORK/$1.log"; }
# Both runs wait for SIGUSR1 (spin -S), launch until SIGTERM (-s 0: each step
# waits for the loaders, however slow the machine), each under a subreaper
# that notes its exit status and (wall-clock) time.
for run in bare prof; do
	start_stub $REAP "$WORK/$run.reaped" 0 0 "$PROGS/spin" -S -s 0 -i 1000 >"$WORK/$run.log"
	eval "R_$run=${PIDS[-1]}"
done
wait_file "$WORK/bare.log" 30
wait_file "$WORK/prof.log" 30
P=$(ready_pid prof)
"$LOADER" -v --pid "$P" -o "$WORK/a.pb.gz" 2>"$WORK/a.err" & LA=$!
PIDS+=($LA)
wait_line "$WORK/a.err" "reading the shim ring of pid $P\$" 60 || fail "loader A never read the ring"
kill -USR1 "$(ready_pid bare)" "$P"
wait_line "$WORK/a.err" "^counters: .* joined=[1-9]" 60 || fail "loader A joined no launch"
kill -0 "$LA" 2>/dev/null || fail "loader A ended early"
kill -9 "$LA" # its exit takes a while (the kernel removes its uprobes): B starts meanwhile
"$LOADER" -v --pid "$P" --tick-ms $TICK_MS -o "$WORK/b.pb.gz" 2>"$WORK/b.err" & LB=$!
PIDS+=($LB)
wait "$LA" 2>/dev/null || true
# B takes the ring over once A's claim is stale (A dead, or its heartbeat old).
wait_line "$WORK/b.err" "reading the shim ring of pid $P\$" 60 || { grep -v "^libbpf\|^counters" "$WORK/b.err"; fail "loader B never took the ring over"; }
wait_line "$WORK/b.err" "^counters: .* joined=[1-9][0-9][0-9]" 60 || { grep "^counters" "$WORK/b.err" | tail -1; fail "loader B joined fewer than 100 launches in 60 s"; }
kill -TERM "$(ready_pid bare)" "$P" # released at the same moment
wait_exit "$LB" 60 || { grep -v "^libbpf\|^counters" "$WORK/b.err"; fail "loader B failed"; }
for run in bare prof; do r=R_$run; wait_exit "${!r}" 60 || fail "subreaper ($run)"; done
grep -q "pid $P exited" "$WORK/b.err" || fail "loader B stopped before the program's exit"

# Output and status as a bare run's (pids and time-bound counts aside).
norm() { sed -e 's/pid=[0-9]*/pid=N/' -e 's/launches=[0-9]*/launches=N/' "$WORK/$1.log"; }
[ "$(norm prof)" = "$(norm bare)" ] || { diff <(norm bare) <(norm prof); fail "output differs from a bare run's"; }
read -r bst bt < <(grep "^$(ready_pid bare) " "$WORK/bare.reaped" | cut -d' ' -f2-)
read -r pst pt < <(grep "^$P " "$WORK/prof.reaped" | cut -d' ' -f2-)
[ "$bst" = 0 ] && [ "$pst" = "$bst" ] || fail "exit status $pst, a bare run's $bst"
# The exit handshake waits one tick at most (shim/shm.c); a second of slack
# for a loaded 2-core machine: only a program held longer, by a loader, fails.
late=$(awk -v p="$pt" -v b="$bt" 'BEGIN {printf "%d", (p - b) * 1000}')
[ "$late" -le $((TICK_MS + 1000)) ] || fail "the program exited ${late} ms after a bare run: delayed"
ok "the program's output and exit status as a bare run's; it exited ${late} ms after it"

grep "^counters: " "$WORK/b.err" | tail -1 >"$WORK/b.ctr"
[ -s "$WORK/b.ctr" ] || fail "B: no counters line"
$CHECK "$WORK/b.pb.gz" totals >"$WORK/b.totals"
n=$(awk '$2=="spin_kernel" && $1!~/^\[unattributed/ {n += $4} END {print n + 0}' "$WORK/b.totals")
ns=$(awk '$2=="spin_kernel" && $1!~/^\[unattributed/ {n += $3} END {print n + 0}' "$WORK/b.totals")
[ "$n" -ge 100 ] || { cat "$WORK/b.totals" "$WORK/b.ctr"; fail "B joined only $n launches (its counters said 100 or more)"; }
[ "$ns" = $((n * 1000)) ] || fail "B: GPU time $ns != $n x 1000 ns"
grep "^\[unattributed" "$WORK/b.totals" | grep -v "launched before attach\|launched at attach" && { cat "$WORK/b.ctr"; fail "B: unattributed GPU time"; }
at=$(sed -n 's/.* at_attach=\([0-9]*\) .*/\1/p' "$WORK/b.ctr")
[ -n "$at" ] && [ "$at" -le 1 ] || { cat "$WORK/b.ctr"; fail "B: at_attach=$at: spin launches from one thread, at most one call is at the attach"; }
grep -q "launches_without_record=0 " "$WORK/b.ctr" || { cat "$WORK/b.ctr"; fail "B: launches it saw without their GPU record"; }
grep -q "ring_resyncs=0 " "$WORK/b.ctr" && grep -q "records_bad=0 " "$WORK/b.ctr" || { cat "$WORK/b.ctr"; fail "B: ring resyncs or bad records"; }
cat "$WORK/b.ctr"
ok "loader B took the ring over from the SIGKILLed A: $n launches joined, GPU time exact"
