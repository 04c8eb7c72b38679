#!/usr/bin/env bash
# A process whose maps name a libcuda.so.1 that is, by path in its root, a
# symlink to a pty it holds (tests/progs/hostile_pty) cannot signal the
# loader: the loader, a session leader without a terminal (setsid, as a
# daemon is), opens only the regular file the maps line names, so the pty
# never becomes its controlling terminal, and the pty's hangup sends it
# nothing; it still attaches to the file really mapped. SIGHUP itself ends
# a run as SIGTERM does: exit 0, profile written.
source "$(dirname "$0")/lib.sh"

command -v setsid >/dev/null || skip "no setsid"
counters() { grep -c "^counters:" "$1" 2>/dev/null || true; }
wait_ticks() { # ERR N SECONDS: at least N counters lines
	for _ in $(seq 1 $(( $3 * 20 ))); do [ "$(counters "$1")" -ge "$2" ] && return 0; sleep 0.05; done
	return 1
}
tty_nr() { awk '{print $7}' "/proc/$1/stat" 2>/dev/null || echo gone; }

mkdir -p "$WORK/h"
"$PROGS/hostile_pty" "$WORK/h" "$STUBLIB" >"$WORK/h.log" 2>&1 & H=$!
PIDS+=($H)
wait_line "$WORK/h.log" "ready" 10 || { cat "$WORK/h.log"; fail "hostile_pty did not start"; }
grep -q "$WORK/h/lib/libcuda.so.1" "/proc/$H/maps" || fail "hostile_pty maps no libcuda copy"

# bash without job control starts it in our process group: setsid makes the
# loader itself a session leader (no fork), so $! is the loader.
setsid "$LOADER" --pid "$H" -v -o "$WORK/pty.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_ticks "$WORK/err" 2 30 || { tail -c 2000 "$WORK/err"; fail "the loader did not start ticking"; }
[ "$(awk '{print $6}' "/proc/$L/stat")" = "$L" ] || fail "the loader is not a session leader"
[ "$(tty_nr "$L")" = 0 ] || fail "the loader took a controlling terminal: tty_nr $(tty_nr "$L")"
grep -q "attached to $WORK/h/lib/libcuda.so.1 of pid $H" "$WORK/err" ||
	{ grep "gpuprobe-bpf:" "$WORK/err"; fail "the libcuda really mapped was not attached"; }
ok "the loader opened the file mapped, not the pty its path names"

kill -USR1 "$H"
wait_line "$WORK/h.log" "hung up" 10 || fail "hostile_pty did not hang up"
n=$(counters "$WORK/err")
wait_ticks "$WORK/err" $((n + 3)) 30 || {
	st=$(awk '{print $3}' "/proc/$L/stat" 2>/dev/null || echo gone)
	fail "the loader stopped ticking after the pty's hangup (state $st)"; }
ok "the pty's hangup did not reach the loader"

kill -HUP "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err"; fail "SIGHUP: the loader did not exit 0"; }
[ -s "$WORK/pty.pb.gz" ] || fail "SIGHUP: no profile written"
grep -q "wrote $WORK/pty.pb.gz" "$WORK/err" || fail "SIGHUP: the loader did not say it wrote the profile"
ok "SIGHUP ends the run with the profile written, exit 0"
