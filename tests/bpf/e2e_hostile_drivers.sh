#!/usr/bin/env bash
# A process mapping 64 files named libcuda.so.1 (tests/bpf/hostile_drivers.py)
# cannot blind an --all-cgroups loader to the real driver:
#  - 64 one-function look-alikes are refused (not CUDA drivers: they lack the
#    driver's own exports), said once, counted; a program on the real driver
#    started afterwards is attached and profiled exactly;
#  - 64 copies of a real driver take every attach slot (a program on another
#    driver file is refused, said once), and once they are unmapped their
#    slots are freed and that program is attached and profiled exactly.
source "$(dirname "$0")/lib.sh"

# spin's driver: a copy of the stub no other process maps (one mapped by
# anything else on the machine would be attached for that process first).
REAL="$WORK/real"
mkdir -p "$REAL" && cp "$B"/stub/* "$REAL"/
# Runs spin on that driver, waiting for SIGUSR1 before it launches.
start_spin() { # LOG
	STUB_DIR=$REAL start_stub "$PROGS/spin" -S -s 1 -i 1000 >"$1"
	SPIN=${PIDS[-1]}
	wait_line "$1" "ready" 10 || fail "spin did not start"
}
# Lets spin launch once the loader says it attached the stub driver for it.
spin_when_attached() { # ERR LOG
	wait_line "$1" "attached to $REAL/libcuda.so.1 of pid $SPIN\$" 60 ||
		{ grep "gpuprobe-bpf:" "$1"; grep "^counters:" "$1" | tail -n 1; fail "the real driver of pid $SPIN was never attached"; }
	kill -USR1 "$SPIN"
	wait "$SPIN" || fail "spin failed"
}
# spin's launches in the profile are all it made, each with its GPU time.
spin_exact() { # PROFILE LOG
	local want got ns
	want=$(sed -n 's/^spin: launches=//p' "$2")
	[ -n "$want" ] && [ "$want" -gt 0 ] || fail "spin printed no launch count"
	$CHECK "$1" totals "$SPIN" >"$WORK/totals"
	got=$(awk '$2=="spin_kernel" {n += $4} END {print n + 0}' "$WORK/totals")
	ns=$(awk '$2=="spin_kernel" {n += $3} END {print n + 0}' "$WORK/totals")
	[ "$got" = "$want" ] && [ "$ns" = $((want * 1000)) ] ||
		{ cat "$WORK/totals"; fail "spin: $got launches ($ns ns) in the profile, it made $want"; }
	echo "$want"
}

# --- 64 one-function look-alikes
printf 'int cuLaunchKernel(void) { return 0; }\n' >"$WORK/fake.c"
cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$WORK/fake.so" "$WORK/fake.c" || fail "cannot build the fake driver"
python3 "$ROOT/tests/bpf/hostile_drivers.py" "$WORK/fakes" "$WORK/fake.so" 64 >"$WORK/h.log" & H=$!
PIDS+=($H)
wait_line "$WORK/h.log" "ready" 30 || fail "hostile_drivers did not start"
"$LOADER" --all-cgroups -v -o "$WORK/a.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "^counters:" 30 || { tail -c 2000 "$WORK/err"; fail "the loader did not start ticking"; }
start_spin "$WORK/spin.log"
spin_when_attached "$WORK/err" "$WORK/spin.log"
kill -INT "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err"; fail "loader failed"; }
n=$(spin_exact "$WORK/a.pb.gz" "$WORK/spin.log")
said=$(grep -c "which is not a CUDA driver" "$WORK/err" || true)
[ "$said" = 1 ] || fail "the refusal was said $said times, not once"
grep -q "pid $H maps $WORK/fakes/d[0-9]*/libcuda.so.1, which is not a CUDA driver" "$WORK/err" ||
	fail "the refusal does not name the look-alike"
refused=$(counter "$WORK/err" libcuda_refused)
[ "${refused:-0}" -ge 64 ] || { grep "^counters:" "$WORK/err" | tail -n 1; fail "libcuda_refused=$refused"; }
ok "64 look-alikes refused (said once, $refused counted); the real driver attached, $n launches exact"
kill -TERM "$H"; wait "$H" || true

# --- 64 real drivers, then unmapped: their slots come back
python3 "$ROOT/tests/bpf/hostile_drivers.py" "$WORK/copies" "$STUBLIB" 64 >"$WORK/h2.log" & H=$!
PIDS+=($H)
wait_line "$WORK/h2.log" "ready" 30 || fail "hostile_drivers (copies) did not start"
"$LOADER" --all-cgroups -v -o "$WORK/b.pb.gz" 2>"$WORK/err2" & L=$!
PIDS+=($L)
wait_line "$WORK/err2" "^counters:" 30 || { tail -c 2000 "$WORK/err2"; fail "the loader did not start ticking"; }
start_spin "$WORK/spin2.log"
wait_line "$WORK/err2" "every attach slot is taken" 30 ||
	{ grep -m 8 "gpuprobe-bpf:" "$WORK/err2"; fail "the copies did not take every slot (or it was not said)"; }
kill -USR1 "$H"
wait_line "$WORK/h2.log" "unmapped" 10 || fail "hostile_drivers did not unmap"
spin_when_attached "$WORK/err2" "$WORK/spin2.log"
kill -INT "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err2"; fail "loader failed"; }
n=$(spin_exact "$WORK/b.pb.gz" "$WORK/spin2.log")
detached=$(counter "$WORK/err2" libcuda_detached)
[ "${detached:-0}" -ge 1 ] || fail "libcuda_detached=$detached"
[ "$(grep -c "every attach slot is taken" "$WORK/err2")" = 1 ] || fail "no-slot refusal said more than once"
ok "64 drivers took every slot; unmapped, $detached slots freed and the real driver attached, $n launches exact"
