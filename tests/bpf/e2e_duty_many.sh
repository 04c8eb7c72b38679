#!/usr/bin/env bash
# Well over a hundred duty windows, short ones (the tests' hook lowers the
# least window to 0.1 s): the loader's fds, mappings and memory stay flat
# from about the 100th window to the 220th (a probe link, a ring mapping or a
# window's bookkeeping kept per window would grow them), nothing is lost,
# and every launch joined has its exact GPU time. The loader's memory grows
# with its first 50,000 or so launches (its tables reach their working
# size): spin launches every 100 us, 5,000 a second inside windows, so that
# is done by the 50th window; no faster, so that the 2 MiB BPF ring holds
# more than a second of launches on a loaded 2-core machine. Each sample
# is taken between two windows, read from spin's ring
# (tests/bpf/gap_sample.py). The launch callbacks are switched on once for
# all the windows. The BPF ring is 2 MiB, written round many
# times before the first sample: its pages count in the loader's RSS once
# it has read them, and a 16 MiB one was still on its first round at 22 s
# in a slow run (RSS +2.3 MiB by 38 s, a fresh-clone check).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/duty_lib.sh"

FIRST=22 MID=30 LATE=38 LAST=46 # seconds in: about the 100th, 140th, 180th and 220th window
GPUPROBE_STUB_TOGGLE_LOG="$WORK/toggles" start_stub "$PROGS/spin" -S -i 100 >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "^spin: ready" 30 || fail "spin never got ready"
kill -USR1 "$S"

# 60 windows of 0.1 s in each 12 s profile (half the time), at random
# offsets; about 260 in four and a third profiles (a window may straddle two).
mkdir "$WORK/p"
GPUPROBE_TEST_MIN_WINDOW=0.1 "$LOADER" --tick-ms 20 --ringbuf-mb 2 --duty 0.5 --window 0.1 --interval 12 -d 52 \
	--pid "$S" -o "$WORK/p/gp.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
# Samples taken between windows (tests/bpf/gap_sample.py), each when told.
mkfifo "$WORK/go0" "$WORK/go1" "$WORK/go2" "$WORK/go3"
python3 "$ROOT/tests/bpf/gap_sample.py" "$S" "$L" "$WORK/s0" <"$WORK/go0" & G0=$!
python3 "$ROOT/tests/bpf/gap_sample.py" "$S" "$L" "$WORK/s1" <"$WORK/go1" & G1=$!
python3 "$ROOT/tests/bpf/gap_sample.py" "$S" "$L" "$WORK/s2" <"$WORK/go2" & G2=$!
python3 "$ROOT/tests/bpf/gap_sample.py" "$S" "$L" "$WORK/s3" <"$WORK/go3" & G3=$!
PIDS+=($G0 $G1 $G2 $G3)
exec 6>"$WORK/go0" 7>"$WORK/go1" 8>"$WORK/go2" 9>"$WORK/go3"
# Where a sample is taken is all the clock decides here; what is checked is
# the two samples' difference, and that well over 100 windows came.
start=$(now_ms)
past() { [ $(($(now_ms) - start)) -ge $(($1 * 1000)) ]; } # SECONDS since the loader started
wait_until 60 past $FIRST
echo go >&6
wait_exit "$G0" 60 || fail "no first sample between two windows"
wait_until 60 past $MID
echo go >&7
wait_exit "$G1" 60 || fail "no second sample between two windows"
wait_until 60 past $LATE
echo go >&8
wait_exit "$G2" 60 || fail "no third sample between two windows"
wait_until 60 past $LAST
echo go >&9
wait_exit "$G3" 60 || fail "no fourth sample between two windows"
read_sample() { awk -v k="$2" '$1 == k {print $2}' "$WORK/s$1"; }
fds0=$(read_sample 0 fds) maps0=$(read_sample 0 maps) rss0=$(read_sample 0 rss_kb)
rssm=$(read_sample 1 rss_kb) rssl=$(read_sample 2 rss_kb)
fds1=$(read_sample 3 fds) maps1=$(read_sample 3 maps) rss1=$(read_sample 3 rss_kb)
wait_exit "$L" 60 || { tail -20 "$WORK/err"; fail "the loader failed"; }
kill -TERM "$S"
wait_exit "$S" 30 || fail "spin failed"

