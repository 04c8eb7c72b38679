#!/usr/bin/env bash
# A process that abuses a shim ring of its own (tests/progs/hostile_ring)
# cannot stall or bloat the loader (DESIGN.md invariants 4, 5 and 8):
#  - stall: a ring kept full of records and cubins as fast as the loader
#    reads them costs a bounded share of each tick: the loader keeps
#    ticking, stops on SIGTERM with its profile written, and a well-behaved
#    program profiled beside it (-- COMMAND) is profiled exactly;
#  - bloat: a cubin entry claiming 1.5 GiB is skipped unread (counted), the
#    loader's RSS stays far below it and the CRC helper lives on;
#  - exits without end: a ring whose exit_seq moves at every look is read
#    to answer it once a tick at most, not at every slice between ticks.
# Names without end (rings of new kernel names, by cgroup) are
# e2e_hostile_names.sh's: it needs cgroups, and a skip there skips only it.
source "$(dirname "$0")/lib.sh"

counters() { grep -c "^counters:" "$1" 2>/dev/null || true; }

# Each hostile_ring runs under the loader (-- COMMAND, in a shell: the
# command's own process gets the loader's ring): its ring names that loader
# its owner, so no other loader on the machine takes it over.
BG='"$0" "$@" & wait' # sh -c "$BG" PROG ARGS: PROG as the command's child
# -v prints "reading the shim ring of pid N", then a counters line per tick.
ticks_after_ring() { # ERR PID: counters lines since the ring was first read
	sed -n "/reading the shim ring of pid $2\$/,\$p" "$1" | grep -c "^counters:" || true
}

# --- stall: the loader keeps ticking and answers SIGTERM
"$LOADER" -v --cupti "$B/stub/libcupti.so" -o "$WORK/stall.pb.gz" -- \
	sh -c "$BG" "$PROGS/hostile_ring" -r -c >"$WORK/h.log" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/h.log" "ready" 20 || fail "hostile_ring did not start"
H=$(sed -n 's/^hostile_ring: ready pid=//p' "$WORK/h.log")
PIDS+=($H)
wait_line "$WORK/err" "reading the shim ring of pid $H\$" 30 || { tail -c 2000 "$WORK/err"; fail "its ring was never read"; }
for _ in $(seq 1 1200); do [ "$(ticks_after_ring "$WORK/err" "$H")" -ge 10 ] && break; sleep 0.05; done
n=$(ticks_after_ring "$WORK/err" "$H")
[ "$n" -ge 10 ] || { tail -c 2000 "$WORK/err"; fail "the loader made $n ticks in 60 s beside a ring kept full"; }
kill -TERM "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err"; fail "the loader failed after SIGTERM"; }
[ -s "$WORK/stall.pb.gz" ] || fail "no profile written after SIGTERM"
cut=$(counter "$WORK/err" shim_visits_cut)
scut=$(counter "$WORK/err" settle_cut)
[ "${cut:-0}" -gt 0 ] && [ "${scut:-0}" -gt 0 ] || {
	grep "^counters:" "$WORK/err" | tail -n 1; fail "the bounds were not met (shim_visits_cut=$cut settle_cut=$scut)"; }
ok "a ring kept full: $n ticks, stopped by SIGTERM with its profile (visits cut $cut, settles cut $scut)"
kill -TERM "$H"

# --- one hostile process starves no other: exact launches beside it, its
# exit noticed at once (the hostile ring spins on for two minutes)
LD_LIBRARY_PATH="$B/stub" "$LOADER" -v -o "$WORK/fair.pb.gz" --libcuda "$STUBLIB" \
	--cupti "$B/stub/libcupti.so" -- \
	sh -c "\"$PROGS/hostile_ring\" -r -c -t -s 120 >\"$WORK/h2.log\" & exec \"$PROGS/spin\" -s 2 -i 1000" \
	>"$WORK/spin.log" 2>"$WORK/err2" & L=$!
PIDS+=($L)
wait_line "$WORK/h2.log" "ready" 20 || fail "hostile_ring (beside spin) did not start"
H2=$(sed -n 's/^hostile_ring: ready pid=//p' "$WORK/h2.log")
PIDS+=($H2)
wait_exit "$L" 60 || { tail -c 2000 "$WORK/err2"; fail "loader failed beside a hostile ring"; }
kill -0 "$H2" 2>/dev/null || fail "the hostile ring stopped before the loader did"
kill -TERM "$H2" 2>/dev/null || true
grep -q "reading the shim ring of pid $H2\$" "$WORK/err2" || fail "the hostile ring (pid $H2) was never read"
S=$(sed -n 's/^spin: ready pid=//p' "$WORK/spin.log")
want=$(sed -n 's/^spin: launches=//p' "$WORK/spin.log")
[ -n "$want" ] && [ "$want" -gt 0 ] || fail "spin printed no launch count"
$CHECK "$WORK/fair.pb.gz" totals "$S" >"$WORK/s.totals"
got=$(awk '$2=="spin_kernel" {n += $4} END {print n + 0}' "$WORK/s.totals")
ns=$(awk '$2=="spin_kernel" {n += $3} END {print n + 0}' "$WORK/s.totals")
[ "$got" = "$want" ] || { cat "$WORK/s.totals"; fail "spin: $got launches in the profile, it made $want"; }
[ "$ns" = $((want * 1000)) ] || { cat "$WORK/s.totals"; fail "spin: GPU time $ns != $want x 1000 ns"; }
ok "a program beside a hostile ring (full, and its recording state flipped without end): its exit ended the run, $want launches and their GPU time exact"

