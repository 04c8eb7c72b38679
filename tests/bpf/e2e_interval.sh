#!/usr/bin/env bash
# --interval: one timestamped profile per interval and a last one at the end,
# each a valid gzip pprof, no temporary file left, and together they hold
# every launch of a -- COMMAND run exactly once (no window lost, none
# overwritten by a later one with the same name). Both runs go side by side.
source "$(dirname "$0")/lib.sh"

start() { # NAME INTERVAL SECS
	mkdir "$WORK/$1"
	LD_LIBRARY_PATH="$B/stub" "$LOADER" --interval "$2" -o "$WORK/$1/gp.pb.gz" --libcuda "$STUBLIB" \
		-- "$PROGS/spin" -s "$3" -i 500 >"$WORK/$1.log" 2>"$WORK/$1.err" &
	PIDS+=($!); eval "L_${1//-/_}=$!"
}
check() { # NAME INTERVAL SECS MIN_FILES
	local name=$1 iv=$2 secs=$3 min=$4 want got=0 ns=0 n f files l=L_${1//-/_}
	wait_exit "${!l}" $((secs + 60)) || { cat "$WORK/$name.err"; fail "$name: loader failed"; }
	want=$(sed -n 's/^spin: launches=//p' "$WORK/$name.log")
	[ -n "$want" ] || fail "$name: the program did not finish"
	ls "$WORK/$name" | grep -v '^gp-[0-9]\{8\}T[0-9]\{6\}Z\(-[0-9]\+\)\?\.pb\.gz$' &&
		fail "$name: files other than gp-YYYYMMDDTHHMMSSZ.pb.gz (temporary files?)"
	files=$(ls "$WORK/$name" | wc -l)
	[ "$files" -ge "$min" ] || { ls "$WORK/$name"; fail "$name: $files profiles, want at least $min"; }
	for f in "$WORK/$name"/*; do
		[ "$(head -c2 "$f" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "$name: $f is not gzip"
		$CHECK "$f" totals >"$WORK/$name.totals" || fail "$name: go tool pprof cannot read $f"
		grep -v " spin_kernel " "$WORK/$name.totals" && fail "$name: $f has other samples (unattributed?)"
		n=$(awk '{n += $4} END {print n + 0}' "$WORK/$name.totals")
		got=$((got + n))
		ns=$((ns + $(awk '{n += $3} END {print n + 0}' "$WORK/$name.totals")))
	done
	[ "$got" = "$want" ] || { ls -l "$WORK/$name"; fail "$name: $got launches across $files profiles, the program made $want"; }
	[ "$ns" = $((want * 1000)) ] || fail "$name: GPU time $ns != $want x 1000 ns"
	ok "$name: --interval $iv over a ${secs} s run: $files valid profiles, $got launches, all of them"
}
# At least 3 profiles where 5 (and 7) are due: under load a window can end
# late, and the next is counted from there; only a loader that loses windows
# writes fewer (the exact check: every launch in exactly one of them).
start one-second 1 4
# Windows shorter than a second must not share a name and overwrite each other.
start sub-second 0.3 2
check one-second 1 4 3
check sub-second 0.3 2 3