[ "$fds1" = "$fds0" ] || { diff <(grep "^fd " "$WORK/s0") <(grep "^fd " "$WORK/s2"); fail "the loader's fds went from $fds0 to $fds1 between $FIRST s and $LAST s"; }
[ "$maps1" = "$maps0" ] || fail "the loader's mappings went from $maps0 to $maps1 between $FIRST s and $LAST s"
# Memory that grows at every window grows in each of the three spans. The
# join's tables, bounded by its 10 s horizon, grow (double) when the
# launches of the last 10 s reach a new most, which the windows' random
# offsets can make late in the run, and the pages of the doubled table are
# touched as it fills: in one span, or two that follow each other (seen:
# the heap +3 MiB between 22 and 30 s, then +0.7 MiB in the same heap by 38
# s, in 1 of 3 runs; the heap +1 MiB, u64map__put under corr_add).
if [ $((rssm - rss0)) -gt 512 ] && [ $((rssl - rssm)) -gt 512 ] && [ $((rss1 - rssl)) -gt 512 ]; then
	diff <(grep "^rss " "$WORK/s0") <(grep "^rss " "$WORK/s3")
	fail "the loader's RSS grew from $rss0 to $rssm to $rssl to $rss1 KiB at $FIRST, $MID, $LATE and $LAST s (mappings above)"
fi

duty_counters "$WORK/err" "$WORK/ctr" ring_dropped=0 ringbuf_full=0 launches_without_record=0 unattributed=0 \
	api_without_launch=0 duty_probe_errors=0 cupti_errors=0
nwin=$(sed -n 's/.* duty_windows=\([0-9]*\) .*/\1/p' "$WORK/ctr")
[ "$nwin" -ge 150 ] || fail "$nwin windows opened, fewer than 150"
# Between windows the probes send nothing. The launches made while a
# window's probes are being attached (before it opens) or detached (after
# it closed) are seen outside: a few in all, more on a loaded machine,
# where probes left in place would send half of all launches.
outside=$(sed -n 's/.* launches_outside=\([0-9]*\) .*/\1/p' "$WORK/ctr")
events=$(sed -n 's/.* launch_events=\([0-9]*\) .*/\1/p' "$WORK/ctr")
[ $((outside * 20)) -le "$events" ] || fail "launches_outside=$outside of $events launch events: the probes ran between the windows"
for p in "$WORK"/p/*.pb.gz; do $CHECK "$p" totals; done |
	awk '$1 == "spin_site" && $2 == "spin_kernel" { ns += $3; n += $4; next } { print; bad = 1 }
		END { print ns, n; exit bad }' >"$WORK/totals" || { cat "$WORK/totals"; fail "samples other than spin_kernel's (above)"; }
read -r ns n <"$WORK/totals"
[ "${n:-0}" -ge 1000 ] && [ "$ns" = $((n * 1000)) ] || fail "joined $n launches, GPU time $ns ns (want n x 1000)"
awk '$3 == "kind" && $2 == 1' "$WORK/toggles" | grep . && fail "activity switched on an application thread (above)"
# The launch callbacks are not switched with the windows: on once, at the
# attach, and never off, even if the loader's heartbeat went stale on a
# loaded machine (switching them left a thread's correlation id stuck, for
# good: at each window on the H200, at a third attach on an H100).
cbs=$(awk '$3 == "cb_driver" && $5 == "on" { n[$4]++ } END { for (k in n) if (n[k] > m) m = n[k]; print m + 0 }' "$WORK/toggles")
[ "$cbs" = 1 ] || fail "the launch callbacks were switched on $cbs times over $nwin windows (want once)"
grep " cb_[a-z]* [0-9]* off$" "$WORK/toggles" | head -3 | grep . && fail "the launch callbacks were switched off (above)"
# spin's launches have one stack: its stack-cache key, learnt while the shim
# recorded, serves every window; none is forgotten at the switches between.
grep "^loader: " "$WORK/err" | tail -1 >"$WORK/loader"
installs=$(sed -n 's/.* cache_installs=\([0-9]*\) .*/\1/p' "$WORK/loader")
forgotten=$(sed -n 's/.* cache_forgotten=\([0-9]*\) .*/\1/p' "$WORK/loader")
[ -n "$installs" ] && [ "$installs" -le 2 ] && [ "$forgotten" = 0 ] ||
	fail "stack-cache keys learnt again over $nwin windows: cache_installs=$installs cache_forgotten=$forgotten"
ok "$nwin windows of 0.1 s: fds $fds0, mappings $maps0, RSS $rss0 -> $rssm -> $rssl -> $rss1 KiB at $FIRST, $MID, $LATE, $LAST s;" \
	"$n launches joined exactly, launches_outside=$outside, cache_installs=$installs, callbacks on $cbs time(s)"
