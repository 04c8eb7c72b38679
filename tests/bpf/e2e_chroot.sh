#!/usr/bin/env bash
# The loader chrooted into a plain directory, as on a debootstrapped Debian
# root (tools/fresh_debian.sh): "/" there is no mount point, so it cannot be
# made private; the loader's tracepoints (mapping changes, memfd_create)
# must attach all the same, their tracefs mounted in a private namespace
# under the nearest mount that can be made private (/sys), and the stack
# cache stays on. The run itself is exact.
source "$(dirname "$0")/lib.sh"

root="$WORK/root"
mkdir -p "$root/out" "$root/usr" "$root/proc" "$root/sys" "$root/dev" "$root/etc" "$root$B"
for l in lib lib64 bin sbin; do [ -L "/$l" ] && ln -s "usr/$l" "$root/$l"; done
# The mounts made for it must not reach the host: the mount holding it is made
# private first (where it cannot be, as in a chroot itself, the test is skipped).
set +e
unshare -m bash -c '
	set -e
	root=$1 B=$2
	mount --make-rprivate "$(findmnt -n -o TARGET -T "$root")" 2>/dev/null || exit 77
	for d in /usr /proc /sys /dev /etc "$B"; do mount --rbind "$d" "$root$d"; done
	for l in lib lib64 bin sbin; do [ -L "/$l" ] || { mkdir -p "$root/$l"; mount --rbind "/$l" "$root/$l"; }; done
	! mountpoint -q "$root" # the new root: a plain directory
	cd /
	exec chroot "$root" env LD_LIBRARY_PATH="$B/stub" GPUPROBE_COUNTERS=all \
		"$B/gpuprobe-bpf" -o /out/p.pb.gz --libcuda "$B/stub/libcuda.so.1" -- "$B/tests/progs/spin" -s 1 -i 500
' chroot-test "$root" "$B" >"$WORK/spin.out" 2>"$WORK/err"
rc=$?
set -e
[ $rc != 77 ] || skip "the mount holding $WORK cannot be made private here"
[ $rc = 0 ] || { cat "$WORK/err"; fail "the loader failed in the chroot"; }
grep "cannot watch" "$WORK/err" && fail "tracepoints not attached in a chroot whose / is no mount point (above)"
grep -q "^verdict: .* joined (100.0%), .*; losses: none$" "$WORK/err" || fail "verdict: $(grep verdict "$WORK/err")"
cap=$(sed -n 's/^loader: .* cache_capacity=\([0-9]*\) .*/\1/p' "$WORK/err" | tail -1)
[ "${cap:-0}" -gt 0 ] || fail "the stack cache is off in the chroot (cache_capacity=${cap:-none})"
n=$(sed -n 's/^spin: launches=\([0-9]*\)$/\1/p' "$WORK/spin.out")
$CHECK "$root/out/p.pb.gz" totals >"$WORK/totals"
grep -qx "spin_site spin_kernel $((n * 1000)) $n" "$WORK/totals" || { cat "$WORK/totals"; fail "profile of $n launches"; }
ok "chrooted into a plain directory: tracepoints attached, stack cache on, $n launches exact"
