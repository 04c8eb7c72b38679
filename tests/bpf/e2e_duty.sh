#!/usr/bin/env bash
# The duty cycle (README, "Duty cycle"): --duty 0.3 over a 10 s run records
# about 3 s, in windows at random offsets. Every launch made inside a window
# is in the profile with its exact GPU time; none made outside is (spin
# logs each launch's time, the loader each window's edges: the profile's
# count equals the launches timed inside, within one launch per edge). No
# launch is lost or unattributed; the profile says which windows it covers;
# and each shim switch is made by the shim's own thread, never on the
# application's.
source "$(dirname "$0")/lib.sh"

GPUPROBE_STUB_TOGGLE_LOG="$WORK/toggles" start_stub "$PROGS/spin" -S -i 500 -t "$WORK/times" >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "^spin: ready" 30 || fail "spin never got ready"
kill -USR1 "$S"

"$LOADER" -v --duty 0.3 -d 10 --pid "$S" -o "$WORK/p.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_exit "$L" 60 || { tail -20 "$WORK/err"; fail "the loader failed"; }
kill -TERM "$S"
wait_exit "$S" 30 || fail "spin failed"

grep "^counters: " "$WORK/err" | tail -1 >"$WORK/ctr"
for c in ring_dropped=0 launches_without_record=0 unattributed=0 api_without_launch=0 duty_probe_errors=0; do
	grep -q " $c " "$WORK/ctr" || { cat "$WORK/ctr"; fail "counters: want $c"; }
done
grep -q "^duty: 30% asked, " "$WORK/err" || { grep "^duty" "$WORK/err"; fail "no duty line in the report"; }

# The windows, as the loader opened and closed them; one open at the stop ends there.
sed -n 's/.*duty: window open at \([0-9]*\) .*/open \1/p; s/.*duty: window closed at \([0-9]*\) .*/close \1/p;
	s/.*stopping at \([0-9]*\) .*/stop \1/p' "$WORK/err" >"$WORK/edges"
nwin=$(grep -c "^open" "$WORK/edges")
[ "$nwin" -ge 1 ] || { cat "$WORK/edges"; fail "no window opened"; }
grep -q " duty_windows=$nwin " "$WORK/ctr" || { cat "$WORK/ctr"; fail "duty_windows is not the $nwin windows logged"; }
inside=$(awk 'NR == FNR { if ($1 == "open") { o[++n] = $2; c[n] = 0 } else if ($1 == "close" && n) c[n] = $2;
		else if ($1 == "stop" && n && !c[n]) c[n] = $2; next }
	{ for (i = 1; i <= n; i++) if ($1 >= o[i] && (!c[i] || $1 < c[i])) { k++; break } }
	END { print k + 0 }' "$WORK/edges" "$WORK/times")
total=$(wc -l <"$WORK/times")

$CHECK "$WORK/p.pb.gz" totals >"$WORK/totals"
n=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $4}' "$WORK/totals")
ns=$(awk '$1=="spin_site" && $2=="spin_kernel" {print $3}' "$WORK/totals")
labelled=$(awk '$1 == "spin_site" && /before the shim recorded/ {n += $NF} END {print n + 0}' "$WORK/totals")
grep -v "^spin_site spin_kernel \|^spin_site \[no GPU record: before the shim recorded\] 0 " "$WORK/totals" &&
	fail "samples other than spin_kernel's and launches labelled before recording (above)"
[ "${n:-0}" -ge 100 ] && [ "$ns" = $((n * 1000)) ] || { cat "$WORK/totals"; fail "joined $n launches, GPU time $ns ns (want n x 1000)"; }
got=$((n + labelled))
diff=$((got > inside ? got - inside : inside - got))
[ "$diff" -le $((2 * nwin)) ] || { cat "$WORK/edges"; fail "$got launches in the profile, $inside made inside the $nwin windows"; }
[ "$inside" -lt $((total * 6 / 10)) ] || fail "$inside of $total launches inside windows asked to be 30% of the time"
# Between windows the launch probes send nothing: only a launch at an edge may be seen outside.
outside=$(sed -n 's/.* launches_outside=\([0-9]*\) .*/\1/p' "$WORK/ctr")
[ "$outside" -le $((2 * nwin)) ] || fail "launches_outside=$outside: the probes ran between the windows"

go tool pprof -raw "$WORK/p.pb.gz" 2>/dev/null | grep "^Comment: " >"$WORK/comments" || true
grep -q "^Comment: gpuprobe-bpf duty cycle: 30% asked" "$WORK/comments" || { cat "$WORK/comments"; fail "the profile does not say its duty cycle"; }
[ "$(grep -c "^Comment: window: +" "$WORK/comments")" = "$nwin" ] || { cat "$WORK/comments"; fail "the profile does not list its $nwin windows"; }

# Every switch of kernel activity by the shim's own thread (tid field 0 = not an application thread).
awk '$3 == "kind" && $2 == 1' "$WORK/toggles" | grep . && fail "activity switched on an application thread (above)"
grep -q "^[0-9]* 0 kind 10 on$" "$WORK/toggles" || { cat "$WORK/toggles"; fail "kernel activity never switched on"; }
[ "$nwin" -lt 2 ] || grep -q "^[0-9]* 0 kind 10 off$" "$WORK/toggles" || fail "kernel activity never switched off between windows"
ok "duty 0.3 over 10 s: $nwin windows, $n launches joined exactly ($labelled labelled), $inside of $total made inside windows, none lost"
