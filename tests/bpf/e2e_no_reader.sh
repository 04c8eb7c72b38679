#!/usr/bin/env bash
# No reader, no records (shim/gp_abi.h): a shim no loader reads keeps its
# kernel and copy activity and its launch callbacks off, so its ring holds
# nothing stale and no call pays for an API record; a
# loader attaching mid-run (--pid) gets the activity switched on by the
# shim's own thread, joins every launch made after that exactly and labels
# those made before; once the loader has gone, the shim switches it off
# again. No switch is ever made on an application thread (the stub CUPTI
# logs which thread made each one).
source "$(dirname "$0")/lib.sh"

PEEK="python3 $ROOT/tests/bpf/shm_peek.py"
peek() { $PEEK "$S"; }
field() { peek | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; } # NAME: one field of the header
progress() { # the launches spin has made so far
	kill -USR2 "$S"
	wait_lines "$WORK/spin.log" "^spin: progress" $((++asked)) 30 || fail "spin gave no progress"
	grep "^spin: progress" "$WORK/spin.log" | tail -1 | sed 's/.*launches=//'
}
# Waits until spin has made at least N more launches than it had (60 s only fails a stuck spin).
more_launches() {
	local from end=$(( $(now_ms) + 60000 ))
	from=$(progress)
	until [ "$(progress)" -ge $((from + $1)) ]; do
		[ "$(now_ms)" -lt $end ] || fail "spin made fewer than $1 launches in 60 s"
	done
}
# Starts spin with the shim, logging activity switches to $WORK/toggles.NAME; sets S.
# FLUSH: the shim's flush period in ms (default 100).
start_spin() { # NAME
	GPUPROBE_FLUSH_MS=${FLUSH:-100} GPUPROBE_STUB_TOGGLE_LOG="$WORK/toggles.$1" start_stub "$PROGS/spin" -S -i 500 >"$WORK/spin.log"
	S=${PIDS[-1]}
	asked=0
	wait_line "$WORK/spin.log" "^spin: ready" 30 || fail "spin never got ready"
	kill -USR1 "$S"
}
# No switch of an activity kind or of a launch callback on an application
# thread, nor on the main thread, and kernel activity switched STATES by the
# shim's thread; the launch callbacks on by it, never off (once on, at the
# first reader, they stay: switching them can leave an id stuck for good).
check_toggles() { # NAME STATES...
	local log="$WORK/toggles.$1" st
	shift
	awk '$3 == "kind" && $2 == 1' "$log" | grep . && fail "activity switched on an application thread (above)"
	awk -v s="$S" '($3 == "kind" || $3 ~ /^cb_/) && $1 == s' "$log" | grep . && fail "the main thread switched activity (above)"
	awk '$3 != "kind" && $2 == 1' "$log" | grep . && fail "API capture switched on an application thread (above)"
	for st in "$@"; do
		grep -q "^[0-9]* 0 kind 10 $st$" "$log" || { cat "$log"; fail "kernel activity was not switched $st by the shim's thread"; }
	done
	grep -q "^[0-9]* 0 cb_driver [0-9]* on$" "$log" ||
		{ cat "$log"; fail "the launch callbacks were not switched on by the shim's thread"; }
	grep " cb_[a-z]* [0-9]* off$" "$log" | grep . &&
		fail "the launch callbacks were switched off (above): once on they stay"
	return 0
}
# Callbacks only for the calls that launch, copy or add a graph node: as many
# callback ids switched on as the shim's lists name (nvidia/cbids.c), not every call.
listed() { # DOMAIN ARRAY...: the distinct ids those arrays of nvidia/cbids.c name
	local d=$1 a
	shift
	for a in "$@"; do sed -n "/^static const CUpti_CallbackId $a\[\] = {/,/^};/p" "$ROOT/nvidia/cbids.c"; done |
		grep -o "CUPTI_${d}_TRACE_CBID_[A-Za-z0-9_]*" | sort -u | wc -l
}
check_listed() { # NAME
	local d D want got
	for d in driver runtime; do
		D=$(echo $d | tr a-z A-Z)
		want=$(listed "$D" ${d}_cbids ${d}_node_cbids)
		got=$(grep -o " cb_$d [0-9]* on$" "$WORK/toggles.$1" | sort -u | wc -l)
		[ "$want" -gt 10 ] && [ "$got" = "$want" ] || fail "$got $d callback ids switched on, the shim lists $want"
	done
}

start_spin attach
more_launches 200

# 1. Nobody reads: hundreds of launches, no record, activity off since the start.
h=$(peek)
echo "no reader: $h"
[ "$(field records)" = 0 ] || fail "records written with no reader: $h"
[ "$(field recording)" = 0 ] && [ "$(field recording_on)" = 0 ] || fail "activity on with no reader: $h"
[ "$(field recording_off)" = 1 ] || fail "the shim did not say it started with activity off: $h"
grep -s " kind \| cb_" "$WORK/toggles.attach" && fail "activity or launch callbacks switched with no reader (above)"
grep -s " driver \| runtime " "$WORK/toggles.attach" && fail "CUPTI's API records asked for (above): the launch callbacks replace them"
ok "no reader: $(progress) launches, no record written, activity and launch callbacks off"

