#!/usr/bin/env bash
# Installs every Debian package the build and the demo need (libc6-dbg:
# glibc's own frames, start_thread and clone3, named in the demo's stacks),
# and with `test` those the tests need too (the browser test's). Idempotent
# and fast when everything is there: dpkg is asked first, apt only when
# needed.
# Usage: tools/deps.sh [test]
set -euo pipefail
pkgs=(clang llvm make pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev
      libzstd-dev libcmocka-dev libclang-rt-14-dev golang-go python3 procps
      util-linux binutils strace libc6-dbg)
if [ "${1:-}" = test ]; then
	pkgs+=(chromium chromium-driver python3-selenium fonts-dejavu-core)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the browser test's viewer; Debian's, unless one is installed already.
[ "${1:-}" != test ] || command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages: ${missing[*]}; run as root: sudo make deps${1:+-$1}" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cupti.h" ] || [ ! -f "$cuda/include/cuda.h" ]; then
	echo "deps: CUDA headers not found under $cuda (cuda.h, cupti.h); install the CUDA toolkit (12.4 or newer) or set CUDA_HOME" >&2
	exit 1
fi
echo "deps: all present"
