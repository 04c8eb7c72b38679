#!/usr/bin/env bash
# PC sampling (--pc-sampling) on the stub vendor, whose CUPTI samples each
# kernel of grid g with g long_scoreboard and 1 selected at +0x40 and g wait
# at +0x80, and g - 1 of long_scoreboard's again as long_scoreboard_not_issued
# (stub/cupti/pcsampling.c):
#  - exact: every (site, instruction, stall) of tests/progs/launcher holds
#    its samples, each instruction under its kernel, in that kernel's cubin
#    mapping at its offset, and dup_relu's samples (two call sites, one
#    cubin CRC) shared between its sites by their GPU time. The shim's
#    thread never collects here (GPUPROBE_FLUSH_MS: a minute): what it gets
#    it gets when the launcher unloads its modules, whose uncollected
#    samples the stub drops as they go (continuous collection's rule), so
#    a shim that did not collect at an unload loses them; the _not_issued
#    samples are counted (pc_not_issued), not added;
#  - a collection blocked inside CUPTI while the application unloads a
#    module (the stub holds the shim's first GetData until an unload has
#    finished, and that unload waits until the GetData is held): the
#    application goes on, and what was not collected is counted
#    (pc_unload_busy, pc_dropped), never waited for;
#  - the report lists the heaviest kernels' stall reasons;
#  - without --pc-sampling, the profile has no pc_samples and the shim
#    samples nothing; a target that samples on its own (GPUPROBE_PC_SAMPLING
#    in its environment) has its samples left out, counted pc_unasked; with a
#    period that samples nothing, the report says so.
source "$(dirname "$0")/lib.sh"

T=4 N=10
run() { # NAME [ENV...]: the launcher under the loader with --pc-sampling
	local name=$1
	shift
	env "$@" LD_LIBRARY_PATH="$B/stub" "$LOADER" --pc-sampling -o "$WORK/$name.pb.gz" -- \
		"$PROGS/launcher" -t $T -n $N >"$WORK/$name.out" 2>"$WORK/$name.err" ||
		{ tail -5 "$WORK/$name.err"; fail "$name: the loader or the launcher failed"; }
}

run exact GPUPROBE_FLUSH_MS=60000
$CHECK "$WORK/exact.pb.gz" pc-launcher $T $N || { grep "^counters" "$WORK/exact.err"; fail "PC samples"; }
$CHECK "$WORK/exact.pb.gz" launcher $T $N >/dev/null || fail "the GPU time beside them"
L=$((T * N))
want=$(((2 * (3 + 5 + 2 + 4 + 7 + 1 + 1) + 7) * L))
# The stub's long_scoreboard_not_issued (g - 1 a launch) counts samples again: never added.
not_issued=$(((2 + 4 + 1 + 3 + 6) * L))
[ "$(counter "$WORK/exact.err" pc_samples)" = $want ] && [ "$(counter "$WORK/exact.err" pc_not_issued)" = $not_issued ] && [ "$(counter "$WORK/exact.err" pc_cupti_total)" = $want ] &&
	[ "$(counter "$WORK/exact.err" pc_dropped)" = 0 ] && [ "$(counter "$WORK/exact.err" pc_unload_busy)" = 0 ] &&
	[ "$(counter "$WORK/exact.err" pc_no_cubin)" = 0 ] ||
	fail "want $want PC samples, none lost: $(grep '^counters' "$WORK/exact.err")"

# The report: the heaviest kernels' stall reasons (lib_scale, grid 7: 7 + 7 + 1 a launch).
grep -qE "^  lib_scale +$((15 * L))  (long_scoreboard|wait) 46\.7%, (long_scoreboard|wait) 46\.7%, selected 6\.7%; hottest \+0x40 53\.3%$" \
	"$WORK/exact.err" || fail "the report's stall reasons: $(grep -A6 '^PC samples' "$WORK/exact.err")"

run held GPUPROBE_FLUSH_MS=20 GPUPROBE_STUB_PC_GETDATA_WAIT=1
grep -q "stub: pc GetData held until an unload finished" "$WORK/held.err" ||
	fail "the unload waited for the shim's collection: $(grep 'stub: pc' "$WORK/held.err")"
busy=$(counter "$WORK/held.err" pc_unload_busy)
[ "${busy:-0}" -ge 1 ] || fail "no unload found the collector busy: $(grep '^counters' "$WORK/held.err")"
# How many the held collection keeps depends on how many unloads it outlasts;
# what CUPTI counted dropped is said by a later collection, and the last one
# (at exit) may itself find the collector busy (counted in pc_unload_busy).
kept=$(counter "$WORK/held.err" pc_samples) lost=$(counter "$WORK/held.err" pc_dropped)
total=$(counter "$WORK/held.err" pc_cupti_total)
[ "${lost:-0}" -ge 1 ] && [ "$total" = $want ] && [ $((kept + lost)) -le "$total" ] ||
	fail "kept $kept and dropped $lost of $total (want $want)"

LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/off.pb.gz" -- "$PROGS/launcher" -t 1 -n 2 \
	>/dev/null 2>"$WORK/off.err" || fail "without --pc-sampling"
! grep -q "^PC samples" "$WORK/off.err" || fail "a PC samples section without --pc-sampling"
# A period that samples nothing (the stub, as the H200, below 2^11): said so.
LD_LIBRARY_PATH="$B/stub" "$LOADER" --pc-sampling=8 -o "$WORK/none.pb.gz" -- "$PROGS/launcher" -t 1 -n 2 \
	>/dev/null 2>"$WORK/none.err" || fail "--pc-sampling=8"
grep -q "^PC samples: none in this profile" "$WORK/none.err" && [ "$(counter "$WORK/none.err" pc_cupti_total)" = 0 ] ||
	fail "no sample, unsaid: $(grep -A2 '^PC samples' "$WORK/none.err")"
! go tool pprof -raw "$WORK/off.pb.gz" 2>/dev/null | grep -q pc_samples || fail "pc_samples without --pc-sampling"
[ "$(counter "$WORK/off.err" pc_cupti_total)" = 0 ] || fail "the shim sampled unasked"
GPUPROBE_PC_SAMPLING=17 LD_LIBRARY_PATH="$B/stub" "$LOADER" -o "$WORK/own.pb.gz" -- "$PROGS/launcher" -t 1 -n 2 \
	>/dev/null 2>"$WORK/own.err" || fail "a target sampling on its own"
unasked=$(counter "$WORK/own.err" pc_unasked)
[ "${unasked:-0}" -gt 0 ] && [ "$(counter "$WORK/own.err" pc_samples)" = 0 ] && ! grep -q "^PC samples" "$WORK/own.err" ||
	fail "PC records taken without --pc-sampling: $(grep '^counters' "$WORK/own.err")"
! go tool pprof -raw "$WORK/own.pb.gz" 2>/dev/null | grep -q pc_samples || fail "pc_samples from a target sampling unasked"
ok "$want PC samples exact under their instructions, kernels and sites; a collection held in CUPTI" \
	"over an unload cost $lost samples, counted, and no wait; $unasked records of a target sampling unasked left out"
