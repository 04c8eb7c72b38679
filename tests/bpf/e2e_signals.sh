#!/usr/bin/env bash
# SIGINT and SIGTERM stop a loader mid-run, in --pid and -- COMMAND mode: it
# writes a valid profile of what it collected so far (some launches, fewer
# than the program's total), detaches and exits 0; the program runs on, to
# its own normal end, on time. The four cases run side by side.
#
# Each program (spin -S -s 0) waits for SIGUSR1 before it launches: it gets
# it once its loader reads its ring; the loader gets its signal once it has
# joined a launch. Once the loader is gone, the program is seen launching on
# (spin prints its count on SIGUSR2: a count past the one after the loader's
# exit), and only then told to end (SIGTERM). Every step waits for what it
# needs, not for a time.
source "$(dirname "$0")/lib.sh"

CASES="pid-INT pid-TERM cmd-INT cmd-TERM"
REAP="python3 $ROOT/tests/bpf/subreaper.py"
# A subreaper runs each program and notes how and when (wall clock) it
# ended, even after the loader that started it (-- COMMAND) is gone.
reaped() { # CASE PID -> "STATUS TIME"
	grep "^$2 " "$WORK/$1.reaped" | cut -d' ' -f2- | grep . || fail "$1: pid $2 never reaped"
}
ready_pid() { sed -n 's/^spin: ready pid=//p' "$WORK/$1.log"; }
last_progress() { sed -n 's/^spin: progress launches=//p' "$WORK/$1.log" | tail -1; }

# --pid: the program under a subreaper, then the loader (-v: it says when it
# reads the ring, its counters each tick, and each pid that exits).
for sig in INT TERM; do
	start_stub $REAP "$WORK/pid-$sig.reaped" 0 0 "$PROGS/spin" -S -s 0 -i 1000 >"$WORK/pid-$sig.log"
done
for sig in INT TERM; do
	wait_file "$WORK/pid-$sig.log" 30
	"$LOADER" -v --pid "$(ready_pid "pid-$sig")" -o "$WORK/pid-$sig.pb.gz" 2>"$WORK/pid-$sig.err" &
	PIDS+=($!); echo $! >"$WORK/pid-$sig.loader"
done
# -- COMMAND: the loader under a subreaper.
for sig in INT TERM; do
	LD_LIBRARY_PATH="$B/stub" $REAP "$WORK/cmd-$sig.reaped" 0 0 \
		"$LOADER" -v -o "$WORK/cmd-$sig.pb.gz" --libcuda "$STUBLIB" -- "$PROGS/spin" -S -s 0 -i 1000 \
		>"$WORK/cmd-$sig.log" 2>"$WORK/cmd-$sig.err" &
	PIDS+=($!)
	wait_file "$WORK/cmd-$sig.reaped.pid" 30
	cp "$WORK/cmd-$sig.reaped.pid" "$WORK/cmd-$sig.loader"
done

# Launching on: a progress count above $2 (asked for again and again).
launched_past() { # CASE COUNT PID
	kill -USR2 "$3" 2>/dev/null || return 1
	local n
	n=$(last_progress "$1")
	[ -n "$n" ] && [ "$n" -gt "$2" ]
}
drive() { # CASE: go, the loader's signal once it joined, then the program's end
	local c=$1 p l c1
	wait_line "$WORK/$c.log" "^spin: ready" 60 || { echo "no ready line" >"$WORK/$c.driver"; return; }
	p=$(ready_pid "$c") l=$(cat "$WORK/$c.loader")
	wait_line "$WORK/$c.err" "reading the shim ring of pid $p\$" 60 || { echo "loader never read the ring" >"$WORK/$c.driver"; return; }
	kill -USR1 "$p"
	wait_line "$WORK/$c.err" "^counters: .* joined=[1-9]" 60 || { echo "the loader joined no launch" >"$WORK/$c.driver"; return; }
	kill -${c#*-} "$l" || { echo "the loader ended before its signal" >"$WORK/$c.driver"; return; }
	wait_until 60 exited "$l" || { echo "the loader did not stop within 60 s of its signal" >"$WORK/$c.driver"; return; }
	exited "$p" && { echo "the program ended with its loader" >"$WORK/$c.driver"; return; }
	# Its count now, then a greater one: it launched after the loader was gone.
	kill -USR2 "$p"
	wait_line "$WORK/$c.log" "^spin: progress" 60 || { echo "the program gave no progress" >"$WORK/$c.driver"; return; }
	c1=$(last_progress "$c")
	wait_until 60 launched_past "$c" "$c1" "$p" || { echo "the program stopped launching after its loader left" >"$WORK/$c.driver"; return; }
	echo ok >"$WORK/$c.driver"
	date +%s.%N >"$WORK/$c.term"
	kill -TERM "$p"
	# When the program ended (a zombie, or gone).
	wait_until 60 exited "$p"
	date +%s.%N >"$WORK/$c.ended"
}
for c in $CASES; do drive $c & done
wait_drivers() { for c in $CASES; do wait_line "$WORK/$c.driver" . 300 || fail "$c: driver stuck"; done; }
wait_ended() { for c in $CASES; do wait_line "$WORK/$c.ended" . 120 || fail "$c: the program never ended"; done; }
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
	# The program went on to its normal end (SIGTERM here), on time: a bound
	# that only a program held by its departed loader fails.
	read -r st _ < <(reaped "$c" "$p")
	[ "$st" = 0 ] || fail "$c: the program exited $st after its loader was signalled"
	t=$(cat "$WORK/$c.ended")
	awk -v e="$t" -v g="$(cat "$WORK/$c.term")" 'BEGIN {exit !(e - g < 10)}' ||
		fail "$c: the program took $(awk -v e="$t" -v g="$(cat "$WORK/$c.term")" 'BEGIN {print e - g}') s to end after SIGTERM"
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
	wait_exit "$(cat "$WORK/pid-$sig.loader")" 60 && rc=0 || rc=$?
	p=$(ready_pid "pid-$sig")
	wait_line "$WORK/pid-$sig.reaped" "^$p " 60 || fail "pid-$sig: pid $p never reaped"
	check_case "pid-$sig" $rc
done
for sig in INT TERM; do
	wait_line "$WORK/cmd-$sig.reaped" "^$(ready_pid "cmd-$sig") " 60 || fail "cmd-$sig: the program never reaped"
	wait_line "$WORK/cmd-$sig.reaped" "^$(cat "$WORK/cmd-$sig.loader") " 60 || fail "cmd-$sig: the loader never reaped"
	read -r rc _ < <(reaped "cmd-$sig" "$(cat "$WORK/cmd-$sig.loader")")
	check_case "cmd-$sig" $rc
done
ls "$WORK" | grep "\.tmp\." && fail "temporary files left behind"
ok "no temporary files left"
