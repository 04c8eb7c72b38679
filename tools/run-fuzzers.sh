#!/usr/bin/env bash
# Runs each fuzzer for SECONDS over its committed seed corpus (tests/fuzz/corpus/NAME),
# with new inputs kept in build/fuzz/corpus/NAME and a crashing input written to
# build/fuzz/artifacts/. Every fuzzer runs even after one fails; each verdict is
# printed (and recorded for make check, tools/testlib.sh), then one closing line
# "fuzz: N passed, M failed, 0 skipped". Exit 1 when one failed.
# Usage: run-fuzzers.sh SECONDS FUZZER...
set -uo pipefail
source "$(dirname "$0")/testlib.sh"
secs=$1; shift
pass=0 fail=0
for f in "$@"; do
	name=$(basename "$f") dir=$(dirname "$f")
	seeds="tests/fuzz/corpus/$name" work="$dir/corpus/$name" log="$dir/$name.log"
	mkdir -p "$work" "$seeds" "$dir/artifacts"
	start=$(date +%s)
	"$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
		-artifact_prefix="$dir/artifacts/$name-" "$work" "$seeds" >"$log" 2>&1
	rc=$?
	el=$(( $(date +%s) - start ))
	if [ $rc = 0 ]; then
		pass=$((pass + 1)); record pass fuzz "$name" ""
		printf '  PASS     %s (%ss)\n' "$name" "$el"
	else
		fail=$((fail + 1)); record fail fuzz "$name" "exit $rc"
		printf '  FAIL     %s (exit %s, %ss), log %s:\n' "$name" "$rc" "$el" "$log"
		tail -n 60 "$log" | indent
	fi
done
echo "fuzz: $pass passed, $fail failed, 0 skipped"
[ $fail = 0 ]
