#!/usr/bin/env bash
# Runs test binaries and scripts, prints each verdict and one closing line
# "N passed, N failed". Usage: run-tests.sh KIND BUILD TEST...
set -uo pipefail
kind=$1 build=$2; shift 2
pass=0 fail=0 failed=()
export GP_BUILD=$(cd "$build" && pwd)
for t in "$@"; do
	name=$(basename "$t")
	log="$build/logs/$kind-$name.log"; mkdir -p "$(dirname "$log")"
	start=$(date +%s)
	if [[ "$t" == *.sh ]]; then
		timeout 600 bash "$t" >"$log" 2>&1; rc=$?
	else
		timeout 600 "$t" >"$log" 2>&1; rc=$?
	fi
	secs=$(( $(date +%s) - start ))
	if [ $rc = 0 ]; then
		pass=$((pass + 1)); printf '  PASS     %s (%ss)\n' "$name" "$secs"
	else
		fail=$((fail + 1)); failed+=("$name"); printf '  FAIL     %s (exit %s, %ss), log:\n' "$name" "$rc" "$secs"
		tail -n 40 "$log" | sed 's/^/    | /'
	fi
done
echo "$kind: $pass passed, $fail failed"
[ -n "${GP_SUMMARY:-}" ] && echo "$kind $pass $fail" >>"$GP_SUMMARY"
[ $fail = 0 ]
