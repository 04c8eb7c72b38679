#!/usr/bin/env bash
# Processes that start CUDA and exit within milliseconds, under
# `--all-cgroups`: the loader's ring watch thread holds each one's shim ring
# as it is made (the memfd_create tracepoints), so their records are read
# after they are gone: every activity of every run is in the profile, joined
# to its launch, and no ring is counted missed. Each run launches once its
# shim records (launcher -r): whether a shim sees the loader at its very
# start is a race the loader can lose on a loaded machine (a fresh-clone
# check saw all 123 launches of a run made before the shim recorded). Finding rings only on the
# loader's visits lost most of these runs' records (tried: ring watch not
# attached). Then a process whose whole life passes while the loader is held.
source "$(dirname "$0")/lib.sh"

runs=10 T=1 N=20
"$LOADER" --all-cgroups -v --libcuda "$STUBLIB" -o "$WORK/all.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "^counters:" 60 || fail "the loader did not start ticking"
grep "cannot watch memfd_create" "$WORK/err" && fail "the ring watch did not attach"
pids=() named=0
for i in $(seq 1 $runs); do
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" "$PROGS/launcher" -r -t $T -n $N &
	p=$!
	wait "$p" || fail "launcher run $i failed"
	pids+=($p)
done
# Each run met and retired by the loader (-v says so): its ring was read to the end.
for p in "${pids[@]}"; do
	wait_line "$WORK/err" "following pid $p " 60 || fail "the loader never followed pid $p"
	wait_line "$WORK/err" "pid $p exited" 60 || fail "the loader never retired pid $p"
done
kill -INT "$L"
wait_exit "$L" 60 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "loader failed"; }
last=$(grep "^counters:" "$WORK/err" | tail -1)
echo "$last" | grep -q " rings_missed=0 " || { grep -v "^counters\|^libbpf" "$WORK/err" | head -40; fail "rings missed: $last"; }
# launcher -t T -n N: per run 7TN+3T activities, 23000 ns x TN + 11 ns x T
# (tests/bpf/profile_check.py expected_launcher), all joined to a launch.
# Their sites are named best effort: a process gone before the loader reads
# its maps keeps its GPU time and loses its stacks' names.
# A node-wide loader beside this test (a shared machine) may hold a run's ring
# first: the loader says so, and that run's launches (6TN+3T calls) count
# with no GPU record. Only then.
want_n=$((7 * T * N + 3 * T)) want_ns=$((23000 * T * N + 11 * T))
for p in "${pids[@]}"; do
	$CHECK "$WORK/all.pb.gz" totals "$p" >"$WORK/t" || fail "go tool pprof cannot read the profile"
	if has_line "$WORK/err" "pid $p (launcher): its shim ring is read by another gpuprobe-bpf"; then
		grep -v "^\([a-z_]*\|?\) \[no GPU record\] 0 [0-9]*$" "$WORK/t" && fail "pid $p: GPU time from a ring another loader read"
		n=$(awk '{n += $NF} END {print n + 0}' "$WORK/t")
		[ "$n" = $((6 * T * N + 3 * T)) ] || { cat "$WORK/t"; fail "pid $p (its ring read by another loader): $n launches, it made $((6 * T * N + 3 * T))"; }
		taken="${taken:-} $p"
		continue
	fi
	grep -q unattributed "$WORK/t" && { cat "$WORK/t"; fail "pid $p: unattributed samples"; }
	read -r n ns < <(awk '{n += $NF; ns += $(NF - 1)} END {print n + 0, ns + 0}' "$WORK/t")
	[ "$n" = "$want_n" ] && [ "$ns" = "$want_ns" ] ||
		{ cat "$WORK/t"; fail "pid $p: $n activities, $ns ns in the profile; it made $want_n, $want_ns ns"; }
	grep -q "^? " "$WORK/t" || named=$((named + 1))
done
ok "$runs runs of a few milliseconds each: every activity of each in the profile, joined, no ring missed ($named of $runs with their sites named)${taken:+; the rings of pids$taken were read by another loader: their launches, without GPU records}"

# The whole life of a process while the loader is held (SIGSTOP: a loader
# starved of CPU on a busy node): the process is a zombie, its maps empty,
# when the loader reads them. Its GPU time is all there, joined; its stacks
# cannot be named, and say why rather than "unmapped address".
T=2 N=20
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/held.pb.gz" --libcuda "$STUBLIB" \
	-- sh -c "kill -STOP \$PPID && exec '$PROGS/launcher' -t $T -n $N" 2>"$WORK/err-held" & L=$!
PIDS+=($L)
launched() { c=$(pgrep -P "$L" -x launcher) && exited "$c"; }
wait_until 60 launched || fail "the launcher never ran to its end under a held loader"
kill -CONT "$L"
wait_exit "$L" 60 || { grep -v "^libbpf\|^counters" "$WORK/err-held"; fail "loader failed (held)"; }
$CHECK "$WORK/held.pb.gz" totals >"$WORK/t-held"
read -r n ns < <(awk '{n += $NF; ns += $(NF - 1)} END {print n + 0, ns + 0}' "$WORK/t-held")
want_n=$((7 * T * N + 3 * T)) want_ns=$((23000 * T * N + 11 * T))
[ "$n" = "$want_n" ] && [ "$ns" = "$want_ns" ] ||
	{ cat "$WORK/t-held"; fail "held loader: $n activities, $ns ns in the profile; the launcher made $want_n, $want_ns ns"; }
grep "^ .*%" "$WORK/err-held" | grep -v "\[truncated: process gone before its mappings were read\]" &&
	fail "a kernel's heaviest site is not named as a process gone before its maps were read"
grep -q "^verdict: .*losses: .*stacks_short=[1-9]" "$WORK/err-held" ||
	fail "the lost names are not named a loss: $(grep "^verdict" "$WORK/err-held")"
ok "a process whose whole life passed while the loader was held: all $n activities joined, its stacks said to be those of a process gone before its maps were read"
