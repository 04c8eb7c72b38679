#!/usr/bin/env bash
# Recording paused and resumed under a reader, as a duty cycle's windows do
# (shim/gp_abi.h: record_pause): 100 windows, each opened and closed by the
# shim's own thread, never on an application thread; the program's fds,
# mappings and memory stay flat; every launch made while the shim recorded
# is joined exactly, every other one is labelled, none is lost.
source "$(dirname "$0")/lib.sh"

PEEK="python3 $ROOT/tests/bpf/shm_peek.py"
WINDOWS=100
recording() { $PEEK "$S" | sed -n 's/.* recording=\([0-9]\).*/\1/p'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$S/status"; }
# Waits until the shim's recording flag reads $1 (10 s only fails a stuck shim).
wait_recording() { wait_until 10 bash -c "[ \"\$($PEEK $S | sed -n 's/.* recording=\([0-9]\).*/\1/p')\" = $1 ]"; }

GPUPROBE_STUB_TOGGLE_LOG="$WORK/toggles" start_stub "$PROGS/spin" -S -i 500 >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "^spin: ready" 30 || fail "spin never got ready"
"$LOADER" -v --pid "$S" -o "$WORK/w.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "reading the shim ring of pid $S\$" 60 || { cat "$WORK/err"; fail "the loader never read the ring"; }
kill -USR1 "$S"
wait_recording 1 || fail "no recording under a reader: $($PEEK $S)"
fds=$(ls "/proc/$S/fd" | wc -l) maps=$(wc -l <"/proc/$S/maps") rss=$(rss_kb)
$PEEK "$S" windows $WINDOWS || fail "the shim did not follow its reader's pauses: $($PEEK $S)"
fds2=$(ls "/proc/$S/fd" | wc -l) maps2=$(wc -l <"/proc/$S/maps") rss2=$(rss_kb)
[ "$fds2" = "$fds" ] || fail "the program's fds went from $fds to $fds2 over $WINDOWS windows"
[ "$maps2" = "$maps" ] || fail "the program's mappings went from $maps to $maps2 over $WINDOWS windows"
[ $((rss2 - rss)) -lt 8192 ] || fail "the program's RSS grew from $rss to $rss2 kB over $WINDOWS windows"
ok "$WINDOWS windows: fds $fds, mappings $maps, RSS $rss -> $rss2 kB"

kill -TERM "$S" # the loader ends with it, once it has read its last records
wait_exit "$L" 60 || { cat "$WORK/err"; fail "the loader failed"; }
wait_exit "$S" 30 || fail "spin failed"
made=$(sed -n 's/^spin: launches=//p' "$WORK/spin.log")
grep "^counters: " "$WORK/err" | tail -1 >"$WORK/ctr"
# One switch on at the reader's first visit, then one off and one on per window
# (the shim started off: no reader then); more only if the loader stalled
# for seconds on a loaded machine (its heartbeat gone stale), never fewer.
for c in ring_dropped=0 launches_without_record=0 unattributed=0 api_without_launch=0; do
	grep -q " $c " "$WORK/ctr" || { cat "$WORK/ctr"; fail "counters: want $c"; }
done
for c in recording_on recording_off; do
	v=$(sed -n "s/.* $c=\([0-9]*\) .*/\1/p" "$WORK/ctr")
	[ "${v:-0}" -ge $((WINDOWS + 1)) ] || { cat "$WORK/ctr"; fail "counters: $c=$v, want $((WINDOWS + 1)) at least"; }
done
$CHECK "$WORK/w.pb.gz" totals >"$WORK/totals"
n=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $4}' "$WORK/totals")
ns=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $3}' "$WORK/totals")
labelled=$(grep "^spin_site \[no GPU record: before the shim recorded\] 0 " "$WORK/totals" | awk '{n += $NF} END {print n + 0}')
[ "${n:-0}" -gt 0 ] && [ "$ns" = $((n * 1000)) ] || { cat "$WORK/totals"; fail "joined $n launches, GPU time $ns ns (want n x 1000)"; }
[ $((n + labelled)) = "$made" ] || { cat "$WORK/totals"; fail "$n joined + $labelled labelled != the $made launches spin made"; }
grep -v "^spin_site spin_kernel \|^spin_site \[no GPU record: before the shim recorded\] 0 " "$WORK/totals" &&
	fail "samples other than spin_kernel's and the labelled launches (above)"
awk '$3 == "kind" && $2 == 1' "$WORK/toggles" | grep . && fail "activity switched on an application thread (above)"
awk -v s="$S" '$3 == "kind" && $1 == s' "$WORK/toggles" | grep . && fail "the main thread switched activity (above)"
[ "$(grep -c "^[0-9]* 0 kind 10 on$" "$WORK/toggles")" -ge $((WINDOWS + 1)) ] ||
	{ tail "$WORK/toggles"; fail "kernel activity not switched on $((WINDOWS + 1)) times by the shim's thread"; }
ok "every one of spin's $made launches: $n joined exactly, $labelled made between windows labelled; every switch on the shim's thread"
