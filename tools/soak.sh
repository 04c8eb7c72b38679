#!/usr/bin/env bash
# Soak: the loader in its production mode (--all-cgroups --interval 60) under
# a high launch rate from several stub processes restarted in a loop, for
# SOAK_MINUTES (default 30). The launcher runs are paced (SOAK_PACE seconds
# between runs, default 0.2: about 60,000 launch events a second in all),
# so the load does not depend on how fast the machine is: unpaced, a 2-core
# machine ran 350,000 a second, more than the loader could take beside four
# busy processes (losses, each counted, and a backlog at its bound).
# Every 10 s the loader's RSS, the most memory its
# launch queue held around then (queue_mb of the next -v loader line: a
# backlog of events waiting to be handled, bounded at 256 MiB, whose memory
# leaves when they are handled), open fds (and how many of them are the
# probes') and memory mappings go into a CSV. At the end it checks:
#   - RSS after the warm-up (the first 3 minutes, or a third of a shorter
#     run) grows by less than 10%: with no process running, from an idle
#     point right after the warm-up to the end; and under load, less the
#     queue's backlog, from the most in the first third of the samples
#     after the warm-up to the most in the last third (a trend: the heap
#     rises and falls by several MB over minutes, so one first sample may
#     sit in a trough; the RSS itself and the first sample are printed too);
#   - fds and mappings are flat: the same, exactly, with no process running,
#     after a first short round and at the very end (the probes' fds may grow
#     only when other CUDA processes on the machine bring new libcuda files);
#   - every launch event, record and activity is accounted for, from the
#     counters line against what the workload printed and is known to make
#     (spin: N launches = N+1 events (+ its module load), 2N+1 records, N
#     activities; launcher -t T -n N, L = T*N: 6L+3T+5 events, 13L+6T+5
#     records, 7L+3T activities), and the interval profiles hold every
#     activity that reached the profile, once, and every launch without a
#     GPU record (`[no GPU record]` samples) once. A process whose ring the
#     loader says it could not hold (rings_missed, -v names the pid) has its
#     records and activities counted lost as a whole.
# Usage: tools/soak.sh [BUILD_DIR]    (root; SOAK_MINUTES, SOAK_PROCS, SOAK_PACE, SOAK_OUT)
set -euo pipefail
export GPUPROBE_COUNTERS=all # the loader's last counters line whole: read by name here
build=$(cd "${1:-build}" && pwd)
minutes=${SOAK_MINUTES:-30}
procs=${SOAK_PROCS:-4}
pace=${SOAK_PACE:-0.2}
out=${SOAK_OUT:-$build/soak}
root=$(cd "$(dirname "$0")/.." && pwd)
loader="$build/gpuprobe-bpf" shim="$build/libgpuprobe_shim.so" stublib="$build/stub/libcuda.so.1"
progs="$build/tests/progs"
if [ "$(id -u)" != 0 ]; then
	echo "soak: needs root (BPF); run: sudo make soak" >&2
	exit 1
