#!/usr/bin/env bash
# Runs each fuzzer for SECONDS over its committed seed corpus (tests/fuzz/corpus/NAME),
# with new inputs kept in build/fuzz/corpus/NAME. Usage: run-fuzzers.sh SECONDS FUZZER...
set -euo pipefail
secs=$1; shift
for f in "$@"; do
	name=$(basename "$f")
	seeds="tests/fuzz/corpus/$name"; work="$(dirname "$f")/corpus/$name"
	mkdir -p "$work" "$seeds"
	echo "  FUZZ     $name (${secs}s)"
	"$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
		"$work" "$seeds" >"$(dirname "$f")/$name.log" 2>&1 || {
		tail -n 60 "$(dirname "$f")/$name.log"; echo "fuzzer $name failed" >&2; exit 1; }
done
