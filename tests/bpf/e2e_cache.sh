#!/usr/bin/env bash
# The stack cache end to end, on the stub vendor with the real BPF program,
# loader and shim (tests/progs/keys.c, tests/bpf/pyreuse.py):
#  - launches whose keys it holds arrive as hits (no stack copy) and keep
#    their exact stacks and GPU time, with CFI and with frame pointers, in
#    one profile and across --interval windows;
#  - a constructed collision (two call paths with one key) is caught by an
#    audit, the key is split, and both stacks come out right;
#  - a library unloaded and another loaded at its address, and a Python code
#    object freed and another made at its address, give the new names (and
#    the launches before keep the old ones);
#  - a cache too small for the stacks gives copies, never a wrong stack.
# Each program waits (GO file) until the loader has installed its first keys,
# so that what follows meets a filled cache.
source "$(dirname "$0")/lib.sh"

K="$PROGS/keys"
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
# Touches GO once the loader's line counts at least N keys installed.
go_after_installs() { # N GO
	for _ in $(seq 1 600); do
		[ "$(field cache_installs "$E")" -ge "$1" ] 2>/dev/null && { touch "$2"; return 0; }
		sleep 0.05
	done
	fail "the loader installed fewer than $1 keys: $(grep '^loader' "$E" | tail -1)"
}
finish_loader() {
	wait_exit "$L" 60 || fail "loader failed: $(grep -v '^libbpf\|^counters\|^loader' "$E" | tail -5)"
}

# 1. Hits: four call sites, one round, then (the cache filled) N more rounds.
N=3000
for mode in cfi fp; do
	rm -f "$WORK/go"
	start_loader "$WORK/rot-$mode.pb.gz" --unwind $mode -- "$K" rotate $N "$WORK/go"
	go_after_installs 4 "$WORK/go"
	finish_loader
	grep -q "keys: launches=$((4 * N))" "$E.out" || fail "keys rotate did not run: $(cat "$E.out")"
	$SC "$WORK/rot-$mode.pb.gz" $([ $mode = fp ] && echo split-fp || echo split) keys_kernel rot_0=$N rot_1=$N rot_2=$N rot_3=$N >"$WORK/check" ||
		fail "$mode: stacks with the cache: $(cat "$WORK/check")"
	hits=$(field cache_hits "$E") audits=$(field cache_audits "$E") misses=$(field cache_misses "$E")
	[ $((hits + audits)) = $((4 * (N - 1))) ] && [ "$misses" = 4 ] ||
		fail "$mode: after the first round every launch should hit: hits=$hits audits=$audits misses=$misses"
	[ "$(field unattributed "$E")" = 0 ] && [ "$(field stack_cache_mismatch "$E")" = 0 ] ||
		fail "$mode: $(grep '^counters' "$E" | tail -1)"
	ok "$mode: $hits hits (no stack copy) and $audits audits of $((4 * N)) launches, every stack exact: $(cat "$WORK/check")"
done

