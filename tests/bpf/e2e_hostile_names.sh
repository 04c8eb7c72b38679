#!/usr/bin/env bash
# Names without end: processes of one cgroup, each naming a new kernel in
# every record of a shim ring of its own (tests/progs/hostile_ring -N), one
# after another, fill that cgroup's share of the loader's names (a table of
# 256 KiB here, GPUPROBE_TEST_NAMES_BYTES), not one share each and then the
# table: spin, started after them in a cgroup of its own, has its kernel
# named (DESIGN.md invariants 5 and 8).
source "$(dirname "$0")/lib.sh"

test_cgroups names-h names-s
gh=${CGS[0]} gs=${CGS[1]}
GPUPROBE_TEST_NAMES_BYTES=262144 LD_LIBRARY_PATH="$B/stub" "$LOADER" -v -o "$WORK/names.pb.gz" \
	--libcuda "$STUBLIB" --cupti "$B/stub/libcupti.so" -- \
	sh -c 'echo $$ >"$0/cgroup.procs" || exit 1
		for i in 1 2 3 4 5 6; do "$2/hostile_ring" -N -s 1 >"$3/n$i.log" || exit 1; done
		echo $$ >"$1/cgroup.procs" || exit 1
		exec "$2/spin" -s 2 -i 1000' "$gh" "$gs" "$PROGS" "$WORK" \
	>"$WORK/spin.log" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_exit "$L" 120 || { tail -c 2000 "$WORK/err"; fail "loader failed beside rings of new names"; }
for i in 1 2 3 4 5 6; do grep -q "ready" "$WORK/n$i.log" || fail "hostile_ring -N $i did not run"; done
over=$(counter "$WORK/err" names_over_share)
[ "${over:-0}" -gt 0 ] || { grep "^counters:" "$WORK/err" | tail -n 1; fail "the rings' names were not held to a share (names_over_share=$over)"; }
S=$(sed -n 's/^spin: ready pid=//p' "$WORK/spin.log")
want=$(spin_exact "$WORK/names.pb.gz" "$S" "$WORK/spin.log" "spin beside rings of new names")
ok "six processes of one cgroup naming a new kernel in every record: held to that cgroup's share ($over names refused), spin's $want launches named"
