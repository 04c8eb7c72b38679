#!/usr/bin/env bash
# A process whose maps name a libcuda.so.1 on a FUSE file system it serves
# and stops answering (tests/progs/hostile_fuse) cannot hold the loader: the
# walk to that file, which blocks in the kernel for as long as the daemon
# wants, runs in a worker process the loader waits for at most 250 ms; the loader
# keeps ticking, counts the call it gave up (io_timeouts) and asks that
# process nothing more that could block, and SIGTERM ends the run with its
# profile written. Then the same file behind an overlay the process made
# (refused), and an overlay the node made (read).
source "$(dirname "$0")/lib.sh"

[ -c /dev/fuse ] || skip "no /dev/fuse"
counters() { grep -c "^counters:" "$1" 2>/dev/null || true; }

"$PROGS/hostile_fuse" "$WORK/fuse" "$STUBLIB" >"$WORK/h.log" 2>&1 & H=$!
PIDS+=($H)
wait_line "$WORK/h.log" "ready" 10 || { cat "$WORK/h.log"; fail "hostile_fuse did not start"; }
grep -q " $WORK/fuse/libcuda.so.1\$" "/proc/$H/maps" || fail "hostile_fuse maps no libcuda from FUSE"

# --pid opens the maps' libcuda files at start, then every 2 s.
"$LOADER" --pid "$H" -v -o "$WORK/fuse.pb.gz" 2>"$WORK/err" & L=$!
PIDS+=($L)
for _ in $(seq 1 1200); do [ "$(counters "$WORK/err")" -ge 30 ] && break; sleep 0.05; done
n=$(counters "$WORK/err")
[ "$n" -ge 30 ] || { tail -c 2000 "$WORK/err"; fail "the loader made $n ticks in 60 s beside a FUSE file that never answers"; }
t=$(counter "$WORK/err" io_timeouts)
[ "${t:-0}" -ge 1 ] || { grep "^counters:" "$WORK/err" | tail -n 1; fail "no call was given up (io_timeouts=$t)"; }
stuck=$(counter "$WORK/err" io_stuck)
[ "${stuck:-9}" -le 1 ] || fail "$stuck workers stuck: the process was asked again"
kill -TERM "$L"
wait_exit "$L" 30 || { tail -c 2000 "$WORK/err"; fail "the loader failed after SIGTERM"; }
[ -s "$WORK/fuse.pb.gz" ] || fail "no profile written"
ok "a FUSE file that never answers: $n ticks, $t call given up ($stuck worker stuck), SIGTERM ends the run with its profile"

# A FUSE daemon that answers all but reads: the file is found and opened,
# and only a read of it would wait. The loader opens no file on a FUSE
# mount (its reads of libcuda's ELF are not bounded calls): it refuses the
# file, says so once, counts it, and ticks on.
kill -TERM "$H"
wait_exit "$H" 30 || fail "hostile_fuse did not end"
# hostile_fuse in MODE at DIR, beside a loader (--pid): it ticks on, says
# the file at PATH refused and counts it. Sets H (left running) and r.
refused_beside() { # MODE DIR PATH WHAT
	local n L err="$WORK/err-$1"
	"$PROGS/hostile_fuse" "$2" "$STUBLIB" "$1" >"$WORK/h-$1.log" 2>&1 & H=$!
	PIDS+=($H)
	wait_line "$WORK/h-$1.log" "ready" 10 || { cat "$WORK/h-$1.log"; fail "hostile_fuse ($1) did not start"; }
	grep -q " $3\$" "/proc/$H/maps" || fail "hostile_fuse ($1) maps no $3"
	"$LOADER" --pid "$H" -v -o "$WORK/$1.pb.gz" 2>"$err" & L=$!
	PIDS+=($L)
	for _ in $(seq 1 1200); do [ "$(counters "$err")" -ge 30 ] && break; sleep 0.05; done
	n=$(counters "$err")
	[ "$n" -ge 30 ] || { tail -c 2000 "$err"; fail "the loader made $n ticks in 60 s beside $4"; }
	grep -q "maps $3 on a FUSE file system, or an overlay not in the node's mount table: not opened" "$err" ||
		fail "$4: not said refused: $(grep -v '^libbpf\|^counters\|^loader' "$err" | head -5)"
	r=$(counter "$err" libcuda_refused)
	[ "${r:-0}" -ge 1 ] || fail "$4: libcuda_refused=$r"
	kill -TERM "$L"
	wait_exit "$L" 30 || { tail -c 2000 "$err"; fail "the loader failed after SIGTERM beside $4"; }
	ok "$4: refused unread (libcuda_refused=$r), $n ticks"
}
refused_beside reads "$WORK/fuse2" "$WORK/fuse2/libcuda.so.1" "a FUSE file whose reads never end"

