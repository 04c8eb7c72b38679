#!/usr/bin/env bash
# make check's one total, from the verdicts every runner recorded in FILE
# (tools/testlib.sh): the failed and the skipped tests by name, then the
# closing line "check: N passed, M failed, K skipped". Exit 1 when a test
# failed, when a stage recorded no verdict (tools/check-stage.sh), or when a
# test was skipped on a machine that can run them all (root, BPF: CI's).
# Usage: check-summary.sh FILE
set -uo pipefail
source "$(dirname "$0")/testlib.sh"
f=$1
[ -f "$f" ] || { echo "check: no verdicts recorded in $f" >&2; echo "check: 0 passed, 1 failed, 0 skipped"; exit 1; }
count() { awk -F'\t' -v v="$1" '$1 == v {n++} END {print n + 0}' "$f"; }
list() { awk -F'\t' -v v="$1" '$1 == v {printf "  %-6s %s%s\n", $2, $3, ($4 == "" ? "" : ": " $4)}' "$f"; }
p=$(count pass) fl=$(count fail) sk=$(count skip)
[ "$fl" = 0 ] || { echo "check: failed:"; list fail; }
[ "$sk" = 0 ] || { echo "check: skipped:"; list skip; }
rc=0
[ "$fl" = 0 ] || rc=1
if [ "$sk" != 0 ]; then
	if can_run_all; then
		echo "check: $sk skipped on a machine that can run every test (root, BPF): that fails the check"
		rc=1
	else
		echo "check: $sk skipped: this machine cannot run them (not root, or no BPF); CI runs them all"
	fi
fi
echo "check: $p passed, $fl failed, $sk skipped"
exit $rc
