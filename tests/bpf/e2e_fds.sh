#!/usr/bin/env bash
# The loader closes only the fds it opened: a --pid or --all-cgroups run has
# no -- COMMAND child, and its launcher's fds (none) must not be taken for
# fd 0 (stdin) and closed, twice, at the end.
source "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || skip "strace not installed (sudo make deps)"

# Runs the loader under strace (its main thread, which ends the session) and
# fails when it closed fd 0 or never closed anything (strace saw nothing).
check_closes() { # NAME LOADER-ARGS...
	local name=$1 rc; shift
	set +e
	strace -qq -o "$WORK/$name.trace" -e trace=close "$LOADER" -o "$WORK/$name.pb.gz" "$@" \
		</dev/null 2>"$WORK/$name.err"
	rc=$?
	set -e
	[ $rc = 0 ] || { cat "$WORK/$name.err"; fail "$name: the loader exited $rc"; }
	[ -s "$WORK/$name.pb.gz" ] || fail "$name: no profile written"
	grep -q '^close(' "$WORK/$name.trace" || fail "$name: strace saw no close at all"
	if grep '^close(0)' "$WORK/$name.trace"; then
		fail "$name: the loader closed fd 0, which it never opened"
	fi
	ok "$name: fd 0 left alone"
}

start_stub "$PROGS/spin" -s 0 -i 2000 >"$WORK/spin.log"; A=${PIDS[-1]}
wait_file "$WORK/spin.log" 30
check_closes pid --pid "$A" -d 1
check_closes all --all-cgroups -d 1
