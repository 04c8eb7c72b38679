#!/usr/bin/env bash
# A process whose maps name a libcuda.so.1 on a FUSE file system it serves
# and stops answering (tests/progs/hostile_fuse) cannot hold the loader: the
# walk to that file, which blocks in the kernel for as long as the daemon
# wants, runs in a worker process the loader waits for at most 250 ms; the loader
# keeps ticking, counts the call it gave up (io_timeouts) and asks that
# process nothing more that could block, and SIGTERM ends the run with its
# profile written.
source "$(dirname "$0")/lib.sh"

[ -c /dev/fuse ] || skip "no /dev/fuse"
counters() { grep -c "^counters:" "$1" 2>/dev/null || true; }
field() { # FILE NAME: NAME's value on the last counters line
	grep "^counters:" "$1" | tail -n 1 | sed -n "s/.* $2=\([0-9]*\).*/\1/p"
}

"$PROGS/hostile_fuse" "$WORK/fuse" "$STUBLIB" >"$WORK/h.log" 2>&1 & H=$!
PIDS+=($H)
wait_line "$WORK/h.log" "ready" 10 || { cat "$WORK/h.log"; fail "hostile_fuse did not start"; }
grep -q " $WORK/fuse/libcuda.so.1\$" "/proc/$H/maps" || fail "hostile_fuse maps no libcuda from FUSE"

# --pid opens the maps' libcuda files at start, then every 2 s.
"$LOADER" --pid "$H" -v -o "$WORK/fuse.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
for _ in $(seq 1 1200); do [ "$(counters "$WORK/err")" -ge 30 ] && break; sleep 0.05; done
n=$(counters "$WORK/err")
[ "$n" -ge 30 ] || { tail -c 2000 "$WORK/err"; fail "the loader made $n ticks in 60 s beside a FUSE file that never answers"; }
t=$(field "$WORK/err" io_timeouts)
[ "${t:-0}" -ge 1 ] || { grep "^counters:" "$WORK/err" | tail -n 1; fail "no call was given up (io_timeouts=$t)"; }
stuck=$(field "$WORK/err" io_stuck)
[ "${stuck:-9}" -le 1 ] || fail "$stuck workers stuck: the process was asked again"
kill -TERM "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err"; fail "the loader failed after SIGTERM"; }
[ -s "$WORK/fuse.pb.gz" ] || fail "no profile written"
ok "a FUSE file that never answers: $n ticks, $t call given up ($stuck worker stuck), SIGTERM ends the run with its profile"

# A FUSE daemon that answers all but reads: the file is found and opened,
# and only a read of it would wait. The loader opens no file on a FUSE
# mount (its reads of libcuda's ELF are not bounded calls): it refuses the
# file, says so once, counts it, and ticks on.
kill -TERM "$H"
wait_exit "$H" 30 || fail "hostile_fuse did not end"
"$PROGS/hostile_fuse" "$WORK/fuse2" "$STUBLIB" reads >"$WORK/h2.log" 2>&1 & H=$!
PIDS+=($H)
wait_line "$WORK/h2.log" "ready" 10 || { cat "$WORK/h2.log"; fail "hostile_fuse (reads) did not start"; }
"$LOADER" --pid "$H" -v -o "$WORK/fuse2.pb.gz" 2>"$WORK/err2" & L=$!
PIDS+=($L)
for _ in $(seq 1 1200); do [ "$(counters "$WORK/err2")" -ge 30 ] && break; sleep 0.05; done
n=$(counters "$WORK/err2")
[ "$n" -ge 30 ] || { tail -c 2000 "$WORK/err2"; fail "the loader made $n ticks in 60 s beside a FUSE file whose reads never end"; }
grep -q "maps .*/fuse2/libcuda.so.1 on a FUSE file system: not opened" "$WORK/err2" ||
	fail "the FUSE file was not said refused: $(grep -v '^libbpf\|^counters\|^loader' "$WORK/err2" | head -5)"
r=$(field "$WORK/err2" libcuda_refused)
[ "${r:-0}" -ge 1 ] || fail "libcuda_refused=$r"
kill -TERM "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err2"; fail "the loader failed after SIGTERM"; }
ok "a FUSE file whose reads never end: refused unread (libcuda_refused=$r), $n ticks"
