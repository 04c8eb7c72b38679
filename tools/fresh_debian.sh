#!/usr/bin/env bash
# The README's first command on a fresh Debian 12 root: debootstrap (minbase)
# into DIR unless it is there, then, chrooted in it, what the README says to
# do first (apt-get install git make; the CUDA headers, bound read-only from
# this machine's CUDA_HOME), a clone of this repository, and `make demo`.
# The kernel (BPF, uprobes, tracefs) is this machine's. Run as root; the log
# of the chrooted part goes to DIR.log. Usage:
#   tools/fresh_debian.sh DIR [make target, default demo]
set -euo pipefail
dir=$(readlink -f "${1:?DIR}"); target=${2:-demo}
repo=$(cd "$(dirname "$0")/.." && pwd)
cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
[ -x "$dir/bin/bash" ] || debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian
mounts=()
bind() { # SRC DST [ro]
	mkdir -p "$dir$2"
	mount --rbind "$1" "$dir$2"
	[ "${3:-}" != ro ] || mount -o remount,bind,ro "$dir$2"
	mounts=("$dir$2" "${mounts[@]}")
}
cleanup() { for m in "${mounts[@]}"; do umount -R "$m" 2>/dev/null || umount -l "$m"; done; }
trap cleanup EXIT
bind /proc /proc; bind /sys /sys; bind /dev /dev
bind "$cuda" /usr/local/cuda ro
bind "$repo" /mnt/src ro
cp /etc/resolv.conf "$dir/etc/resolv.conf"
chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c "
	set -e
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git make >/dev/null
	rm -rf /root/gpuprobe && git clone -q /mnt/src /root/gpuprobe && cd /root/gpuprobe
	nproc; make $target" 2>&1 | tee "$dir.log"
