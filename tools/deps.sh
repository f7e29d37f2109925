#!/bin/bash
# Install, idempotently, the Debian packages sroce needs, in three groups:
#   build   what `make` and `make install` need: the module (a compiler, kmod,
#           the headers of the running kernel, or the release's if it is not
#           a Debian kernel) and the provider (cmake, libibverbs-dev)
#   package what `make deb` needs besides: debhelper, dh-dkms, lintian
#   test    everything else `make test`, `make check`, the debug-kernel lane,
#           `make demo` and `make bench` need: the guest kernel, QEMU, the
#           verbs tools, perftest, scapy/pyverbs, fuzzers, checkers, ...
# Usage: tools/deps.sh [--check] [GROUP...]   (default group: build)
#   make deps        = tools/deps.sh build
#   make deps-test   = tools/deps.sh build test      (what CI installs)
#   make deps-check  = tools/deps.sh --check build   (before every build)
# --check only reports what is missing (exit 1 if anything is).
set -euo pipefail

# shellcheck source=tools/release.sh
source "$(dirname "${BASH_SOURCE[0]}")/release.sh"
if [[ $SROCE_SUPPORTED != 1 ]]; then
	echo "deps: sroce's package lists are for Debian 12 (bookworm) and Debian 13 (trixie);" \
		"this is $SROCE_RELEASE_NAME ($SROCE_RELEASE)." >&2
	echo "deps: SROCE_DEPS_RELEASE=13 make deps tries Debian 13's list anyway." >&2
	exit 1
fi

check=0
groups=()
for a in "$@"; do
	case $a in
	--check) check=1 ;;
	build | package | test) groups+=("$a") ;;
	*)
		echo "deps: unknown group '$a' (build, package, test)" >&2
		exit 2
		;;
	esac
done
[[ ${#groups[@]} -gt 0 ]] || groups=(build)

# The module is built (and `make install` installs it) for the running
# kernel: its headers, when it is a Debian kernel; otherwise the release's
# metapackage (the default build target then is tools/kver.sh's kernel).
running_headers=linux-headers-$(uname -r)
if ! apt-cache show "$running_headers" >/dev/null 2>&1; then
	running_headers=linux-headers-amd64
fi

# shellcheck disable=SC2206  # the release's lists are words
BUILD_PKGS=(
	build-essential g++ cmake make pkg-config kmod
	"$running_headers"
	libibverbs-dev
)
PACKAGE_PKGS=(
	debhelper dh-dkms dkms dpkg-dev lintian fakeroot git libgtest-dev
)
# shellcheck disable=SC2206
TEST_PKGS=(
	# the guest kernel the VM harness boots, and its headers; the release's
	# second kernel series for the other-kernel lane (tools/kver-lane.sh)
	linux-image-amd64 linux-headers-amd64 $SROCE_LANE_KPKGS
	# the provider's host tests, the test programs
	libgtest-dev librdmacm-dev
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
	# real consumers: UCX (selftests/ucx.sh)
	ucx-utils
	# debug kernel lane
	flex bison bc libelf-dev libssl-dev rsync
)

PKGS=()
for g in "${groups[@]}"; do
	case $g in
	build) PKGS+=("${BUILD_PKGS[@]}") ;;
	package) PKGS+=("${PACKAGE_PKGS[@]}") ;;
	test) PKGS+=("${TEST_PKGS[@]}") ;;
	esac
done

missing=()
for p in "${PKGS[@]}"; do
	[[ "$p" == \#* ]] && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

target() {
	case " ${groups[*]} " in
	*" test "*) echo "make deps-test" ;;
	*" package "*) echo "make deps-package" ;;
	*) echo "make deps" ;;
	esac
}

if [[ ${#missing[@]} -eq 0 ]]; then
	[[ $check == 1 ]] || echo "deps: all ${#PKGS[@]} packages of ${groups[*]} present"
	exit 0
fi
if [[ $check == 1 ]]; then
	echo "deps: missing packages (${groups[*]}): ${missing[*]}" >&2
	echo "deps: run '$(target)' (as root, or with sudo) to install them" >&2
	exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
	SUDO=sudo
else
	SUDO=
fi
echo "deps: installing (${groups[*]}) ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no, non-interactively.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
