#!/bin/bash
# Print the kernel version sroce targets by default: the newest Debian stock
# amd64 kernel installed on this machine that has both an image (for the VM
# harness) and a build tree (linux-headers). KVER=... in the environment wins.
set -euo pipefail
if [[ -n "${KVER:-}" ]]; then
	echo "$KVER"
	exit 0
fi
best=
for img in /boot/vmlinuz-*-amd64; do
	[[ -e "$img" ]] || continue
	v=${img#/boot/vmlinuz-}
	[[ -d /lib/modules/$v/build ]] || continue
	best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
done
if [[ -z "$best" ]]; then
	echo "kver: no Debian kernel image with headers found; run 'make deps'" >&2
	exit 1
fi
echo "$best"
