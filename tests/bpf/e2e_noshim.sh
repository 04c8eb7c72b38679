#!/usr/bin/env bash
# A process without the shim (--pid of a program started without
# CUDA_INJECTION64_PATH) has no GPU time to report, but every launch it made
# while the loader was attached is in the profile, under its stack, as a
# launch with no GPU record: far more launches than the join holds per
# thread (65,536), so the bound hands launches on instead of dropping them.
source "$(dirname "$0")/lib.sh"

LD_LIBRARY_PATH="$B/stub" "$PROGS/spin" -S -s 2 -i 0 >"$WORK/spin.log" &
P=$!; PIDS+=($P)
wait_file "$WORK/spin.log" 30
"$LOADER" -v --pid "$P" -o "$WORK/p.pb.gz" 2>"$WORK/err" &
L=$!; PIDS+=($L)
# -v prints a counters line after each tick: the first one means attached.
wait_line "$WORK/err" "^counters:" 60 || { cat "$WORK/err"; fail "loader did not attach"; }
kill -USR1 "$P"
wait "$P" || fail "spin failed"
wait "$L" || { cat "$WORK/err"; fail "loader failed"; }
made=$(sed -n 's/^spin: launches=//p' "$WORK/spin.log")
ctr=$(grep "^counters:" "$WORK/err" | tail -1)
val() { echo "$ctr" | grep -o " $1=[0-9]*" | cut -d= -f2; }
[ "$(val ringbuf_full)" = 0 ] || fail "launch events lost in the ring: $ctr"
[ "$(val launch_events)" = "$made" ] || fail "$(val launch_events) launch events for $made launches"
[ "$made" -gt 65536 ] || fail "only $made launches: not past the join's bound"
$CHECK "$WORK/p.pb.gz" totals >"$WORK/totals"
# "SITE KERNEL NS COUNT": the kernel name here has spaces. A launch sent
# while the ring was over half full has no stack copy (copy_skipped), so no
# site: "?".
grep -v "^\(spin_site\|?\) \[no GPU record\] 0 [0-9]*$" "$WORK/totals" &&
	{ cat "$WORK/totals"; fail "samples other than launches without a record, or GPU time"; }
site=$(awk '$1 == "spin_site" {n += $NF} END {print n + 0}' "$WORK/totals")
nosite=$(awk '$1 == "?" {n += $NF} END {print n + 0}' "$WORK/totals")
[ $((site + nosite)) = "$made" ] || { cat "$WORK/totals"; fail "$site + $nosite launches in the profile, $made made"; }
[ "$nosite" = "$(val copy_skipped)" ] || fail "$nosite launches without a site, but copy_skipped=$(val copy_skipped)"
[ "$site" -gt 0 ] || fail "no launch under spin_site"
[ "$(val launches_without_record)" = "$made" ] || fail "launches_without_record != $made: $ctr"
[ "$(val queue_full)" = 0 ] || fail "the join refused launches: $ctr"
grep -q "^verdict: $made launch events, no GPU activity: .*without the shim" "$WORK/err" ||
	fail "the verdict does not say why there is no GPU time: $(grep verdict "$WORK/err")"
ok "a process without the shim: all $made launches in the profile ($site under spin_site, $nosite without a stack copy), no GPU time"
