#!/usr/bin/env bash
# The first instructions of every libcuda entry point the loader probes: a
# uprobe on an instruction the kernel cannot emulate (x86: most but push,
# nop, jmp, call, jcc) is stepped out of line, a second trap per launch.
# Usage (GPU machine): tools/gpu/entry_insns.sh [LIBCUDA]
set -euo pipefail
lib=${1:-$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')}
[ -n "$lib" ] || { echo "entry_insns: no libcuda.so.1 (give its path)" >&2; exit 1; }
lib=$(readlink -f "$lib")
syms="cuLaunchKernel cuLaunchKernel_ptsz cuLaunchKernelEx cuLaunchKernelEx_ptsz
cuLaunchCooperativeKernel cuLaunchCooperativeKernel_ptsz cuGraphLaunch cuGraphLaunch_ptsz
cuModuleLoad cuModuleLoadData cuModuleLoadDataEx cuModuleLoadFatBinary cuLibraryLoadData
cuLibraryLoadFromFile"
echo "$lib"
for s in $syms; do
	a=$(nm -D --defined-only "$lib" | awk -v s="$s" '$3==s{print $1; exit}')
	[ -n "$a" ] || { echo "$s: not exported"; continue; }
	printf '%s @0x%s:' "$s" "$a"
	objdump -d --no-show-raw-insn --start-address=0x$a --stop-address=$((0x$a + 12)) "$lib" |
		awk -F'\t' '/^ *[0-9a-f]+:/{printf " [%s]", $2}'
	echo
done
