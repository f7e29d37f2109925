#!/bin/bash
# Print the kernel version sroce targets by default: a Debian stock
# amd64 kernel installed on this machine that has both an image (for the VM
# harness) and a build tree (linux-headers). KVER=... in the environment wins.
set -euo pipefail
if [[ -n "${KVER:-}" ]]; then
	echo "$KVER"
	exit 0
fi
# The default is the host release's own kernel series (Debian 12: 6.1,
# Debian 13: 6.12), newest of that series, even when a newer one (say
# bookworm-backports' 6.12) is installed too: the main lane must not change
# kernel because a package was added. Other releases: the newest installed.
# shellcheck source=tools/release.sh
source "$(dirname "${BASH_SOURCE[0]}")/release.sh"
series=$SROCE_KSERIES
best='' any=''
for img in /boot/vmlinuz-*-amd64; do
	[[ -e "$img" ]] || continue
	v=${img#/boot/vmlinuz-}
	[[ -d /lib/modules/$v/build ]] || continue
	any=$(printf '%s\n%s\n' "$any" "$v" | sed '/^$/d' | sort -V | tail -n1)
	[[ -z $series || $v == "$series".* ]] || continue
	best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
done
best=${best:-$any}
if [[ -z "$best" ]]; then
	echo "kver: no Debian kernel image with headers found; run 'make deps-test'" >&2
	exit 1
fi
echo "$best"