fi
[[ "$minutes" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v m="$minutes" 'BEGIN {exit !(m > 0)}' ||
	{ echo "soak: SOAK_MINUTES: want a positive number, got '$minutes'" >&2; exit 2; }
[[ "$procs" =~ ^[1-9][0-9]?$ ]] || { echo "soak: SOAK_PROCS: want 1..99, got '$procs'" >&2; exit 2; }
[[ "$pace" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "soak: SOAK_PACE: want seconds, got '$pace'" >&2; exit 2; }
for f in "$loader" "$shim" "$stublib" "$progs/spin" "$progs/launcher"; do
	[ -e "$f" ] || { echo "soak: $f missing: run make first" >&2; exit 1; }
done
total_s=$(awk -v m="$minutes" 'BEGIN {printf "%d", m * 60}')
warm_s=$(( total_s / 3 < 180 ? total_s / 3 : 180 ))
rm -rf "$out"
mkdir -p "$out/profiles" "$out/work"
csv="$out/samples.csv" err="$out/loader.err"
pids=()
cleanup() {
	for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
fail() { echo "soak: FAIL: $*" >&2; exit 1; }
t0=$(date +%s)

# --libcuda: the stub is attached before any worker starts, so every launch
# of every worker is seen from its first one (exact accounting).
# -v: a loader line each tick, whose queue_mb the samples take.
"$loader" -v --all-cgroups --interval 60 --libcuda "$stublib" -o "$out/profiles/soak.pb.gz" 2>"$err" &
L=$!
pids+=($L)
# perf_fds: the probes' perf events and BPF links, one set per libcuda file
# attached: they grow when a new libcuda appears on the machine, not with time.
# queue_mb of the first loader line written after the RSS was read: the most
# the queue held since the line before, so the backlog at the time of reading.
queue_after() { # ERR_OFFSET -> queue_kb ("" if no line came within 10 s)
	local i line
	for i in $(seq 100); do
		line=$(tail -c +"$1" "$err" | grep -m1 "^loader: .* helper_rss_mb=[0-9.]*$") && break
		sleep 0.1
	done
	echo "$line" | sed -n 's/.* queue_mb=\([0-9.]*\) .*/\1/p' | awk '{printf "%d", $1 * 1024}'
}
sample() { # -> "rss_kb fds perf_fds maps queue_kb"
	local rss queue at
	at=$(( $(stat -c %s "$err") + 1 ))
	rss=$(awk '$1=="VmRSS:"{print $2}' "/proc/$L/status") || fail "the loader is gone: $(tail -3 "$err")"
	queue=$(queue_after "$at")
	[ -n "$queue" ] || fail "no loader line within 10 s of a sample: $(tail -3 "$err")"
	echo "$rss $(ls "/proc/$L/fd" | wc -l) $(ls -l "/proc/$L/fd" 2>/dev/null | grep -c 'perf_event\|bpf[-_]link')" \
		"$(wc -l <"/proc/$L/maps") ${queue:-0}"
}
echo "t_s,rss_kb,fds,perf_fds,maps,queue_kb,phase" >"$csv"
record() { # PHASE
	local s
	s=$(sample)
	echo "$(( $(date +%s) - t0 )),${s// /,},$1" >>"$csv"
}

# One worker: runs spin (odd workers) or launcher (even) back to back until
# the stop file appears, logging "spin PID N" / "launcher PID T N" for each
# run it completed, and "fail PID CMD STATUS" for one that did not exit 0.
worker() { # ID
	local id=$1 log="$out/work/w$1.log" pid rc
	while [ ! -e "$out/work/stop" ]; do
		if (( id % 2 )); then
			set -- "$progs/spin" -s 5 -i 100
		else
			set -- "$progs/launcher" -t 2 -n 500
		fi
		CUDA_INJECTION64_PATH="$shim" LD_LIBRARY_PATH="$build/stub" \
			sh -c 'echo $$ >"$0.pid"; exec "$@"' "$out/work/w$id" "$@" >"$out/work/w$id.out" 2>&1 &&
			rc=0 || rc=$?
		pid=$(cat "$out/work/w$id.pid")
		if [ $rc != 0 ]; then
			echo "fail $pid ${1##*/} $rc" >>"$log"
		elif (( id % 2 )); then
			echo "spin $pid $(sed -n 's/^spin: launches=//p' "$out/work/w$id.out")" >>"$log"
		else
			echo "launcher $pid 2 500" >>"$log"
			sleep "$pace"
		fi
	done
}
start_workers() {
	rm -f "$out/work/stop"
	wpids=()
	for i in $(seq 1 "$procs"); do
		worker "$i" &
		wpids+=($!)
		pids+=($!)
	done
}
stop_workers() {
	touch "$out/work/stop"
	for p in "${wpids[@]}"; do wait "$p"; done
	sleep 3 # the loader notices the exits and retires the targets
}

sleep 2
record start
# A first short round fills what is filled once (symbol caches...).
start_workers
sleep 12
stop_workers
record idle1
idle1=$(sample)
cp "/proc/$L/maps" "$out/maps-idle1.txt"
echo "soak: ${minutes} min, $procs processes, launcher runs $pace s apart; warm-up ${warm_s} s; samples every 10 s in $csv"
start_workers
while [ $(( $(date +%s) - t0 )) -lt "$warm_s" ]; do
	sleep 10
	record warmup
done
# An idle point after the warm-up, the base of the idle-to-idle RSS check.
stop_workers
record idle_warm
idle_w=$(sample)
start_workers
end=$(( t0 + total_s ))
while [ "$(date +%s)" -lt "$end" ]; do
	sleep 10
	record soak
done
stop_workers
record idle2
idle2=$(sample)
cp "/proc/$L/maps" "$out/maps-idle2.txt"
kill -INT "$L"
wait "$L" || fail "the loader exited $? on SIGINT: $(tail -3 "$err")"
pids=()

# ---------------------------------------------------------------- checks
nbad=0
bad() { echo "soak: FAIL: $*" >&2; nbad=$((nbad + 1)); }
grep -q "^fail " "$out"/work/w*.log && bad "a workload run failed: $(grep -h "^fail " "$out"/work/w*.log | cut -d' ' -f3- | sort | uniq -c)"
# What each run made, by pid (launcher: L = T*N).
awk '$1 == "spin" { n = $3; print $2, n + 1, 2 * n + 1, n }
	$1 == "launcher" { L = $3 * $4; T = $3; print $2, 6 * L + 3 * T + 5, 13 * L + 6 * T + 5, 7 * L + 3 * T }' \
	"$out"/work/w*.log | sort >"$out/made.txt" # pid events records activities
read -r runs events records acts < <(awk '{r++; e += $2; rec += $3; a += $4} END {print r + 0, e + 0, rec + 0, a + 0}' "$out/made.txt")
line=$(grep "^counters: " "$err" | tail -1) || fail "no counters line: $(tail -3 "$err")"
ctr() { echo "$line" | tr ' ()' '\n\n\n' | sed -n "s/^$1=//p" | head -1; }
for k in launch_events ringbuf_full records ring_dropped cupti_dropped records_bad ring_resyncs \
	joined unattributed no_launch_event no_api_record before_attach at_attach table_full before_window \
	api_without_launch launches_without_record queue_full rings_missed notices_lost; do
	v=$(ctr $k)
	[[ "$v" =~ ^[0-9]+$ ]] || fail "counters line has no $k: $line"
	declare "c_$k=$v"
done
echo "soak: $runs workload runs made $events launch events, $records records, $acts activities"
echo "soak: $line"
[ "$c_ringbuf_full" = 0 ] && [ "$c_ring_dropped" = 0 ] && [ "$c_cupti_dropped" = 0 ] ||
	echo "soak: note: losses under load (each counted): ringbuf_full=$c_ringbuf_full ring_dropped=$c_ring_dropped cupti_dropped=$c_cupti_dropped"
[ "$c_records_bad" = 0 ] && [ "$c_ring_resyncs" = 0 ] || bad "bad records or ring resyncs"
# Per pid, from the interval profiles (the counters line is machine-wide:
# --all-cgroups also profiles any other CUDA process here).
samples() { # FILE PPROF_FILTER -> "pid count" per sample
	go tool pprof -raw "$2" "$1" 2>/dev/null | awk '
		/^Samples:/ {s = 1; next} /^Locations/ {s = 0}
		s && $2 ~ /^[0-9]+:$/ {c = $2 + 0; next}
		s && /pid:\[/ { match($0, /pid:\[[0-9]+\]/); print substr($0, RSTART + 5, RLENGTH - 6), c }'
}
for f in "$out"/profiles/*.pb.gz; do
	samples "$f" -ignore='\[no GPU record\]'
done | awk '{n[$1] += $2} END {for (p in n) print p, n[p]}' | sort >"$out/profiled.txt" # pid activities
unrecorded=$(for f in "$out"/profiles/*.pb.gz; do samples "$f" -focus='\[no GPU record\]'; done |
	awk '{n += $2} END {print n + 0}')
# Processes whose ring the loader could not hold: their records are lost as a whole, counted.
sed -n 's/^gpuprobe-bpf: pid \([0-9]*\): its new shim ring could not be held.*/\1/p' "$err" | sort -u >"$out/missed.txt"
[ "$(wc -l <"$out/missed.txt")" = "$c_rings_missed" ] ||
	bad "rings_missed=$c_rings_missed, but the loader named $(wc -l <"$out/missed.txt") pids"
# One run's ring per notice; a pid that served several runs must have made the
# same number of records in each to say how many that ring held.
read -r missed_records missed_unclear < <(join "$out/missed.txt" "$out/made.txt" |
	awk '{if (!($1 in r)) r[$1] = $3; else if (r[$1] != $3) u[$1] = 1}
	END {for (p in r) if (!(p in u)) n += r[p]; print n + 0, length(u) + 0}')
[ "$missed_unclear" = 0 ] ||
	bad "$missed_unclear pids whose ring was missed served runs of different sizes: their loss cannot be told apart"
files=$(ls "$out"/profiles | wc -l)
ls "$out"/profiles | grep -q "\.tmp\." && bad "temporary profile files left"
# A long soak reuses pids (pid_max wraps): runs that had the same pid share
# their profile label, so what they made is added up per pid.
awk '{n[$1] += $4; r[$1]++} END {for (p in n) print p, n[p], r[p]}' "$out/made.txt" | sort >"$out/made_by_pid.txt"
join -a1 -e0 -o 1.1,1.2,2.2,1.3 "$out/made_by_pid.txt" "$out/profiled.txt" |
	join -v1 - "$out/missed.txt" >"$out/accounted.txt" # pid made profiled runs
read -r short missing unread reused < <(awk '$2 != $3 {s++; m += $2 - $3} $3 == 0 {u++} $4 > 1 {r++}
	END {print s + 0, m + 0, u + 0, r + 0}' "$out/accounted.txt")
foreign=$(join -v2 "$out/made.txt" "$out/profiled.txt" | wc -l)
# unattributed= must be the sum of its reasons (--interval must not reset it).
reasons=$((c_no_launch_event + c_no_api_record + c_before_attach + c_at_attach + c_table_full))
[ "$c_unattributed" -ge "$reasons" ] ||
	bad "counters line: unattributed=$c_unattributed, but its reasons add up to $reasons"
total=$((c_joined + reasons))
sum=$(awk '{n += $2} END {print n + 0}' "$out/profiled.txt")
echo "soak: $files interval profiles; $foreign other processes in them"
if [ "$foreign" = 0 ]; then
	# Only our workload ran: the machine-wide counters must add up too.
	[ $((c_launch_events + c_ringbuf_full)) = "$events" ] ||
		bad "launch events: $c_launch_events received + $c_ringbuf_full lost != $events made"
	[ $((c_records + c_ring_dropped + c_cupti_dropped + missed_records)) = "$records" ] ||
		bad "records: $c_records written + $c_ring_dropped + $c_cupti_dropped dropped + $missed_records in rings missed != $records made"
	[ "$unrecorded" = "$c_launches_without_record" ] ||
		bad "the profiles hold $unrecorded launches without a GPU record, the loader counted $c_launches_without_record"
	[ "$sum" = "$total" ] || bad "the profiles hold $sum activities, the loader joined $total"
fi
[ "$unread" = 0 ] || echo "soak: $unread pids have nothing in the profiles: the loader never read their" \
	"ring (gone before its first visit?); their launches show only as [no GPU record] samples" >&2
if [ "$short" = 0 ]; then
	echo "soak: every run's activities are in the profiles, exactly ($acts; $reused pids served more than one run, checked per pid)"
else
	bad "$short pids (of $runs runs) are short of activities in the profiles ($missing missing): see $out/accounted.txt"
fi

# Resources: RSS after the warm-up, fds and mappings.
read -r rss_w rss_max rss_end net_max queue_max head_max tail_max < <(awk -F, '$7 == "soak" {
	if (!w) w = $2 - $6; if ($2 > m) m = $2; net[k++] = $2 - $6; if ($6 > q) q = $6; e = $2 }
	END { for (i = 0; i < k; i++) { if (net[i] > nm) nm = net[i]; if (3 * i < k && net[i] > h) h = net[i];
		if (3 * i >= 2 * k && net[i] > t) t = net[i] }
	print w + 0, m + 0, e + 0, nm + 0, q + 0, h + 0, t + 0 }' "$csv")
[ "$rss_w" -gt 0 ] && [ "$head_max" -gt 0 ] && [ "$tail_max" -gt 0 ] || fail "too few samples after the warm-up: run longer"
growth=$(awk -v a="$head_max" -v b="$tail_max" 'BEGIN {printf "%.1f", 100 * (b - a) / a}')
echo "soak: under load, RSS less the launch queue: first ${rss_w} kB, max ${net_max} kB; most in the first third ${head_max} kB, in the last ${tail_max} kB: ${growth}%"
echo "soak: under load, RSS itself: max ${rss_max} kB, last ${rss_end} kB; the queue held at most ${queue_max} kB around a sample"
awk -v g="$growth" 'BEGIN {exit !(g < 10)}' || bad "under load, RSS less the queue grew by ${growth}% from the first third to the last"
read -r rss_iw _ <<<"$idle_w"
read -r rss_i2 _ <<<"$idle2"
idle_growth=$(awk -v a="$rss_iw" -v b="$rss_i2" 'BEGIN {printf "%.1f", 100 * (b - a) / a}')
echo "soak: idle RSS after the warm-up ${rss_iw} kB, at the end ${rss_i2} kB: ${idle_growth}%"
awk -v g="$idle_growth" 'BEGIN {exit !(g < 10)}' || bad "idle RSS grew by ${idle_growth}% from after the warm-up to the end"
read -r _ f1 p1 m1 _ <<<"$idle1"
read -r _ f2 p2 m2 _ <<<"$idle2"
echo "soak: idle after the first round: $f1 fds ($p1 of probes), $m1 mappings; at the end: $f2 fds ($p2 of probes), $m2 mappings"
[ $((f1 - p1)) = $((f2 - p2)) ] || bad "fds not flat: $((f1 - p1)) -> $((f2 - p2)) (probes' fds aside)"
if [ "$p1" != "$p2" ]; then
	if [ "$foreign" = 0 ]; then
		bad "probe fds not flat: $p1 -> $p2, and no other CUDA process ran"
	else
		echo "soak: note: probe fds $p1 -> $p2: the $foreign other CUDA processes brought libcuda files to attach"
	fi
fi
[ "$m1" = "$m2" ] || bad "mappings not flat: $m1 -> $m2: $(diff <(cut -d' ' -f1,2,6 "$out/maps-idle1.txt") \
	<(cut -d' ' -f1,2,6 "$out/maps-idle2.txt") | grep '^[<>]' | tr '\n' ';')"
read -r fmax mmax < <(awk -F, '$7 == "soak" { if ($3 > f) f = $3; if ($5 > m) m = $5 } END { print f + 0, m + 0 }' "$csv")
echo "soak: under load, at most $fmax fds and $mmax mappings"
[ "$nbad" = 0 ] || { echo "soak: FAIL: $nbad checks failed; samples in $csv, workload logs in $out/work" >&2; exit 1; }
echo "soak: PASS ($(( $(date +%s) - t0 )) s)"
