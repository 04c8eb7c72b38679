#!/usr/bin/env bash
# The duty cycle (README, "Duty cycle"): --duty 0.3 over a 10 s run records
# about 3 s, in windows at random offsets. Every launch made inside a window
# is in the profile with its exact GPU time; none made outside is (spin
# logs each launch's time, the loader each window's edges: the profile's
# count equals the launches timed inside, within one launch per edge). No
# launch is lost or unattributed; the profile says which windows it covers;
# between windows the launch probes are detached, not only inert (the int3
# at cuLaunchKernel is gone from spin's text); and each shim switch is made
# by the shim's own thread, never on the application's. Each switch-on is
# slow here (the stub's cuptiActivityEnable takes 100 ms a kind): a window's
# probes wait until the shim records, so no launch is labelled made before
# it recorded.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/duty_lib.sh"

GPUPROBE_STUB_ENABLE_DELAY_MS=100 GPUPROBE_STUB_TOGGLE_LOG="$WORK/toggles" start_stub "$PROGS/spin" -S -i 500 -t "$WORK/times" >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "^spin: ready" 30 || fail "spin never got ready"
kill -USR1 "$S"

"$LOADER" -v --duty 0.3 -d 10 --pid "$S" -o "$WORK/p.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
# cuLaunchKernel's first byte in spin, watched through the run: detached
# probes leave it as it was between the windows, inert ones an int3.
lib=$(readlink -f "$STUBLIB")
base=$(awk -v p="$lib" '$6 == p && $3 == "00000000" {split($1, a, "-"); print a[1]; exit}' "/proc/$S/maps")
off=$(nm -D --defined-only "$lib" | awk '$3 == "cuLaunchKernel" {print $1; exit}')
[ -n "$base" ] && [ -n "$off" ] || fail "cuLaunchKernel not found in spin's maps ($base) or the stub ($off)"
wait_line "$WORK/err" "reading the shim ring of pid $S\$" 30 || { cat "$WORK/err"; fail "the loader never read the ring"; }
python3 "$ROOT/tests/bpf/int3_watch.py" "$S" $((0x$base + 0x$off)) "$WORK/err" "$L" >"$WORK/int3" &
W=$!
PIDS+=($W)
wait_exit "$L" 60 || { tail -20 "$WORK/err"; fail "the loader failed"; }
wait_exit "$W" 10 || fail "int3_watch.py failed"
kill -TERM "$S"
wait_exit "$S" 30 || fail "spin failed"

duty_counters "$WORK/err" "$WORK/ctr" ring_dropped=0 launches_without_record=0 unattributed=0 \
	api_without_launch=0 duty_probe_errors=0 launches_before_recording=0 duty_unready=0
grep -q "^duty: 30% asked, " "$WORK/err" || { grep "^duty" "$WORK/err"; fail "no duty line in the report"; }

duty_edges "$WORK/err" "$WORK/edges"
nwin=$(grep -c "^open" "$WORK/edges")
[ "$nwin" -ge 1 ] || { cat "$WORK/edges"; fail "no window opened"; }
grep -q " duty_windows=$nwin " "$WORK/ctr" || { cat "$WORK/ctr"; fail "duty_windows is not the $nwin windows logged"; }
duty_check_profile "$WORK/edges" "$WORK/times" "$nwin" "$WORK/p.pb.gz"
n=$DUTY_JOINED labelled=$DUTY_LABELLED inside=$DUTY_INSIDE total=$DUTY_TOTAL
[ "$inside" -lt $((total * 6 / 10)) ] || fail "$inside of $total launches inside windows asked to be 30% of the time"
# Between windows the launch probes send nothing: only launches made while
# a window's probes were being attached or detached are seen outside it (a
# few, more on a loaded machine), where probes left in place would send
# most of them.
outside=$(sed -n 's/.* launches_outside=\([0-9]*\) .*/\1/p' "$WORK/ctr")
events=$(sed -n 's/.* launch_events=\([0-9]*\) .*/\1/p' "$WORK/ctr")
[ $((outside * 20)) -le "$events" ] || fail "launches_outside=$outside of $events launch events: the probes ran between the windows"

# Detached between the windows (uprobe_multi links); perf-event links stay, inert.
read -r in_cc in_other out_cc out_other < <(sed 's/[a-z_]*=//g' "$WORK/int3")
if grep -q "launch probes: uprobe_multi links" "$WORK/err"; then
	[ "$in_cc" -ge 1 ] || fail "no int3 at cuLaunchKernel seen inside a window ($(cat "$WORK/int3")): the watch reads the wrong byte"
	[ "$out_other" -ge 1 ] && [ "$out_cc" -le $((2 * nwin)) ] ||
		fail "cuLaunchKernel kept its int3 between the windows ($(cat "$WORK/int3")): the probes were not detached"
	probes="detached between windows ($(cat "$WORK/int3"))"
else
	grep -q "launch probes: perf-event links" "$WORK/err" || fail "the loader did not say how it attached"
	probes="perf-event links, inert between windows"
fi

go tool pprof -raw "$WORK/p.pb.gz" 2>/dev/null | grep "^Comment: " >"$WORK/comments" || true
grep -q "^Comment: gpuprobe-bpf duty cycle: 30% asked" "$WORK/comments" || { cat "$WORK/comments"; fail "the profile does not say its duty cycle"; }
[ "$(grep -c "^Comment: window: +" "$WORK/comments")" = "$nwin" ] || { cat "$WORK/comments"; fail "the profile does not list its $nwin windows"; }

# Every switch of kernel activity by the shim's own thread (tid field 0 = not an application thread).
awk '$3 == "kind" && $2 == 1' "$WORK/toggles" | grep . && fail "activity switched on an application thread (above)"
grep -q "^[0-9]* 0 kind 10 on$" "$WORK/toggles" || { cat "$WORK/toggles"; fail "kernel activity never switched on"; }
[ "$nwin" -lt 2 ] || grep -q "^[0-9]* 0 kind 10 off$" "$WORK/toggles" || fail "kernel activity never switched off between windows"
api="API records by the launch callbacks"
if [ "${GPUPROBE_API_RECORDS:-}" = kinds ]; then # e2e_duty_kinds.sh: the DRIVER kind (4) with the windows
	grep -q "^[0-9]* 0 kind 4 on$" "$WORK/toggles" || { cat "$WORK/toggles"; fail "kinds: the DRIVER kind never switched on"; }
	[ "$nwin" -lt 2 ] || grep -q "^[0-9]* 0 kind 4 off$" "$WORK/toggles" || fail "kinds: the DRIVER kind never switched off between windows"
	grep " cb_" "$WORK/toggles" && fail "kinds: a launch callback was switched (above)"
	# On before the kernel kind (10), off after it: a window's kernels have their API records.
	awk '$3 == "kind" && ($4 == 4 || $4 == 10) {
		if ($5 == "on" && $4 == 10 && !api) bad = 1
		if ($5 == "off" && $4 == 4 && kern) bad = 1
		if ($4 == 4) api = $5 == "on"; else kern = $5 == "on"
	} END { exit bad }' "$WORK/toggles" || { cat "$WORK/toggles"; fail "kinds: the kernel kind on while the DRIVER kind was off"; }
	api="API records by the DRIVER kind, switched with the windows"
fi
ok "duty 0.3 over 10 s: $nwin windows, $n launches joined exactly ($labelled labelled), $inside of $total made inside windows, none lost; probes $probes; $api"
