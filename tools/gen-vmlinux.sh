#!/usr/bin/env bash
# Regenerates vmlinux/<arch>/vmlinux.h from a kernel's BTF. The build never
# reads the build host's kernel: run this by hand and commit the result.
# Usage: tools/gen-vmlinux.sh [BTF_FILE]   (default /sys/kernel/btf/vmlinux)
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
out="$(dirname "$0")/../vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out from $btf"