# The same file under an overlay whose lower layers are on that FUSE mount,
# made in the process's own namespace (over its /tmp): the overlay's type
# hides the FUSE one, and its reads reach the daemon all the same. An
# overlay not in the node's mount table is refused as FUSE is: the loader
# ticks on and says so.
kill -TERM "$H"
wait_exit "$H" 30 || fail "hostile_fuse (reads) did not end"
refused_beside overlay "$WORK/fuse3" /tmp/libcuda.so.1 "an overlay over FUSE made in the process's namespace"

# An overlay the node mounted (a container runtime's root file system) is
# read: its libcuda is attached and its launches are profiled.
mkdir -p "$WORK/l1" "$WORK/l2" "$WORK/ovl"
cp "$B"/stub/* "$WORK/l1/"
mount -t overlay overlay -o "lowerdir=$WORK/l1:$WORK/l2" "$WORK/ovl" || skip "no overlayfs here"
# Unmounted before cleanup removes the work directory; cleanup reads the
# test's exit status from $? (errexit off: a failed status must not end the trap).
cleanup_ovl() { local rc=$?; set +e; umount -l "$WORK/ovl" 2>/dev/null; (exit $rc); cleanup; }
trap cleanup_ovl EXIT
STUB_DIR="$WORK/ovl" start_stub "$PROGS/spin" -s 2 -i 2000 >"$WORK/spin.log"
S=${PIDS[-1]}
wait_line "$WORK/spin.log" "ready" 10 || fail "spin did not start"
grep -q " $WORK/ovl/libcuda.so.1\$" "/proc/$S/maps" || fail "spin maps no libcuda from the overlay"
"$LOADER" --pid "$S" -v -o "$WORK/ovl.pb.gz" 2>"$WORK/err4" || fail "the loader failed: $(tail -c 1000 "$WORK/err4")"
grep -q "attached to $WORK/ovl/libcuda.so.1 of pid $S" "$WORK/err4" ||
	fail "the node's overlay was not read: $(grep -v '^libbpf\|^counters\|^loader' "$WORK/err4" | head -5)"
r=$(counter "$WORK/err4" libcuda_refused)
[ "${r:-1}" = 0 ] || fail "libcuda_refused=$r on the node's own overlay"
ok "an overlay in the node's mount table: libcuda attached, nothing refused"

# An overlay a runtime mounted in a mount namespace of its own (OpenShift's
# CRI-O does): not in PID 1's table, so refused, until --mounts-of names a
# process of that namespace; then its libcuda is attached and every launch
# of a process there counted.
mkdir -p "$WORK/ovl2"
unshare -m --propagation private sh -c 'mount -t overlay overlay -o "lowerdir=$1/l1:$1/l2" "$1/ovl2" || exit 1
	CUDA_INJECTION64_PATH="$2" LD_LIBRARY_PATH="$1/ovl2" "$3/spin" -S -s 1 -i 1000 >"$1/spin2.log" &
	echo $! >"$1/spin2.pid"
	exec sleep 600' sh "$WORK" "$SHIM" "$PROGS" & R=$!
PIDS+=($R)
wait_line "$WORK/spin2.log" "ready" 20 || fail "spin in the runtime's namespace did not start"
S2=$(cat "$WORK/spin2.pid")
PIDS+=($S2)
"$LOADER" --pid "$S2" -v -d 3 -o "$WORK/ovl2a.pb.gz" 2>"$WORK/err5" || fail "the loader failed: $(tail -c 1000 "$WORK/err5")"
grep -q "maps $WORK/ovl2/libcuda.so.1 on a FUSE file system, or an overlay not in the node's mount table" "$WORK/err5" ||
	fail "an overlay of another namespace was read: $(grep -v '^libbpf\|^counters\|^loader' "$WORK/err5" | head -5)"
"$LOADER" --pid "$S2" --mounts-of "$R" -v -o "$WORK/ovl2.pb.gz" 2>"$WORK/err6" & L=$!
PIDS+=($L)
wait_line "$WORK/err6" "attached to $WORK/ovl2/libcuda.so.1 of pid $S2" 30 ||
	fail "--mounts-of: the runtime's overlay was not read: $(grep -v '^libbpf\|^counters\|^loader' "$WORK/err6" | head -5)"
wait_line "$WORK/err6" "reading the shim ring of pid $S2" 30 || fail "spin's ring was not read"
wait_recording "$S2" 60 || fail "its shim never recorded under the loader"
kill -USR1 "$S2"
wait_exit "$L" 60 || fail "the loader did not end with spin"
want=$(spin_exact "$WORK/ovl2.pb.gz" "$S2" "$WORK/spin2.log" "spin on the runtime's overlay")
ok "an overlay in a runtime's own namespace: refused, then read with --mounts-of (spin's $want launches exact)"
