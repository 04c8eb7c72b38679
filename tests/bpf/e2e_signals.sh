#!/usr/bin/env bash
# SIGINT and SIGTERM stop a loader mid-run, in --pid and -- COMMAND mode: it
# writes a valid profile of what it collected so far (some launches, fewer
# than the program's total), detaches and exits 0; the program runs on, to
# its own normal end, on time. The four cases run side by side.
#
# Each program (spin -S) waits for SIGUSR1 before it launches: it gets it once
# its loader reads its ring, and the loader gets its signal 0.5 s into the
# program's SECS, so the program surely outlives the loader's run.
source "$(dirname "$0")/lib.sh"

SECS=2
CASES="pid-INT pid-TERM cmd-INT cmd-TERM"
REAP="python3 $ROOT/tests/bpf/subreaper.py"
# A subreaper runs each program and notes how and when (wall clock) it
# ended, even after the loader that started it (-- COMMAND) is gone.
reaped() { # CASE PID -> "STATUS TIME"
	grep "^$2 " "$WORK/$1.reaped" | cut -d' ' -f2- | grep . || fail "$1: pid $2 never reaped"
}
ready_pid() { sed -n 's/^spin: ready pid=//p' "$WORK/$1.log"; }

# --pid: the program under a subreaper, then the loader (-v: it says when it
# reads the ring, and each pid that exits).
for sig in INT TERM; do
	start_stub $REAP "$WORK/pid-$sig.reaped" 0 0 "$PROGS/spin" -S -s $SECS -i 1000 >"$WORK/pid-$sig.log"
done
for sig in INT TERM; do
	wait_file "$WORK/pid-$sig.log" 5
	"$LOADER" -v --pid "$(ready_pid "pid-$sig")" -o "$WORK/pid-$sig.pb.gz" 2>"$WORK/pid-$sig.err" &
	PIDS+=($!); echo $! >"$WORK/pid-$sig.loader"
done
# -- COMMAND: the loader under a subreaper.
for sig in INT TERM; do
	LD_LIBRARY_PATH="$B/stub" $REAP "$WORK/cmd-$sig.reaped" 0 0 \
		"$LOADER" -v -o "$WORK/cmd-$sig.pb.gz" --libcuda "$STUBLIB" -- "$PROGS/spin" -S -s $SECS -i 1000 \
		>"$WORK/cmd-$sig.log" 2>"$WORK/cmd-$sig.err" &
	PIDS+=($!)
	wait_file "$WORK/cmd-$sig.reaped.pid" 5
	cp "$WORK/cmd-$sig.reaped.pid" "$WORK/cmd-$sig.loader"
done

drive() { # CASE: go, then the loader's signal; notes the times
	local c=$1 p
	wait_line "$WORK/$c.log" "^spin: ready" 20 || { echo "no ready line" >"$WORK/$c.driver"; return; }
	p=$(ready_pid "$c")
	wait_line "$WORK/$c.err" "reading the shim ring of pid $p\$" 20 || { echo "loader never read the ring" >"$WORK/$c.driver"; return; }
	date +%s.%N >"$WORK/$c.go"
	kill -USR1 "$p"
	sleep 0.5
	kill -${c#*-} "$(cat "$WORK/$c.loader")" || { echo "the loader ended before its signal" >"$WORK/$c.driver"; return; }
	echo ok >"$WORK/$c.driver"
	# When the program ended (a zombie, or gone): its reaping waits for the
	# loader that started it (-- COMMAND), which may still be detaching.
	while st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) && [ "$st" != Z ]; do sleep 0.02; done
	date +%s.%N >"$WORK/$c.ended"
}
for c in $CASES; do drive $c & done
wait_drivers() { for c in $CASES; do wait_line "$WORK/$c.driver" . 30 || fail "$c: driver stuck"; done; }
wait_ended() { for c in $CASES; do wait_line "$WORK/$c.ended" . 30 || fail "$c: the program never ended"; done; }
wait_drivers
for c in $CASES; do
	[ "$(cat "$WORK/$c.driver")" = ok ] || { grep -v "^libbpf\|^counters" "$WORK/$c.err"; fail "$c: $(cat "$WORK/$c.driver")"; }
done

check_case() { # CASE LOADER_STATUS
	local c=$1 p total n st t
	p=$(ready_pid "$c")
	[ "$2" = 0 ] || { grep -v "^libbpf\|^counters" "$WORK/$c.err"; fail "$c: the loader exited $2"; }
	# It stopped on its signal, not on the program's exit.
	grep -q "pid $p exited" "$WORK/$c.err" && fail "$c: the loader ran until the program's exit"
	[ -s "$WORK/$c.pb.gz" ] || { grep -v "^libbpf\|^counters" "$WORK/$c.err"; fail "$c: no profile written"; }
	grep -q "wrote $WORK/$c.pb.gz" "$WORK/$c.err" || fail "$c: no 'wrote' line"
	# The program went on to its normal end, on time.
	read -r st _ < <(reaped "$c" "$p")
	[ "$st" = 0 ] || fail "$c: the program exited $st after its loader was signalled"
	t=$(cat "$WORK/$c.ended")
	awk -v e="$t" -v g="$(cat "$WORK/$c.go")" -v s=$SECS 'BEGIN {exit !(e - g < s + 1)}' ||
		fail "$c: the program ran $(awk -v e="$t" -v g="$(cat "$WORK/$c.go")" 'BEGIN {print e - g}') s, asked for $SECS s"
	total=$(sed -n 's/^spin: launches=//p' "$WORK/$c.log")
	[ -n "$total" ] || fail "$c: the program did not finish its work"
	# What was collected before the signal, and only that.
	$CHECK "$WORK/$c.pb.gz" totals >"$WORK/$c.totals" || fail "$c: profile unreadable by go tool pprof"
	n=$(awk '$2=="spin_kernel"{n += $4} END {print n + 0}' "$WORK/$c.totals")
	[ "$n" -gt 0 ] || { cat "$WORK/$c.totals"; grep "^counters" "$WORK/$c.err" | tail -1; fail "$c: nothing collected before the signal"; }
	[ "$n" -lt "$total" ] || fail "$c: $n launches profiled, the program made $total: not stopped mid-run"
	ok "$c: the loader stopped on SIG${c#*-}, exit 0, $n of $total launches profiled; the program exited 0 on time"
}
wait_ended
for sig in INT TERM; do
	wait_exit "$(cat "$WORK/pid-$sig.loader")" 10 && rc=0 || rc=$?
	p=$(ready_pid "pid-$sig")
	for _ in $(seq 1 100); do grep -q "^$p " "$WORK/pid-$sig.reaped" 2>/dev/null && break; sleep 0.05; done
	check_case "pid-$sig" $rc
done
for sig in INT TERM; do
	for _ in $(seq 1 200); do [ -s "$WORK/cmd-$sig.reaped" ] && break; sleep 0.05; done
	read -r rc _ < <(reaped "cmd-$sig" "$(cat "$WORK/cmd-$sig.loader")")
	check_case "cmd-$sig" $rc
done
ls "$WORK" | grep "\.tmp\." && fail "temporary files left behind"
ok "no temporary files left"
