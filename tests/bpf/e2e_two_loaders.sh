#!/usr/bin/env bash
# Two loaders on one pid: the first keeps the shim ring (one reader per ring:
# two would split or double the records); the second finds it held by a live,
# fresh reader, leaves it alone, says so in one line naming the other loader,
# and still counts launches. Both exit cleanly; the program is unharmed.
source "$(dirname "$0")/lib.sh"

SECS=2
start_stub "$PROGS/spin" -S -s $SECS -i 1000 >"$WORK/p.log"; P=${PIDS[-1]}
wait_file "$WORK/p.log" 30
# -v: A says when it has the ring.
"$LOADER" -v --pid "$P" -o "$WORK/a.pb.gz" 2>"$WORK/a.err" & LA=$!
PIDS+=($LA)
wait_line "$WORK/a.err" "reading the shim ring of pid $P" 60 || fail "loader A never read the ring"
# B probes with a perf uprobe per entry point (A: the kernel's default, one
# multi link on 6.6+): both kinds on the same functions, each count exact.
GPUPROBE_UPROBES=perf "$LOADER" -v --pid "$P" -o "$WORK/b.pb.gz" 2>"$WORK/b.err" & LB=$!
PIDS+=($LB)
# B's first tick (the counters line after it) has met the ring: only then go.
wait_line "$WORK/b.err" "^counters:" 60 || fail "loader B did not start ticking"
kill -USR1 "$P"
start=$(date +%s%N)
wait "$P" || fail "the program failed"
el=$(( ($(date +%s%N) - start) / 1000000 ))
# A bound that only a program held by a loader fails, not a loaded machine.
[ $el -lt $(( SECS * 1000 + 3000 )) ] || fail "the program ran ${el} ms, asked for ${SECS} s"
want=$(sed -n 's/^spin: launches=//p' "$WORK/p.log")
[ -n "$want" ] || fail "the program did not finish its work"
wait_exit "$LA" 60 || { grep -v "^libbpf\|^counters" "$WORK/a.err"; fail "loader A failed"; }
wait_exit "$LB" 60 || { grep -v "^libbpf\|^counters" "$WORK/b.err"; fail "loader B failed"; }
ok "the program ran unharmed ($want launches); both loaders exited 0"
grep -q "uprobes: one per entry point" "$WORK/b.err" || fail "B did not use a uprobe per entry point"

# A read every record: its profile is exact.
$CHECK "$WORK/a.pb.gz" totals >"$WORK/a.totals"
grep -v " spin_kernel " "$WORK/a.totals" && fail "A: samples other than spin_kernel (unattributed?)"
got=$(awk '{n += $4} END {print n + 0}' "$WORK/a.totals")
[ "$got" = "$want" ] || { grep "^counters" "$WORK/a.err" | tail -1; fail "A: $got launches in its profile, the program made $want"; }
ok "loader A kept the ring: all $want launches, exact"
# B never read the ring, yet counted every launch.
grep "^counters:" "$WORK/b.err" | tail -1 >"$WORK/b.ctr"
grep -q "^counters: launch_events=$want " "$WORK/b.ctr" || { cat "$WORK/b.ctr"; fail "B: did not count the $want launches"; }
grep -q " records=0 .* joined=0 " "$WORK/b.ctr" || { cat "$WORK/b.ctr"; fail "B: read the ring held by A"; }
$CHECK "$WORK/b.pb.gz" totals >"$WORK/b.totals"
# Its profile holds the launches it saw, none with GPU time: no record came.
grep -v "^spin_site \[no GPU record\] 0 " "$WORK/b.totals" &&
	{ cat "$WORK/b.totals"; fail "B: GPU time from a ring it should have left to A"; }
[ "$(awk '{n += $NF} END {print n + 0}' "$WORK/b.totals")" = "$want" ] ||
	{ cat "$WORK/b.totals"; fail "B: not every launch it counted is in its profile"; }
ok "loader B left the ring to A and counted the launches"
# ... and said why, once.
n=$(grep -c "read by another gpuprobe-bpf (pid $LA)" "$WORK/b.err" || true)
[ "$n" = 1 ] && grep -q "pid $P.* read by another gpuprobe-bpf (pid $LA)" "$WORK/b.err" ||
	{ grep -v "^libbpf\|^counters" "$WORK/b.err"; fail "B: want one line saying pid $P's ring is read by another gpuprobe-bpf (pid $LA)"; }
grep -q "cannot read its shim ring\|has no gpuprobe shim" "$WORK/b.err" && { grep -v "^libbpf\|^counters" "$WORK/b.err"; fail "B: a misleading message"; }
ok "loader B said in one line that pid $P's ring is read by gpuprobe-bpf pid $LA"

# A node-wide loader already running does not take the ring of a -- COMMAND
# run: that ring was made for the COMMAND's loader, which gets every record.
"$LOADER" --all-cgroups --libcuda "$STUBLIB" -v -d 8 -o "$WORK/node.pb.gz" 2>"$WORK/node.err" &
LN=$!
PIDS+=($LN)
wait_line "$WORK/node.err" "^counters:" 60 || fail "the node-wide loader did not start ticking"
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/cmd.pb.gz" -- "$PROGS/launcher" -t 3 -n 30 \
	>"$WORK/cmd.out" 2>"$WORK/cmd.err" || fail "the -- COMMAND loader failed: $(tail -3 "$WORK/cmd.err")"
$CHECK "$WORK/cmd.pb.gz" launcher 3 30 || fail "the -- COMMAND run's profile is not exact beside a node-wide loader"
kill -INT $LN; wait $LN || true
CP=$($CHECK "$WORK/cmd.pb.gz" pids | awk '{print $1; exit}')
[ -n "$CP" ] || fail "no pid in the -- COMMAND profile"
# The node-wide loader saw the launches but read none of that ring's records
# (it may not even have tried before the short run ended).
$CHECK "$WORK/node.pb.gz" totals "$CP" >"$WORK/node.totals"
# (Launches it saw without a record are in its profile, with no GPU time;
# under "?" when the run ended before the loader read its maps.)
grep -v "^\[unattributed\|^\([a-z_]*\|?\) \[no GPU record\] 0 [0-9]*$" "$WORK/node.totals" &&
	fail "the node-wide loader has GPU time of pid $CP: it read a ring that was not its own"
if grep -q "pid $CP .*shim ring" "$WORK/node.err"; then
	grep "pid $CP .*shim ring" "$WORK/node.err" | grep -q "read by another gpuprobe-bpf" ||
		{ grep -v "^libbpf\|^counters" "$WORK/node.err"; fail "the node-wide loader's line about pid $CP"; }
fi
ok "a -- COMMAND run keeps its ring beside a node-wide --all-cgroups loader, exact profile"