# The same across --interval windows: the cache outlives each window's compaction.
rm -f "$WORK/go"
mkdir "$WORK/win"
start_loader "$WORK/win/w.pb.gz" --interval 0.2 -- "$K" rotate $N "$WORK/go"
go_after_installs 4 "$WORK/go"
finish_loader
got=0
for f in "$WORK"/win/*; do
	$CHECK "$f" totals >"$WORK/totals" || fail "go tool pprof cannot read $f"
	got=$((got + $(awk '{n += $4} END {print n + 0}' "$WORK/totals")))
done
[ "$got" = $((4 * N)) ] && [ "$(field cache_hits "$E")" -gt 0 ] ||
	fail "--interval: $got launches in $(ls "$WORK/win" | wc -l) windows, want $((4 * N)); hits $(field cache_hits "$E")"
ok "--interval: $(ls "$WORK/win" | wc -l) windows hold all $((4 * N)) launches, $(field cache_hits "$E") of them hits"

# 2. A collision: site_a's key installed, then site_b launches with that key.
# Every hit audited (--stack-audit 1): the first is caught, the key split,
# and no hit was ever given a wrong stack (no mismatch).
# Audits copy their stacks: few enough launches that the ring (16 MiB) could
# hold all of them unread, so no copy is ever skipped for room.
C=1000 M=500
rm -f "$WORK/go"
start_loader "$WORK/col.pb.gz" --stack-audit 1 -- "$K" collide $C $M "$WORK/go"
go_after_installs 1 "$WORK/go"
finish_loader
$SC "$WORK/col.pb.gz" split keys_kernel site_a=$((2 * C)) site_b=$M >"$WORK/check" ||
	fail "a collision: $(cat "$WORK/check")"
grep -q "two stacks under one stack-cache key .* is site_a .* site_b\|two stacks under one stack-cache key .* is site_b .* site_a" "$E" ||
	fail "no split named site_a and site_b: $(grep 'two stacks' "$E")"
[ "$(field stack_cache_mismatch "$E")" = 0 ] && [ "$(field cache_splits "$E")" -ge 1 ] &&
	[ "$(field cache_unusable_launches "$E")" = 0 ] ||
	fail "a collision: $(grep '^loader' "$E" | tail -1 | tr ' ' '\n' | grep cache_ | tr '\n' ' ')"
ok "a collision is caught by an audit and split on the word that tells site_a from site_b: $(cat "$WORK/check")"

# 3. A library unloaded and another loaded at its address (the cache held the
# first one's key, and its stacks are named after the second is in).
rm -f "$WORK/go"
start_loader "$WORK/rel.pb.gz" -- "$K" reload $N "$PROGS/libgp_keys_a.so" "$PROGS/libgp_keys_b.so" "$WORK/go"
go_after_installs 1 "$WORK/go"
finish_loader
grep -q "keys: launches=$((2 * N))" "$E.out" || fail "keys reload: $(cat "$E.out") $(tail -3 "$E")"
$SC "$WORK/rel.pb.gz" split keys_kernel keylib_a_site=$N keylib_b_site=$N >"$WORK/check" ||
	fail "a library reloaded at the same address: $(cat "$WORK/check")"
[ "$(field maps_changed "$E")" -ge 1 ] || fail "the loader saw no mapping change: $(grep '^loader' "$E" | tail -1)"
ok "a library unloaded and another at its address: $(cat "$WORK/check")"

# 4. A Python code object freed and another made at its address.
PY=${GP_TEST_PYTHON:-/usr/bin/python3}
if "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
	rm -f "$WORK/go"
	start_loader "$WORK/py.pb.gz" -- "$PY" "$ROOT/tests/bpf/pyreuse.py" $N "$WORK/ready" "$WORK/go"
	wait_line "$E" "CPython 3" 30 || fail "the loader did not find CPython: $(grep -v '^libbpf\|^counters\|^loader' "$E")"
	touch "$WORK/ready"
	go_after_installs 1 "$WORK/go"
	finish_loader
	grep -q "pyreuse: launches=$((2 * N))" "$E.out" || fail "pyreuse: $(cat "$E.out")"
	$SC "$WORK/py.pb.gz" split py_reuse first_fn=$N other_fn=$N >"$WORK/check" ||
		fail "a code object made at a freed one's address: $(cat "$WORK/check")"
	[ "$(field py_replaced "$E")" -ge 1 ] || fail "no code object found replaced: $(grep '^loader' "$E" | tail -1)"
	ok "$("$PY" -V): a code object made at a freed one's address: $(cat "$WORK/check")"
else
	echo "skip: no CPython 3.11+ at $PY: the reused code object case is not run"
fi

# 5. Two keys for four stacks: copies, evictions, never a wrong stack (few
# enough launches that their copies fit the ring unread).
rm -f "$WORK/go"
start_loader "$WORK/small.pb.gz" --stack-cache 2 -- "$K" rotate $C "$WORK/go"
go_after_installs 2 "$WORK/go"
finish_loader
$SC "$WORK/small.pb.gz" split keys_kernel rot_0=$C rot_1=$C rot_2=$C rot_3=$C >"$WORK/check" ||
	fail "a cache of two keys: $(cat "$WORK/check")"
[ "$(field cache_evicted "$E")" -gt 0 ] && [ "$(field cache_keys "$E")" -le 2 ] ||
	fail "a cache of two keys: $(grep '^loader' "$E" | tail -1 | tr ' ' '\n' | grep cache_ | tr '\n' ' ')"
ok "a cache of two keys for four stacks: $(field cache_evicted "$E") evictions, $(cat "$WORK/check")"
