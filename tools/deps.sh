#!/bin/bash
# Install, idempotently, every Debian package sroce needs to build, run and test.
# Usage: tools/deps.sh [--check]   (--check: only report what is missing, exit 1 if any)
set -euo pipefail

# shellcheck source=tools/release.sh
source "$(dirname "${BASH_SOURCE[0]}")/release.sh"
if [[ $SROCE_SUPPORTED != 1 ]]; then
	echo "deps: sroce's package lists are for Debian 12 (bookworm) and Debian 13 (trixie);" \
		"this is $SROCE_RELEASE_NAME ($SROCE_RELEASE)." >&2
	echo "deps: SROCE_DEPS_RELEASE=13 make deps tries Debian 13's list anyway." >&2
	exit 1
fi

# shellcheck disable=SC2206  # the release's lists are words
PKGS=(
	# build
	build-essential g++ cmake make pkg-config libgtest-dev
	linux-image-amd64 linux-headers-amd64 kmod
	libibverbs-dev librdmacm-dev
	# static checks
	sparse $SROCE_LINUX_SOURCE clang-format clang-tidy
	# fuzzing (libFuzzer)
	$SROCE_CLANG_PKGS
	# VM harness
	qemu-system-x86 busybox-static cpio
	# run and test
	rdma-core ibverbs-utils ibverbs-providers perftest rdmacm-utils iproute2
	python3-pyverbs python3-scapy iperf3 tshark ethtool procps jq
	# NVMe over Fabrics (RDMA) tests
	nvme-cli fio
	# debug kernel lane
	flex bison bc libelf-dev libssl-dev rsync
)

missing=()
for p in "${PKGS[@]}"; do
	[[ "$p" == \#* ]] && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
	echo "deps: all ${#PKGS[@]} packages present"
	exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run 'make deps' (as root) to install them" >&2
	exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
	SUDO=sudo
else
	SUDO=
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no, non-interactively.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
