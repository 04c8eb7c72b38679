#!/usr/bin/env bash
# Autograd engines made up by other processes cannot blind an --all-cgroups
# loader for good: 16 processes, each on its own copy of the stand-in engine
# (tests/progs/autograd_cases hold), take every autograd slot; a 17th's
# engine is refused, counted (autograd_engines part no_slot), and probed
# once those processes are gone and the sweep has freed their slots.
source "$(dirname "$0")/lib.sh"

hold() { # I: autograd_cases hold on its own copy of the engine, its log $WORK/h$I.log
	mkdir -p "$WORK/e$1"
	cp "$PROGS/libtorch_cpu.so" "$WORK/e$1/"
	LD_LIBRARY_PATH="$WORK/e$1:$B/stub" "$PROGS/autograd_cases" hold >"$WORK/h$1.log" 2>&1 &
	PIDS+=($!)
	HOLDER=$!
}

"$LOADER" --all-cgroups -v --libcuda "$STUBLIB" -o "$WORK/a.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "^counters:" 30 || { tail -c 2000 "$WORK/err"; fail "the loader did not start ticking"; }
HOLDERS=()
for i in $(seq 16); do
	hold "$i"
	HOLDERS+=("$HOLDER")
done
for i in $(seq 16); do
	wait_line "$WORK/h$i.log" "^held$" 60 || { cat "$WORK/h$i.log"; fail "holder $i was never probed"; }
done
hold 17
LAST=$HOLDER
wait_line "$WORK/err" "^counters: .*[ (]no_slot=1" 60 ||
	{ grep "^counters:" "$WORK/err" | tail -n 1; fail "the 17th engine was not refused a slot"; }
grep -q "^held$" "$WORK/h17.log" && fail "the 17th engine was probed while 16 held every slot"
kill "${HOLDERS[@]}"
wait_line "$WORK/h17.log" "^held$" 60 ||
	{ grep "^counters:" "$WORK/err" | tail -n 1; fail "the 17th engine was not probed once the slots were freed"; }
kill "$LAST"
kill -INT "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err"; fail "loader failed"; }
[ "$(counter "$WORK/err" autograd_engines)" = 17 ] && [ "$(counter "$WORK/err" no_slot)" = 1 ] ||
	{ grep "^counters:" "$WORK/err" | tail -n 1; fail "autograd counters"; }
ok "16 made-up engines took every autograd slot: a 17th refused, counted, then probed once they were gone"
