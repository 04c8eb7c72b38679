#!/usr/bin/env bash
# Runs tests, prints each verdict and one closing line
# "SUITE: N passed, M failed, K skipped".
#
#   run-tests.sh SUITE BUILD TEST...               run them
#   run-tests.sh --skip REASON SUITE BUILD TEST... count each as skipped, run none
#
# A TEST is a cmocka binary (each of its cases is a test: its own verdict, a
# skipped case's reason, a failed case's assertion lines), a script (*.sh,
# run with bash) or a command line with its arguments (one word with
# spaces); a script or command passes with exit 0, skips with exit 77 (the
# last line it printed says why), fails otherwise. A cmocka binary that
# exits non-zero with no failed case (a sanitizer's report, a crash between
# cases) fails as a whole. Each test runs at most GP_TEST_TIMEOUT seconds
# (default 600). Logs: BUILD/logs/SUITE-NAME.log. With GP_SUMMARY set, every
# verdict goes there too (tools/testlib.sh), for make check's one total.
# Exit status 1 when a test failed, or when one was skipped on a machine that
# can run them all (root, BPF: tools/testlib.sh can_run_all); else 0.
set -uo pipefail
source "$(dirname "$0")/testlib.sh"

skip_all=
if [ "${1:-}" = --skip ]; then
	skip_all=$2; shift 2
fi
suite=$1 build=$2; shift 2
pass=0 fail=0 skipped=0
mkdir -p "$build/logs"
export GP_BUILD=$(cd "$build" && pwd)

verdict() { # VERDICT NAME DETAIL
	case $1 in
	pass) pass=$((pass + 1)) ;;
	fail) fail=$((fail + 1)) ;;
	skip) skipped=$((skipped + 1)); printf '  SKIP     %s: %s\n' "$2" "$3" ;;
	esac
	record "$1" "$suite" "$2" "$3"
}

# The cmocka cases of LOG, one line each: VERDICT<TAB>CASE<TAB>REASON, VERDICT
# pass, fail, skip or crash (started, never ended); each failed or crashed
# case's own lines go to EXCERPTS, under a "--- CASE" line. A binary that
# runs several groups repeats names: cases after the first group say which.
parse_cmocka() { # LOG EXCERPTS
	awk -v excerpts="$2" '
	function flush_block(name,   i, from) {
		print "--- " name >excerpts
		from = n > 40 ? n - 40 + 1 : 1
		for (i = from; i <= n; i++)
			print blk[i] >excerpts
	}
	/^\[==========\] Running [0-9]+ test/ { group++; next }
	/^\[ RUN      \] / {
		cur = substr($0, 14); if (group > 1) cur = cur " (group " group ")"
		n = 0; reason = ""; open = 1; next
	}
	open && /^\[       OK \] / { print "pass\t" cur "\t"; open = 0; next }
	open && /^\[  FAILED  \] / { print "fail\t" cur "\t"; flush_block(cur); open = 0; next }
	open && /^\[  SKIPPED \] / {
		if (reason == "" && n) reason = blk[n]
		print "skip\t" cur "\t" (reason == "" ? "(the case printed no reason)" : reason)
		open = 0; next
	}
	open {
		blk[++n] = $0
		if ($0 ~ /^\[  SKIP    \] /) { reason = substr($0, 14); sub(/^[A-Za-z0-9_]+: /, "", reason) }
	}
	END { if (open) { print "crash\t" cur "\t"; flush_block(cur) } }
	' "$1"
}

# A sanitizer's report in LOG, else its tail.
report_excerpt() { # LOG
	local at
	at=$(grep -n -m1 -E 'WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:' "$1" | cut -d: -f1)
	if [ -n "$at" ]; then sed -n "${at},$((at + 40))p" "$1"; else tail -n 40 "$1"; fi
}