# 2. A loader attaches: the shim's thread switches activity on; launches after it are exact.
"$LOADER" -v --pid "$S" -o "$WORK/p.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "reading the shim ring of pid $S\$" 60 || { cat "$WORK/err"; fail "the loader never read the ring"; }
wait_line "$WORK/err" "^counters: .* joined=[1-9][0-9][0-9]" 60 || { grep "^counters" "$WORK/err" | tail -1; fail "fewer than 100 launches joined in 60 s"; }
[ "$(field recording)" = 1 ] || fail "activity not on under a reader: $(peek)"
kill -TERM "$S" # the loader ends with it, once it has read its last records
wait_exit "$L" 60 || { cat "$WORK/err"; fail "the loader failed"; }
wait_exit "$S" 30 || fail "spin failed"
grep "^counters: " "$WORK/err" | tail -1 >"$WORK/ctr"
for c in ring_dropped=0 launches_without_record=0 unattributed=0 recording_on=1; do
	grep -q " $c " "$WORK/ctr" || { cat "$WORK/ctr"; fail "counters: want $c"; }
done
before=$(sed -n 's/.* launches_before_recording=\([0-9]*\) .*/\1/p' "$WORK/ctr")
$CHECK "$WORK/p.pb.gz" totals >"$WORK/totals"
n=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $4}' "$WORK/totals")
ns=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $3}' "$WORK/totals")
[ "${n:-0}" -ge 100 ] && [ "$ns" = $((n * 1000)) ] || { cat "$WORK/totals"; fail "joined $n launches, GPU time $ns ns (want n x 1000)"; }
labelled=$(grep "^spin_site \[no GPU record: before the shim recorded\] 0 " "$WORK/totals" | awk '{n += $NF} END {print n + 0}')
[ "$labelled" = "$before" ] || { cat "$WORK/totals"; fail "$labelled launches labelled, launches_before_recording=$before"; }
grep -v "^spin_site spin_kernel \|^spin_site \[no GPU record: before the shim recorded\] 0 " "$WORK/totals" &&
	fail "samples other than spin_kernel's and the labelled launches (above)"
[ "$before" = 0 ] || grep -q "launches made before the shim recorded" "$WORK/err" ||
	fail "the verdict does not say launches came before recording"
# Those launches taught no stack-cache key: the shim's state was looked at
# before the first key, and keys of launches made off would answer the
# launches made recording (on a GPU, another runtime path).
other=$(grep "^loader: " "$WORK/err" | tail -1 | sed -n 's/.* cache_other_state=\([0-9]*\) .*/\1/p')
[ "$before" = 0 ] || [ "${other:-0}" -ge 1 ] ||
	fail "$before launches made before the switch, none kept from teaching its key (cache_other_state=${other:-none})"
check_toggles attach on
check_listed attach
ok "a loader attached mid-run: $n launches joined exactly, $before made before the switch labelled (cache_other_state=$other), ring_dropped=0"

# 3. The loader leaves a running program: the shim switches activity off and writes no more records.
# Its shim flushes CUPTI every 2 s: the stop must wait for a flush, not a fixed while.
FLUSH=2000 start_spin leave
"$LOADER" -v --pid "$S" -o "$WORK/q.pb.gz" 2>"$WORK/err2" & L=$!
PIDS+=($L)
wait_until 60 bash -c "[ \"\$($PEEK $S | sed -n 's/.* recording=\([0-9]\).*/\1/p')\" = 1 ]" ||
	{ cat "$WORK/err2"; fail "activity not on 60 s into a reader's visit: $(peek)"; }
kill -INT "$L"
wait_exit "$L" 60 || { cat "$WORK/err2"; fail "the loader failed"; }
# Stopped while the program runs on: what it launched before the stop is
# joined (the loader reads on until the shim has flushed CUPTI since the
# stop, up to 2 s here), nothing after.
grep "^counters: " "$WORK/err2" | tail -1 >"$WORK/ctr2"
for c in launches_without_record=0 unattributed=0 api_without_launch=0; do
	grep -q " $c " "$WORK/ctr2" || { cat "$WORK/ctr2"; fail "stopped mid-run: want $c"; }
done
# The probes send nothing after the stop; the shim's records of later calls come, left out.
grep -q " activities_outside=[1-9]" "$WORK/ctr2" || { cat "$WORK/ctr2"; fail "no activity seen after the stop: the grace was not tested"; }
wait_until 30 bash -c "[ \"\$($PEEK $S | sed -n 's/.* recording=\([0-9]\).*/\1/p')\" = 0 ]" ||
	fail "activity still on 30 s after the reader left: $(peek)"
r1=$(field records)
more_launches 200
r2=$(field records)
[ "$r1" = "$r2" ] || fail "records went on after the reader left: $r1 -> $r2"
[ "$(field recording_off)" = 2 ] || fail "recording_off: $(peek)"
check_toggles leave on off
kill -TERM "$S"
wait_exit "$S" 30 || fail "spin failed"
ok "the reader gone: activity off, records stay at $r2 over 200 more launches; every switch on the shim's own thread"
