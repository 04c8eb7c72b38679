#!/usr/bin/env bash
# The stack cache end to end, on the stub vendor with the real BPF program,
# loader and shim (tests/progs/keys.c):
#  - launches whose keys it holds arrive as hits (no stack copy) and keep
#    their exact stacks and GPU time, with CFI and with frame pointers, in
#    one profile and across --interval windows;
#  - a constructed collision (two call paths with one key) is caught by an
#    audit, the key is split, and both stacks come out right;
#  - a library unloaded and another loaded at its address gives the new names
#    (and the launches before keep the old ones; the Python counterpart, a
#    code object made at a freed one's address, is e2e_cache_python.sh);
#  - a cache too small for the stacks gives copies, never a wrong stack.
# Each program waits (GO file) until the loader has installed its first keys,
# so that what follows meets a filled cache.
source "$(dirname "$0")/lib.sh"

source "$(dirname "$0")/cache_lib.sh"

K="$PROGS/keys"

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

# The same across --interval windows: the keys installed in the first window
# answer after windows have been written and the stack tables compacted.
rm -f "$WORK/go"
mkdir "$WORK/win"
start_loader "$WORK/win/w.pb.gz" --interval 0.2 -- "$K" rotate $N "$WORK/go"
wait_until 60 installed 4 || fail "--interval: no keys installed: $(grep '^loader' "$E" | tail -1)"
wait_lines "$E" "^tables:" 2 60 || fail "--interval: no two windows written"
touch "$WORK/go"
finish_loader
got=0
for f in "$WORK"/win/*; do
	$CHECK "$f" totals >"$WORK/totals" || fail "go tool pprof cannot read $f"
	got=$((got + $(awk '{n += $4} END {print n + 0}' "$WORK/totals")))
done
hits=$(field cache_hits "$E") audits=$(field cache_audits "$E")
[ "$got" = $((4 * N)) ] && [ $((hits + audits)) = $((4 * (N - 1))) ] ||
	fail "--interval: $got launches in $(ls "$WORK/win" | wc -l) windows, want $((4 * N)); hits $hits audits $audits"
ok "--interval: $(ls "$WORK/win" | wc -l) windows hold all $((4 * N)) launches; after two windows, $hits hits and $audits audits"

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
# first one's key, and its stacks are named after the second is in). The
# program lives until the second library's key is installed too: the loader
# reads the new mappings when it meets their first launch, and a process
# gone by then (a loaded machine) would keep its stacks unnamed.
rm -f "$WORK/go" "$WORK/done"
start_loader "$WORK/rel.pb.gz" -- "$K" reload $N "$PROGS/libgp_keys_a.so" "$PROGS/libgp_keys_b.so" \
	"$WORK/go" "$WORK/done"
go_after_installs 1 "$WORK/go"
go_after_installs 2 "$WORK/done"
finish_loader
grep -q "keys: launches=$((2 * N))" "$E.out" || fail "keys reload: $(cat "$E.out") $(tail -3 "$E")"
$SC "$WORK/rel.pb.gz" split keys_kernel keylib_a_site=$N keylib_b_site=$N >"$WORK/check" ||
	fail "a library reloaded at the same address: $(cat "$WORK/check")"
[ "$(field maps_changed "$E")" -ge 1 ] || fail "the loader saw no mapping change: $(grep '^loader' "$E" | tail -1)"
ok "a library unloaded and another at its address: $(cat "$WORK/check")"

# 4. Two keys for four stacks: copies, evictions, never a wrong stack (few
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
