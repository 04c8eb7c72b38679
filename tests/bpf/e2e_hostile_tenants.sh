#!/usr/bin/env bash
# One tenant (cgroup) starting stallers by the dozen cannot take the
# workers the others' calls need: six processes of one cgroup each map a
# libcuda.so.1 on a FUSE file system that stops answering
# (tests/progs/hostile_fuse), and a node-wide loader's walk to each blocks
# in a bounded worker it gives up. The cgroup is refused at its fourth
# stuck worker (io_stuck <= 4, io_tenants_refused >= 1); a spin in another
# cgroup, started after, is attached and profiled exactly.
source "$(dirname "$0")/lib.sh"

[ -c /dev/fuse ] || skip "no /dev/fuse"
test_cgroups h s
gh=${CGS[0]} gs=${CGS[1]}

N=6
for i in $(seq 1 $N); do
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$gh" \
		"$PROGS/hostile_fuse" "$WORK/fuse$i" "$STUBLIB" >"$WORK/h$i.log" 2>&1 &
	PIDS+=($!)
done
for i in $(seq 1 $N); do
	wait_line "$WORK/h$i.log" "ready" 20 || { cat "$WORK/h$i.log"; fail "hostile_fuse $i did not start"; }
done

"$LOADER" --all-cgroups -v -o "$WORK/all.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
# Every staller met: each is given up once (io_timeouts), or refused with its cgroup.
met() { local t r; t=$(counter "$WORK/err" io_timeouts); r=$(counter "$WORK/err" io_refused)
	[ $(( ${t:-0} + ${r:-0} )) -ge $N ]; }
wait_until 120 met || { grep "^counters:" "$WORK/err" | tail -n 1; fail "the loader did not meet the $N stallers"; }

# Another tenant, after: attached (its driver file too: the stallers' calls
# about it were refused with them) and profiled, every launch with its GPU
# time. It launches once the loader has attached to it and reads its ring.
CUDA_INJECTION64_PATH="$SHIM" LD_LIBRARY_PATH="$B/stub" \
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$gs" "$PROGS/spin" -S -s 1 -i 1000 >"$WORK/s.log" &
S=$!
PIDS+=($S)
# Its driver file is probed once attached for any process (another may have mapped it first).
wait_line "$WORK/err" "attached to $STUBLIB of pid" 60 || { grep -v "^libbpf\|^counters\|^loader" "$WORK/err"; fail "the other tenant's libcuda was not attached"; }
wait_line "$WORK/err" "reading the shim ring of pid $S" 60 || fail "the other tenant's ring was not read"
wait_recording "$S" 60 || fail "its shim never recorded under the loader"
kill -USR1 "$S"
wait "$S" || fail "spin failed"
kill -INT "$L"
wait_exit "$L" 60 || { grep -v "^libbpf\|^counters" "$WORK/err"; fail "loader failed"; }

stuck=$(counter "$WORK/err" io_stuck) tr=$(counter "$WORK/err" io_tenants_refused) ref=$(counter "$WORK/err" io_refused)
[ "${stuck:-99}" -le 4 ] || fail "$stuck workers stuck for one cgroup's stallers (its bound is 4)"
[ "${tr:-0}" -ge 1 ] || fail "io_tenants_refused=$tr: the stallers' cgroup was not refused"
[ "${ref:-0}" -ge 1 ] || fail "io_refused=$ref"
want=$(spin_exact "$WORK/all.pb.gz" "$S" "$WORK/s.log" "the other tenant's spin")
ok "$N stallers of one cgroup: $stuck workers stuck, the cgroup refused ($ref calls); another cgroup's spin exact ($want launches)"
