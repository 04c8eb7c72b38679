#!/usr/bin/env bash
# Continuous mode under process churn: eight short programs, one after the
# other, each with its own stacks, under `--all-cgroups --interval`. Every
# launch lands in exactly one window's profile, and once they are all gone
# and a window has passed, the loader holds nothing of them: its tables line
# (-v, after each window) counts no stacks, frames, processes, cubins or
# targets left. Without the window compaction, the processes stay (tried).
#
# When is "a window later": a process's stacks stay through the window of
# its last launch and go at the end of the next one; it is retired (its join
# entries freed) in the tick that finds it gone, which the loader logs ("pid
# N exited", -v). So the second tables line after the last of those lines is
# the first that must be empty. The test waits for those lines, not for a
# number of seconds: under load a window can end seconds late (waiting a
# fixed 5 s for three windows, then checking whatever line was last, left
# raw_stacks=2 now and then).
#
# --all-cgroups follows every CUDA process on the machine: on a shared
# machine (other tests, another loader's -- COMMAND) some are not ours, and
# the tables line counts theirs too. Then the check cannot be exact: it
# waits, up to two minutes, for a window that holds nothing at all, and says
# which processes were not ours. Each profile is checked for our pids only.
source "$(dirname "$0")/lib.sh"

mkdir "$WORK/p"
"$LOADER" --all-cgroups --interval 0.5 -v --libcuda "$STUBLIB" -o "$WORK/p/gp.pb.gz" \
	2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "^counters:" 60 || fail "the loader did not start ticking"
want=0 ours=()
for i in $(seq 1 8); do
	# Each launches only once its shim records: a shim records only while a
	# loader reads its ring, and one met by --all-cgroups is read a tick or
	# so after its start; launches before that are labelled [no GPU record:
	# before the shim recorded], not what this test is about.
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" "$PROGS/spin" -S -s 1 -i 1000 \
		>"$WORK/spin$i.log" &
	p=$!
	wait_line "$WORK/spin$i.log" "^spin: ready" 30 || fail "spin $i never got ready"
	wait_recording $p 60 || fail "spin $i: its shim never recorded under the loader"
	kill -USR1 $p
	wait $p || fail "spin $i failed"
	ours+=($p)
	n=$(sed -n 's/^spin: launches=//p' "$WORK/spin$i.log")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "spin $i printed no launch count"
	want=$((want + n))
done
grep "^tables:" "$WORK/err" | awk '{for (i = 2; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "procs" && kv[2] > m) m = kv[2]}} END {exit !(m > 0)}' ||
	{ grep "^tables:" "$WORK/err"; fail "no tables line counted a process while they ran"; }
# Each of ours met (its launch events may still be on their way) and retired.
for p in "${ours[@]}"; do
	wait_line "$WORK/err" "following pid $p " 60 || fail "the loader never followed pid $p"
	wait_line "$WORK/err" "pid $p exited" 60 || fail "the loader never retired pid $p"
done
m=$(grep -c "^tables:" "$WORK/err")
wait_lines "$WORK/err" "^tables:" $((m + 2)) 60 || fail "no two windows ended within 60 s of the last exit"
line=$(grep "^tables:" "$WORK/err" | sed -n "$((m + 2))p")
held() { # LINE: the tables it shows non-empty, as k=v
	local k v
	for k in raw_stacks stacks frames strings procs cubins targets; do
		v=$(echo "$1" | tr ' ' '\n' | sed -n "s/^$k=//p")
		[ "$v" = 0 ] || echo "$k=$v"
	done
}
foreign=$(sed -n 's/^gpuprobe-bpf: following pid \([0-9]*\) .*/\1/p' "$WORK/err" | sort -u |
	{ grep -vxF "$(printf '%s\n' "${ours[@]}")" || true; } | tr '\n' ' ')
if [ -z "$foreign" ]; then
	[ -z "$(held "$line")" ] ||
		fail "after the churn, a window later, the loader still holds $(held "$line" | tr '\n' ' '): $line"
	ok "8 processes came and went: nothing of them held a window later ($line)"
else
	empty() { grep "^tables:" "$WORK/err" | tail -n +$((m + 2)) | grep -q "raw_stacks=0 stacks=0 frames=0 strings=0 procs=0 cubins=0 targets=0$"; }
	wait_until 120 empty ||
		fail "processes not ours were followed (pids $foreign; another test's, on a shared machine?), and no window within 120 s held nothing, so the check cannot tell theirs from ours: last $(grep "^tables:" "$WORK/err" | tail -1)"
	ok "8 processes came and went, beside others not ours (pids $foreign): a window later than them all held nothing"
fi
kill -INT "$L"
wait_exit "$L" 60 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "loader failed"; }
# A node-wide loader beside this test (a shared machine) may hold one of our
# rings first: the loader says so, and that process's launches count with no
# GPU record. Only then is [no GPU record] allowed.
got=0 taken=
for p in "${ours[@]}"; do
	other=
	has_line "$WORK/err" "pid $p (spin): its shim ring is read by another gpuprobe-bpf" && other=1 taken="$taken $p"
	for f in "$WORK"/p/*; do
		$CHECK "$f" totals "$p" >"$WORK/totals" || fail "go tool pprof cannot read $f"
		if [ -n "$other" ]; then
			grep -v " spin_kernel \|^spin_site \[no GPU record\] 0 " "$WORK/totals" &&
				fail "$f has samples of pid $p other than spin_kernel and launches without a record"
		else
			grep -v " spin_kernel " "$WORK/totals" && fail "$f has samples of pid $p other than spin_kernel"
		fi
		got=$((got + $(awk '{n += $NF} END {print n + 0}' "$WORK/totals")))
	done
done
[ "$got" = "$want" ] || fail "$got launches across $(ls "$WORK/p" | wc -l) windows, the programs made $want"
ok "every one of the $want launches is in exactly one window's profile${taken:+ (the rings of pids$taken were read by another loader: their launches without GPU records)}"
