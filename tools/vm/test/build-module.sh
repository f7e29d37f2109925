#!/bin/bash
# Build splat_test.ko for KVER (default tools/kver.sh) into a copy under
# build/vm/test-module/KVER, so the source tree stays clean. Prints the path
# of the .ko. usage: build-module.sh [KDIR]   (KDIR: a kernel build tree)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
kdir=${1:-/lib/modules/$("$repo/tools/kver.sh")/build}
[[ -d "$kdir" ]] || { echo "build-module: no kernel build tree $kdir" >&2; exit 1; }
case "$kdir" in
/lib/modules/*/build) kver=${kdir#/lib/modules/}; kver=${kver%/build} ;;
*) kver=$(make -s -C "$kdir" kernelrelease) ;;
esac
out=$repo/build/vm/test-module/$kver
mkdir -p "$out"
cp "$here/splat_test.c" "$here/Kbuild" "$out/"
make -s -C "$kdir" M="$out" modules >&2
echo "$out/splat_test.ko"
