#!/usr/bin/env bash
# One tenant (cgroup) whose stacks pass through fresh files by the dozen
# cannot spend the loader's time on their symbol tables: a process of one
# cgroup launches once through each of K copies of a library whose symbol
# table takes milliseconds to load (libgp_keys_big.so, 60,000 functions),
# against a load budget made small for the test (30 ms) and paid back
# slowly (a 10,000th of the time, not a tenth: the first cgroup's debt
# stays for the test's length). Its first files are named, the rest refused
# (loads_refused; their frames named by file and offset), and the verdict
# says so. A process of another cgroup, after, loads a fresh copy of its
# own: named, every launch, its budget untouched by the first's debt.
source "$(dirname "$0")/lib.sh"

test_cgroups lh lo
gh=${CGS[0]} go=${CGS[1]}
# Runs keys libs N GO LIB... in cgroup CG with the shim; its log LOG.
keys_in() { # CG LOG N GO LIB...
	local cg=$1 log=$2
	shift 2
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" \
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$PROGS/keys" libs "$@" >"$log" 2>&1 &
}

K=24
libs=()
for i in $(seq 1 $K); do
	cp "$PROGS/libgp_keys_big.so" "$WORK/libgp_keys_big_$i.so" # each its own inode: its own load
	libs+=("$WORK/libgp_keys_big_$i.so")
done
cp "$PROGS/libgp_keys_big.so" "$WORK/libgp_keys_other.so"

GPUPROBE_TEST_LOAD_BUDGET_NS=30000000 GPUPROBE_TEST_LOAD_REFILL=10000 "$LOADER" --all-cgroups -v -o "$WORK/all.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
wait_line "$WORK/err" "^counters:" 60 || { cat "$WORK/err"; fail "the loader did not start"; }

keys_in "$gh" "$WORK/h.log" 1 "$WORK/go_h" "${libs[@]}"
H=$!
PIDS+=($H)
# Its driver found by the loader's scan, then its ring read.
wait_line "$WORK/err" "attached to $STUBLIB of pid" 60 || { grep -v "^libbpf\|^counters\|^loader" "$WORK/err"; fail "the first tenant's libcuda was not attached"; }
wait_line "$WORK/err" "reading the shim ring of pid $H" 60 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "the first tenant's ring was not read"; }
wait_recording "$H" 60 || fail "its shim never recorded under the loader"
touch "$WORK/go_h"
wait "$H" || { cat "$WORK/h.log"; fail "keys (first tenant) failed"; }
# Its stacks are named once the loader has seen it exit: the refusals come then.
refused() { [ "$(counter "$WORK/err" loads_refused)" -ge 1 ] 2>/dev/null; }
wait_until 60 refused || { grep "^counters:" "$WORK/err" | tail -n 1; fail "no load of the first tenant's refused"; }

keys_in "$go" "$WORK/o.log" 5 "$WORK/go_o" "$WORK/libgp_keys_other.so"
O=$!
PIDS+=($O)
wait_line "$WORK/err" "reading the shim ring of pid $O" 60 || fail "the other tenant's ring was not read"
wait_recording "$O" 60 || fail "its shim never recorded under the loader"
touch "$WORK/go_o"
wait "$O" || { cat "$WORK/o.log"; fail "keys (other tenant) failed"; }
kill -INT "$L"
wait_exit "$L" 60 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "loader failed"; }

refused=$(counter "$WORK/err" loads_refused)
$CHECK "$WORK/all.pb.gz" totals "$H" >"$WORK/h.totals"
$CHECK "$WORK/all.pb.gz" totals "$O" >"$WORK/o.totals"
count() { awk -v s="$2" '$1==s {n += $4} END {print n + 0}' "$1"; } # TOTALS SITE
named=$(count "$WORK/h.totals" keylib_big_site) unnamed=$(count "$WORK/h.totals" "?")
[ $((named + unnamed)) = $K ] || { cat "$WORK/h.totals"; fail "the first tenant: $named + $unnamed launches, it made $K"; }
[ "$unnamed" -ge 1 ] || { cat "$WORK/h.totals"; fail "every file of the first tenant named: no budget (loads_refused=$refused)"; }
[ "$refused" -ge "$unnamed" ] || fail "loads_refused=$refused, yet $unnamed launches unnamed"
grep -q "^verdict: .*losses: .*loads_refused=[1-9]" "$WORK/err" ||
	fail "the refused loads are not named a loss: $(grep "^verdict" "$WORK/err")"
other=$(count "$WORK/o.totals" keylib_big_site)
[ "$other" = 5 ] || { cat "$WORK/o.totals"; fail "the other tenant: $other of 5 launches named"; }
ok "one cgroup's $K fresh libraries: $named named, $unnamed refused (loads_refused=$refused); another cgroup's fresh copy named, 5 of 5"
