#!/usr/bin/env bash
# --pid: a program started before the loader is covered; a second process is
# excluded; the loader stops when the program exits mid-run.
source "$(dirname "$0")/lib.sh"

# A runs (CUDA up, module loaded) but launches only on SIGUSR1, sent once the
# loader reads its ring: then it launches for 3 s, however late the loader came.
start_stub "$PROGS/spin" -S -s 3 -i 2000 -g 2 >"$WORK/a.log"; A=${PIDS[-1]}
start_stub "$PROGS/spin" -s 3 -i 2000 -g 5 >"$WORK/b.log"; Bp=${PIDS[-1]}
wait_file "$WORK/a.log" 30
wait_file "$WORK/b.log" 30
"$LOADER" -v -o "$WORK/pid.pb.gz" --pid "$A" -d 300 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "reading the shim ring of pid $A" 60 || { cat "$WORK/err"; fail "the loader never read the ring"; }
kill -USR1 "$A"
wait_exit "$L" 120 || { cat "$WORK/err"; fail "loader failed"; }
# The loader stopped when A exited (3 s after its go), well before -d 300.
kill -0 "$A" 2>/dev/null && fail "loader returned while pid $A still runs"
wait "$A" || fail "spin A failed"
pids=$($CHECK "$WORK/pid.pb.gz" pids)
echo "$pids" | grep -q "^$A spin " || fail "pid $A missing: $pids"
echo "$pids" | grep -q "^$Bp " && fail "pid $Bp was not excluded: $pids"
$CHECK "$WORK/pid.pb.gz" totals >"$WORK/totals"
# Only launches made before the loader attached may stay unjoined, and say so;
# and the one call spin's thread may have been in at the attach ("at attach").
grep "^\[unattributed" "$WORK/totals" | grep -v "launched before attach\|launched at attach" &&
	{ cat "$WORK/totals" "$WORK/err"; fail "unjoined samples"; }
at=$(grep "^counters:" "$WORK/err" | tail -1 | sed -n 's/.* at_attach=\([0-9]*\) .*/\1/p')
[ -n "$at" ] && [ "$at" -le 1 ] || fail "at_attach=$at: spin launches from one thread, at most one call is at the attach"
grep -q "^? " "$WORK/totals" && { cat "$WORK/totals"; fail "samples without the launching site"; }
n=$(awk '$2=="spin_kernel" && $1=="spin_site"{print $4}' "$WORK/totals")
[ "${n:-0}" -gt 100 ] || fail "too few spin_kernel launches joined: ${n:-0}"
# spin_kernel runs grid(2)*1000 ns: every joined launch carries exactly that
ns=$(awk '$2=="spin_kernel" && $1=="spin_site"{print $3}' "$WORK/totals")
[ "$ns" = $((n * 2000)) ] || fail "spin_kernel GPU time $ns != $n x 2000"
grep -q "before_attach=" "$WORK/err" || fail "no counters line"
ok "pid $A profiled from a later start ($n launches), pid $Bp excluded, stop on exit"
wait "$Bp" || fail "spin B failed"

# A pid that surely names no process: one that ended and was reaped just now.
true & gone=$!
wait "$gone"
set +e
"$LOADER" --pid "$gone" -o "$WORK/x.pb.gz" 2>"$WORK/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "no such process: $gone" "$WORK/err" || fail "bad pid: rc=$rc $(cat "$WORK/err")"
ok "a pid that does not exist is one clear error"