run_cmocka_or_command() { # NAME LOG RC SECS
	local name=$1 log=$2 rc=$3 secs=$4 results excerpts v c r cases=0 bad=0 why
	results=$(mktemp) excerpts=$(mktemp)
	parse_cmocka "$log" "$excerpts" >"$results"
	while IFS=$'\t' read -r v c r; do
		cases=$((cases + 1))
		case $v in
		pass) verdict pass "$name: $c" "" ;;
		skip) verdict skip "$name: $c" "$r" ;;
		fail|crash)
			bad=$((bad + 1))
			why="failed"
			[ "$v" = crash ] && why="never ended: exit $rc$([ "$rc" = 124 ] && echo ", timed out")"
			verdict fail "$name: $c" "$why"
			printf '  FAIL     %s: %s (%s), log %s:\n' "$name" "$c" "$why" "$log"
			awk -v want="--- $c" '$0 == want {on = 1; next} /^--- / {on = 0} on' "$excerpts" | indent
			;;
		esac
	done <"$results"
	rm -f "$results" "$excerpts"
	if [ $cases = 0 ]; then # not a cmocka binary: its exit status says
		command_verdict "$name" "$log" "$rc" "$secs"
		return
	fi
	if [ "$rc" != 0 ] && [ $bad = 0 ]; then
		verdict fail "$name" "exit $rc after its cases$([ "$rc" = 124 ] && echo ": timed out")"
		printf '  FAIL     %s (exit %s after %s cases, %ss), log %s:\n' "$name" "$rc" "$cases" "$secs" "$log"
		report_excerpt "$log" | indent
	elif [ $bad = 0 ]; then
		printf '  PASS     %s (%s cases, %ss)\n' "$name" "$cases" "$secs"
	fi
}

command_verdict() { # NAME LOG RC SECS
	local name=$1 log=$2 rc=$3 secs=$4
	if [ "$rc" = 0 ]; then
		verdict pass "$name" ""
		printf '  PASS     %s (%ss)\n' "$name" "$secs"
	elif [ "$rc" = $GP_SKIP ]; then
		verdict skip "$name" "$(grep . "$log" | tail -n 1 | sed 's/^\(SKIP\|skip\):* *//')"
	else
		# A script's own failure message (tests/bpf/lib.sh fail) names what broke.
		verdict fail "$name" "exit $rc$([ "$rc" = 124 ] && echo ", timed out")$(grep -m1 '^FAIL: ' "$log" | sed 's/^FAIL:/:/')"
		printf '  FAIL     %s (exit %s, %ss), log %s:\n' "$name" "$rc" "$secs" "$log"
		tail -n 40 "$log" | indent
	fi
}

# One test run at a time on this machine: a node-wide loader (--all-cgroups,
# its ring watch) claims every shim ring of the machine, another run's too,
# and a --pid test then finds its target's ring held (seen beside another
# worktree's make check). Runs that take this lock wait for each other.
if [ -z "$skip_all" ] && command -v flock >/dev/null; then
	exec 9>>/tmp/gpuprobe-tests.lock
	if ! flock -n 9; then
		echo "$suite: waiting for another test run on this machine (/tmp/gpuprobe-tests.lock)"
		flock -w 3600 9 || echo "$suite: still locked after an hour: running beside it" >&2
	fi
fi

for t in "$@"; do
	name=$(basename "${t%% *}")
	if [ -n "$skip_all" ]; then
		verdict skip "$name" "$skip_all"
		continue
	fi
	log="$build/logs/$suite-$name.log"
	start=$(date +%s)
	if [[ "$t" == *" "* ]]; then
		timeout "${GP_TEST_TIMEOUT:-600}" bash -c "$t" >"$log" 2>&1 9>&-; rc=$?
	elif [[ "$t" == *.sh ]]; then
		timeout "${GP_TEST_TIMEOUT:-600}" bash "$t" >"$log" 2>&1 9>&-; rc=$?
	else
		timeout "${GP_TEST_TIMEOUT:-600}" "$t" >"$log" 2>&1 9>&-; rc=$?
	fi
	secs=$(( $(date +%s) - start ))
	if [[ "$t" == *.sh ]] || [[ "$t" == *" "* ]]; then
		command_verdict "$name" "$log" $rc $secs
	else
		run_cmocka_or_command "$name" "$log" $rc $secs
	fi
done
echo "$suite: $pass passed, $fail failed, $skipped skipped"
[ $fail = 0 ] || exit 1
if [ $skipped != 0 ] && can_run_all; then
	echo "$suite: $skipped skipped on a machine that can run them all (root, BPF): that fails" >&2
	exit 1
fi
exit 0
