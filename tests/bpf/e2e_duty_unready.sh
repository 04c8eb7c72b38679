#!/usr/bin/env bash
# A target whose shim never records (here the stub's cuptiActivityEnable
# takes a minute; a hostile process could simply never switch) cannot choose
# when every tenant's duty windows open: a window waits a second at most for
# it, and after three windows opened without it, it is waited for no more
# (duty_unwaited), so the rest open on time. Counted, never silent: every
# window it spoiled is in duty_unready.
source "$(dirname "$0")/lib.sh"

GPUPROBE_STUB_ENABLE_DELAY_MS=60000 start_stub "$PROGS/spin" -S -i 1000 >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "^spin: ready" 30 || fail "spin never got ready"
kill -USR1 "$S"

# Windows of 0.1 s, a third of a 10 s run: about 30 of them, and each of the
# first three waits its whole second for the shim.
GPUPROBE_TEST_MIN_WINDOW=0.1 "$LOADER" --duty 0.3 --window 0.1 -d 10 --pid "$S" -o "$WORK/p.pb.gz" \
	2>"$WORK/err" & L=$!
PIDS+=($L)
wait_exit "$L" 60 || { tail -20 "$WORK/err"; fail "the loader failed"; }
kill -KILL "$S" # its shim's thread is inside the minute-long switch

ctr=$(grep "^counters: " "$WORK/err" | tail -1)
field() { echo "$ctr" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
[ "$(field duty_unwaited)" = 1 ] || fail "duty_unwaited=$(field duty_unwaited), want 1: $ctr"
# Every window after the third opened on time: only three were spoiled.
[ "$(field duty_unready)" = 3 ] || fail "duty_unready=$(field duty_unready) of $(field duty_windows) windows, want 3: $ctr"
# Enough windows past the third to tell the bound from none (how many open
# depends on their random offsets: 9 to 13 seen); with no bound, all spoiled.
[ "$(field duty_windows)" -ge 5 ] || fail "only $(field duty_windows) windows opened: $ctr"
ok "a shim that never records spoiled 3 of $(field duty_windows) windows, then was waited for no more"
