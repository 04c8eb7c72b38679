#!/usr/bin/env bash
# Where the BPF program's time goes: builds static loaders whose program
# leaves one part out (the ABL_* switches tools/gpu/ablate.patch adds to
# bpf/launch.bpf.c: NOCOPY the stack copy, NOPY the Python walk, NOMEMO the
# thread's memo (task storage: filter, copy size, Python), NOTIME the clock
# and cgroup reads, NONS the namespace ids, NOQUERY the ring-fill query,
# NOARGS the launch arguments, ALL every one of them) into build/abl/gp_NAME, for tools/gpu/probe_cost.sh's v_NAME
# modes (PROG_STATS=1 gives each program's ns per run). Profiles they write
# are not whole: for measuring only.
# Usage (repo root, the build machine, after make deps):
#   tools/gpu/ablate-build.sh [NAME...]
set -euo pipefail
names=${*:-NOCOPY NOPY NOMEMO NOTIME NONS NOQUERY NOARGS ALL}
root=$PWD
tmp=$(mktemp -d /tmp/gpuprobe-ablate.XXXXXX)
trap 'git -C "$root" worktree remove --force "$tmp/src" 2>/dev/null; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/src" HEAD
git -C "$tmp/src" apply "$root/tools/gpu/ablate.patch"
mkdir -p build/abl
for n in $names; do
	if [ "$n" = ALL ]; then
		f="-DABL_NOCOPY -DABL_NOPY -DABL_NOMEMO -DABL_NOTIME -DABL_NONS -DABL_NOQUERY -DABL_NOARGS"
	else
		f="-DABL_$n"
	fi
	make -C "$tmp/src" -j"$(nproc)" BUILD="$tmp/b_$n" \
		BPF_EXTRA="$f -Wno-unused-function -Wno-unused-variable" static >"$tmp/$n.log" 2>&1 ||
		{ tail -5 "$tmp/$n.log"; exit 1; }
	cp "$tmp/b_$n/static/gpuprobe-bpf" "build/abl/gp_$n"
	echo "build/abl/gp_$n"
done
