#!/bin/bash
# The other-kernel lane (make test-kver): sroce.ko and the kernel-verbs test
# module built W=1 for a second Debian kernel, and selftests run in a guest
# that boots that kernel, with this machine's user space (rdma-core and the
# provider as built by make). The main lane covers tools/kver.sh's kernel;
# this one the release's other supported series (tools/release.sh's
# SROCE_LANE_KSERIES: Debian 12's 6.12, which make deps-test installs).
#
# Usage: tools/kver-lane.sh [TEST...]   (default: $LANE_TESTS below)
#   LANE_KVER=VERSION   the kernel (default: the newest installed image of
#                       SROCE_LANE_KSERIES with its headers)
#   LANE_TIMEOUT=S      the guest's limit (default 1500)
#   LANE_BOOT_TIMEOUT=S its limit to boot (default 120)
# The modules are built from a copy of the sources in build/kver/VERSION
# (kernel/ keeps the main lane's objects). Exit status: the guest's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/release.sh
source "$ROOT/tools/release.sh"

# What a kernel's ib_core and uverbs can change under us: RC, UD and XRC
# (with its SRQ) traffic over IPv4 and IPv6 with data verified, the error
# and memory-window paths, random RC traffic, hostile rings, the
# kernel-verbs path, and a device removed or deleted while programs hold it
# (disassociation), in about 7 minutes alone (an estimate: 9 with the list
# before 2026-12-06). UC and plain SRQs take the same ib_core paths as RC
# and XRC's SRQ: the main lane's kernel runs them.
# Of ibv_rc_pingpong's and ibv_ud_pingpong's exchanges, the lane runs those
# that reach ib_core and uverbs differently (the rest vary sizes and depths
# of the same calls, on the main lane's kernel): IPv4 and IPv6 GIDs, the
# loopback device, completion events, the ibv_wr_* API (the extended QP
# commands), path MTU 4096. The others are reported as skipped.
# The caller's SROCE_PP_CASES wins (empty: every exchange).
if [[ -z ${SROCE_PP_CASES+set} ]]; then
	SROCE_PP_CASES="rc_pingpong:v4-1 rc_pingpong:v4-events rc_pingpong:v4-wrapi"
	SROCE_PP_CASES+=" rc_pingpong:v6-1m rc_pingpong:lo-events rc_pingpong:mtu4096-v6-64k"
	SROCE_PP_CASES+=" ud_pingpong:v4-1 ud_pingpong:v4-events ud_pingpong:v6-events"
	SROCE_PP_CASES+=" ud_pingpong:lo-v6-events ud_pingpong:mtu4096-v6-events"
fi
export SROCE_PP_CASES
export SROCE_PP_CASES_WHY="the other-kernel lane's subset: tools/kver-lane.sh"
LANE_TESTS="rc_pingpong ud_pingpong xsrq_pingpong rc_errors rc_integrity rc_mw rc_kverbs sroce_devinfo sroce_rmmod_busy sroce_delete_busy"

say() { echo "kver-lane: $*"; }
die() {
	echo "kver-lane: $*" >&2
	exit 1
}

kver=${LANE_KVER:-}
if [[ -z $kver ]]; then
	[[ -n ${SROCE_LANE_KSERIES:-} ]] ||
		die "$SROCE_RELEASE_NAME has no second kernel series for this lane (tools/release.sh); set LANE_KVER="
	for img in /boot/vmlinuz-"$SROCE_LANE_KSERIES".*-amd64; do
		[[ -e $img ]] || continue
		v=${img#/boot/vmlinuz-}
		[[ -d /lib/modules/$v/build ]] || continue
		kver=$(printf '%s\n%s\n' "$kver" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	[[ -n $kver ]] ||
		die "no $SROCE_LANE_KSERIES kernel image with headers installed: run 'make deps-test' ($SROCE_LANE_KPKGS)"
fi
[[ -e /boot/vmlinuz-$kver ]] || die "no /boot/vmlinuz-$kver"
[[ -d /lib/modules/$kver/build ]] || die "no headers for $kver (/lib/modules/$kver/build)"
[[ $kver != "$("$ROOT/tools/kver.sh")" ]] || die "$kver is the main lane's kernel"

read -ra tests <<<"${*:-$LANE_TESTS}"
say "kernel $kver; tests: ${tests[*]}"

t0=$SECONDS
obj=$ROOT/build/kver/$kver
# shellcheck source=tools/modcopy.sh
source "$ROOT/tools/modcopy.sh"
modcopy_sync "$obj"
for m in kernel kverbs; do
	modcopy_build "/lib/modules/$kver/build" "$obj/src/$m" "$kver" ||
		die "building $m for $kver: warnings (above)"
done
say "sroce.ko and sroce_kverbs_test.ko built W=1 for $kver, no warnings ($((SECONDS - t0)) s)"

export SROCE_KO=$obj/src/kernel/sroce.ko
export SROCE_KVERBS_KO=$obj/src/kverbs/sroce_kverbs_test.ko
export SROCE_STALL_KO=$obj/src/kverbs/sroce_stall_test.ko
rc=0
"$ROOT/tools/vm/run" --kver "$kver" --timeout "${LANE_TIMEOUT:-1500}" \
	--boot-timeout "${LANE_BOOT_TIMEOUT:-120}" --mem 4G -- \
	selftests/run.sh "${tests[@]}" || rc=$?
say "guest: exit $rc after $((SECONDS - t0)) s"
exit "$rc"
