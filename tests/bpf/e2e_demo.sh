#!/usr/bin/env bash
# make demo's own run (tools/demo.sh, into a directory of the test's): each
# step printed after the exact command that made it, the report opening
# with its verdict, the profile's top functions and one whole stack, every
# GPU nanosecond joined, and no stack in its profile cut short by the copy
# sizes (--stack-copy auto): no "[truncated: ...]", no "[native frames
# missing: ...]". A stack left without its native frames because the BPF
# ring was busy depends on the machine's scheduling: counted, not failed.
source "$(dirname "$0")/lib.sh"

DEMO_OUT="$WORK" bash "$ROOT/tools/demo.sh" "$B" >"$WORK/out" 2>&1 || { tail -20 "$WORK/out"; fail "tools/demo.sh failed"; }
cmd=$(grep -m1 '^\$ ' "$WORK/out")
case "$cmd" in
"\$ env LD_LIBRARY_PATH=$B/stub $B/gpuprobe-bpf -o $WORK/demo.pb.gz --trace $WORK/demo.json "*"-- $B/tests/progs/launcher -t 4 -n 200") ;;
*) fail "the first step does not print the loader's command: $cmd" ;;
esac
v=$(grep -m1 "^verdict: " "$WORK/out") || fail "no verdict line"
echo "$v" | grep -q ", 5612 GPU activities, 5612 joined (100.0%)," || fail "not every activity joined: $v"
grep -q '^\$ go tool pprof -top ' "$WORK/out" && grep -q "flat%" "$WORK/out" || fail "no pprof -top of the profile"
grep -q '^\$ go tool pprof -traces ' "$WORK/out" || fail "no -traces step"
awk '/pprof -traces/ {on = 1} on && /launcher \(pid [0-9]+\)$/ {found = 1} END {exit !found}' "$WORK/out" ||
	fail "the -traces step shows no whole stack down to its process"
go tool pprof -traces "$WORK/demo.pb.gz" 2>/dev/null >"$WORK/traces"
if grep -E "\[truncated: |\[native frames missing: " "$WORK/traces" | sort | uniq -c | grep .; then
	fail "stacks cut short in the demo's profile (above)"
fi
busy=$(grep -c "ring buffer busy" "$WORK/traces" || true)
ok "make demo: $v; no stack cut short by its copy ($busy without native frames: the ring was busy)"
