#!/usr/bin/env bash
# Continuous mode under process churn: eight short programs, one after the
# other, each with its own stacks, under `--all-cgroups --interval`. Every
# launch lands in exactly one window's profile, and once they are all gone
# and a window has passed, the loader holds nothing of them: its tables line
# (-v, after each window) counts no stacks, frames, processes, cubins or
# targets left. Without the window compaction, the processes stay (tried).
source "$(dirname "$0")/lib.sh"

mkdir "$WORK/p"
"$LOADER" --all-cgroups --interval 0.5 -v --libcuda "$STUBLIB" -o "$WORK/p/gp.pb.gz" \
	2>"$WORK/err" & L=$!
PIDS+=($L)
for _ in $(seq 1 100); do grep -q "^counters:" "$WORK/err" && break; sleep 0.05; done
grep -q "^counters:" "$WORK/err" || fail "the loader did not start ticking"
want=0
for i in $(seq 1 8); do
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" "$PROGS/spin" -s 1 -i 1000 \
		>"$WORK/spin$i.log" || fail "spin $i failed"
	n=$(sed -n 's/^spin: launches=//p' "$WORK/spin$i.log")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "spin $i printed no launch count"
	want=$((want + n))
done
grep "^tables:" "$WORK/err" | awk '{for (i = 2; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "procs" && kv[2] > m) m = kv[2]}} END {exit !(m > 0)}' ||
	{ grep "^tables:" "$WORK/err"; fail "no tables line counted a process while they ran"; }
# Two more windows with nothing running: the last one keeps nothing.
n0=$(grep -c "^tables:" "$WORK/err")
for _ in $(seq 1 100); do
	[ "$(grep -c "^tables:" "$WORK/err")" -ge $((n0 + 3)) ] && break
	sleep 0.05
done
kill -INT "$L"
wait_exit "$L" 10 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "loader failed"; }
last=$(grep "^tables:" "$WORK/err" | tail -1)
for k in raw_stacks stacks frames strings procs cubins targets; do
	v=$(echo "$last" | tr ' ' '\n' | sed -n "s/^$k=//p")
	[ "$v" = 0 ] || fail "after the churn, with nothing running, the loader still holds $k=$v: $last"
done
ok "8 processes came and went: nothing of them held a window later ($last)"
got=0
for f in "$WORK"/p/*; do
	$CHECK "$f" totals >"$WORK/totals" || fail "go tool pprof cannot read $f"
	grep -v " spin_kernel " "$WORK/totals" && fail "$f has samples other than spin_kernel"
	got=$((got + $(awk '{n += $4} END {print n + 0}' "$WORK/totals")))
done
[ "$got" = "$want" ] || fail "$got launches across $(ls "$WORK/p" | wc -l) windows, the programs made $want"
ok "every one of the $want launches is in exactly one window's profile"
