# Helpers of the stack cache's end-to-end tests (sourced after lib.sh): a
# loader run with -v in the background, its line fields, and the GO handshake.
SC="python3 $ROOT/tests/bpf/stack_check.py"
# The value of NAME on the last line of FILE that has it (counters: or loader:).
field() { # NAME FILE
	grep -o " $1=[0-9.]*" "$2" | tail -1 | cut -d= -f2
}
# Starts the loader (-v) on a command in the background; L is its pid, E its stderr.
start_loader() { # OUT ARGS... -- COMMAND...
	local out=$1
	shift
	E="$WORK/$(basename "$out" .pb.gz).err"
	LD_LIBRARY_PATH="$B/stub" "$LOADER" -v -o "$out" "$@" >"$E.out" 2>"$E" &
	L=$!
	PIDS+=($L)
}
installed() { [ "$(field cache_installs "$E")" -ge "$1" ] 2>/dev/null; } # N
# Touches GO once the loader's line counts at least N keys installed.
go_after_installs() { # N GO
	wait_until 60 installed "$1" ||
		fail "the loader installed fewer than $1 keys in 60 s: $(grep '^loader' "$E" | tail -1)"
	touch "$2"
}
finish_loader() {
	wait_exit "$L" 60 || fail "loader failed: $(grep -v '^libbpf\|^counters\|^loader' "$E" | tail -5)"
}
