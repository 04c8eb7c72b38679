# Sourced by tools/gpu/bench and probe_cost.sh: with PIN=CPU set, app_pin
# runs a command on that CPU and ldr_pin on the CPUs of every other core
# (lscpu), so a loader never shares the measured program's core; both are
# empty arrays without PIN. Exits 2 for a CPU that does not exist.
app_pin=() ldr_pin=()
if [ -n "${PIN:-}" ]; then
	pin_core=$(lscpu -p=CPU,CORE | awk -F, -v c="$PIN" '$1==c {print $2}')
	pin_others=$(lscpu -p=CPU,CORE |
		awk -F, -v k="$pin_core" '!/^#/ && $2 != k {printf "%s%s", s, $1; s = ","}')
	[ -n "$pin_core" ] && [ -n "$pin_others" ] ||
		{ echo "${0##*/}: PIN=$PIN: no such CPU" >&2; exit 2; }
	app_pin=(taskset -c "$PIN") ldr_pin=(taskset -c "$pin_others")
	echo "${0##*/}: workload on CPU $PIN (core $pin_core), loaders on $pin_others" >&2
fi