# --- bloat: one cubin claiming 1.5 GiB
"$LOADER" -v --cupti "$B/stub/libcupti.so" -o "$WORK/giant.pb.gz" -- \
	sh -c "$BG" "$PROGS/hostile_ring" -g 1536 >"$WORK/g.log" 2>"$WORK/err3" & L=$!
PIDS+=($L)
wait_line "$WORK/g.log" "ready" 20 || fail "hostile_ring -g did not start"
G=$(sed -n 's/^hostile_ring: ready pid=//p' "$WORK/g.log")
PIDS+=($G)
wait_line "$WORK/err3" "modules_settled=1 " 60 || { tail -c 2000 "$WORK/err3"; fail "the giant cubin was never settled"; }
kill -TERM "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err3"; fail "loader failed beside a giant cubin"; }
grep -q "cubin CRCs are zlib" "$WORK/err3" && fail "no CRC helper to test with"
rss=$(grep "^loader:" "$WORK/err3" | tail -n 1 | sed -n 's/.* max_rss_mb=\([0-9]*\).*/\1/p')
over=$(counter "$WORK/err3" cubin_over_limit)
lost=$(counter "$WORK/err3" crc_helper_lost)
[ -n "$rss" ] && [ "$rss" -lt 512 ] || { grep "^loader:" "$WORK/err3" | tail -n 1; fail "the loader's RSS reached ${rss:-?} MB"; }
[ "${lost:-1}" = 0 ] || { grep "^counters:" "$WORK/err3"; fail "the CRC helper was lost ($lost)"; }
[ "${over:-0}" = 1 ] || { grep "^counters:" "$WORK/err3"; fail "the giant cubin was not counted over the limit"; }
ok "a cubin claiming 1.5 GiB: skipped unread, loader at $rss MB, CRC helper alive"

# --- exits with more records than one visit reads: all read at the next ticks
"$LOADER" -v --cupti "$B/stub/libcupti.so" -o "$WORK/exit.pb.gz" -- \
	sh -c "$BG" "$PROGS/hostile_ring" -n 1048576 -x >"$WORK/x.log" 2>"$WORK/err4" ||
	{ tail -c 2000 "$WORK/err4"; fail "loader failed"; }
X=$(sed -n 's/^hostile_ring: ready pid=//p' "$WORK/x.log")
grep -q "reading the shim ring of pid $X\$" "$WORK/err4" || fail "the ring of pid $X was never read"
cut=$(counter "$WORK/err4" shim_visits_cut)
left=$(counter "$WORK/err4" records_left_at_exit)
[ "${cut:-0}" -ge 1 ] || { grep "^counters:" "$WORK/err4" | tail -n 1; fail "one visit read it all (shim_visits_cut=$cut)"; }
[ "${left:-1}" = 0 ] || { grep "^counters:" "$WORK/err4" | tail -n 1; fail "records_left_at_exit=$left"; }
ok "a process that exited with 1,048,576 records: read over $((cut + 1)) visits, none left"

# --- exits without end: answered between ticks once a tick at most
"$LOADER" -v --cupti "$B/stub/libcupti.so" -o "$WORK/exits.pb.gz" -- \
	sh -c "$BG" "$PROGS/hostile_ring" -r -E >"$WORK/e.log" 2>"$WORK/err5" & L=$!
PIDS+=($L)
wait_line "$WORK/e.log" "ready" 20 || fail "hostile_ring -E did not start"
E=$(sed -n 's/^hostile_ring: ready pid=//p' "$WORK/e.log")
PIDS+=($E)
wait_line "$WORK/err5" "reading the shim ring of pid $E\$" 30 || { tail -c 2000 "$WORK/err5"; fail "its ring was never read"; }
for _ in $(seq 1 1200); do [ "$(ticks_after_ring "$WORK/err5" "$E")" -ge 20 ] && break; sleep 0.05; done
kill -TERM "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err5"; fail "the loader failed beside exits without end"; }
kill -TERM "$E" 2>/dev/null || true
answers=$(counter "$WORK/err5" exit_answers)
ticks=$(counters "$WORK/err5")
[ "${answers:-0}" -ge 5 ] || { grep "^counters:" "$WORK/err5" | tail -n 1; fail "its exits were not answered between ticks (exit_answers=$answers)"; }
[ "$answers" -le $((ticks + 1)) ] || { grep "^counters:" "$WORK/err5" | tail -n 1; fail "$answers exit answers in $ticks ticks"; }
ok "a ring whose exit_seq never rests: $answers exits answered between ticks in $ticks ticks"
