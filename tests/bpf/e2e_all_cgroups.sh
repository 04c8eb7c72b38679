#!/usr/bin/env bash
# --all-cgroups: two processes in two cgroups, started before the loader,
# found by scanning every process's maps (no --libcuda), each labelled with
# its own cgroup; and a third one started after the loader attached, in a
# cgroup of its own, covered from its first launch: labelled with its cgroup,
# its launch count exact.
source "$(dirname "$0")/lib.sh"

test_cgroups a b c
ga=${CGS[0]} gb=${CGS[1]} gc=${CGS[2]} base=$CG_BASE
run_in() { # CGROUP LOG ARGS...
	local cg=$1 log=$2; shift 2
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" \
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@" >"$log" &
	PIDS+=($!)
}
# A and B run until told to stop (-s 0): a busy machine may take seconds to attach.
run_in "$ga" "$WORK/a.log" "$PROGS/spin" -s 0 -i 2000; A=${PIDS[-1]}
run_in "$gb" "$WORK/b.log" "$PROGS/spin" -s 0 -i 2000 -g 3; Bp=${PIDS[-1]}
wait_file "$WORK/a.log" 30
wait_file "$WORK/b.log" 30
# -v prints a counters line after each tick: the first one means attached.
# No -d: on a busy machine C may start late and run long; stopped once C is gone.
"$LOADER" --all-cgroups -v -o "$WORK/all.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "^counters:" 60 || fail "the loader did not start ticking"
# Started after the attach, in its own cgroup, and gone before the loader stops.
run_in "$gc" "$WORK/c.log" "$PROGS/spin" -s 1 -i 1000; C=${PIDS[-1]}
wait "$C" || fail "spin C failed"
kill -TERM "$A" "$Bp"
wait "$A" || fail "spin A failed"
wait "$Bp" || fail "spin B failed"
kill -INT "$L"
wait_exit "$L" 60 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "loader failed"; }
pids=$($CHECK "$WORK/all.pb.gz" pids)
echo "$pids" | grep -q "^$A spin ${base%/}/gpuprobe-test-a-$$ " || { echo "$pids"; fail "pid $A not labelled with its cgroup"; }
echo "$pids" | grep -q "^$Bp spin ${base%/}/gpuprobe-test-b-$$ " || { echo "$pids"; fail "pid $Bp not labelled with its cgroup"; }
ok "two processes in two cgroups, both found and labelled"

want=$(sed -n 's/^spin: launches=//p' "$WORK/c.log")
[ -n "$want" ] && [ "$want" -gt 0 ] || fail "spin C printed no launch count"
echo "$pids" | grep -q "^$C spin ${base%/}/gpuprobe-test-c-$$ " || { echo "$pids"; fail "pid $C (started later) not found or not labelled with its cgroup"; }
[ "$(echo "$pids" | grep -c "^$C ")" = 1 ] || { echo "$pids"; fail "pid $C has samples under more than one label set"; }
$CHECK "$WORK/all.pb.gz" totals "$C" >"$WORK/c.totals"
# A node-wide loader beside this test (a shared machine) may hold C's ring
# first: the loader says so, and C's launches count with no GPU record. Only then.
if has_line "$WORK/err" "pid $C (spin): its shim ring is read by another gpuprobe-bpf"; then
	grep -v "^spin_site \[no GPU record\] 0 " "$WORK/c.totals" && fail "pid $C: GPU time from a ring another loader read"
	got=$(awk '{n += $NF} END {print n + 0}' "$WORK/c.totals")
	[ "$got" = "$want" ] || { cat "$WORK/c.totals"; fail "pid $C (its ring read by another loader): $got launches in the profile, it made $want"; }
	ok "a process started after the attach, in its own cgroup: labelled, $want launches exact (its ring read by another loader: no GPU time)"
else
	grep -v " spin_kernel " "$WORK/c.totals" && { cat "$WORK/c.totals"; fail "pid $C has samples other than spin_kernel (unattributed?)"; }
	got=$(awk '{n += $4} END {print n + 0}' "$WORK/c.totals")
	ns=$(awk '{n += $3} END {print n + 0}' "$WORK/c.totals")
	[ "$got" = "$want" ] || { cat "$WORK/c.totals"; fail "pid $C: $got launches in the profile, it made $want"; }
	[ "$ns" = $((want * 1000)) ] || fail "pid $C: GPU time $ns != $want x 1000 ns"
	ok "a process started after the attach, in its own cgroup: labelled, $want launches exact"
fi

# A and B ran before the loader: their calls before the probes went in are
# "before_attach"; every one after has its launch event. Read per pid from
# the profile: the counters line is machine-wide (other CUDA processes here).
for p in "$A" "$Bp" "$C"; do
	$CHECK "$WORK/all.pb.gz" totals "$p" >"$WORK/p.totals"
	grep "^\[unattributed: no launch event\]" "$WORK/p.totals" &&
		{ grep "^counters:" "$WORK/err" | tail -n 1; fail "pid $p: API records without a launch event (attach time taken too early?)"; }
done
ok "calls before the attach counted as before_attach, none without a launch event"
