#!/usr/bin/env bash
# --all-cgroups: two processes in two cgroups, started before the loader,
# found by scanning every process's maps (no --libcuda), each labelled with
# its own cgroup.
source "$(dirname "$0")/lib.sh"

cgroot=$(awk '$3=="cgroup2"{print $2; exit}' /proc/self/mounts)
[ -n "$cgroot" ] || { echo "SKIP: no cgroup2 mount"; exit 0; }
base=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
dir="$cgroot${base%/}"
# A cgroup with processes cannot take children where controllers are enabled;
# ours only needs plain membership, so create siblings under our parent dir.
ga="$dir/gpuprobe-test-a-$$"; gb="$dir/gpuprobe-test-b-$$"
mkdir "$ga" "$gb" || { echo "SKIP: cannot create cgroups under $dir"; exit 0; }
cleanup_cg() { rmdir "$ga" "$gb" 2>/dev/null || true; cleanup; }
trap cleanup_cg EXIT
run_in() { # CGROUP LOG ARGS...
	local cg=$1 log=$2; shift 2
	CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" \
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@" >"$log" &
	PIDS+=($!)
}
run_in "$ga" "$WORK/a.log" "$PROGS/spin" -s 3 -i 2000; A=${PIDS[-1]}
run_in "$gb" "$WORK/b.log" "$PROGS/spin" -s 3 -i 2000 -g 3; Bp=${PIDS[-1]}
wait_file "$WORK/a.log" 5
wait_file "$WORK/b.log" 5
"$LOADER" --all-cgroups -d 1.5 -o "$WORK/all.pb.gz" 2>"$WORK/err" || { cat "$WORK/err"; fail "loader failed"; }
pids=$($CHECK "$WORK/all.pb.gz" pids)
echo "$pids" | grep -q "^$A spin ${base%/}/gpuprobe-test-a-$$ " || { echo "$pids"; cat "$WORK/err"; fail "pid $A not labelled with its cgroup"; }
echo "$pids" | grep -q "^$Bp spin ${base%/}/gpuprobe-test-b-$$ " || { echo "$pids"; fail "pid $Bp not labelled with its cgroup"; }
ok "two processes in two cgroups, both found and labelled"
wait "$A"; wait "$Bp"
