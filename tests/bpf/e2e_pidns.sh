#!/usr/bin/env bash
# A workload in its own PID and mount namespaces (as in a container), started
# through a wrapper: its shim sees its own pids and tids, BPF the host's; the
# join translates (NSpid) and stays exact.
source "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || skip "no unshare"
out="$WORK/ns.pb.gz"
LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$out" --libcuda "$STUBLIB" -- \
	unshare --pid --fork --mount-proc "$PROGS/launcher" -t 3 -n 20 2>"$WORK/err" ||
	{ cat "$WORK/err"; fail "loader failed"; }
$CHECK "$out" launcher 3 20 || { cat "$WORK/err"; fail "profile mismatch across a pid namespace"; }
grep -q "unattributed=0 " "$WORK/err" || { cat "$WORK/err"; fail "unattributed activities"; }
ok "exact profile of a workload in its own pid namespace"
