#!/bin/bash
# The Debian packages as a user meets them, in a throwaway guest (make
# test-deb boots it: tools/vm/run, the host's root under a tmpfs overlay, so
# nothing here touches the host). Arguments: DEBDIR (make deb's packages,
# version 1), UPDIR (the same tree packaged as a later version, 2), KVER2
# (a second installed kernel whose headers package HDRDEB is installed
# again half way, as an upgrade would).
#
#  1. install sroce-dkms and ibverbs-provider-sroce (version 1): DKMS builds
#     sroce.ko for the running kernel; modinfo gives version 1; the second
#     kernel's headers were removed first, so nothing is built for it;
#  2. use: modprobe loads the DKMS module, two devices in two namespaces
#     over veth, ibv_devinfo and ibv_rc_pingpong -c (data checked) through
#     the installed provider (RDMAV_DRIVERS unset), counters moved;
#  3. a second kernel's headers installed: DKMS's hook builds sroce for it;
#  4. upgrade to version 2: both kernels rebuilt, version 1 gone, the new
#     module loads and carries traffic;
#  5. purge: no module, no source, no provider or driver file left.
# The DKMS builds run in the guest (TCG): this takes minutes, so it is not in
# make test or CI (Documentation/packaging.rst).
set -euo pipefail
# shellcheck source=selftests/lib_sroce.sh
source "${SROCE_ROOT:?}/selftests/lib_sroce.sh"
[[ $EUID == 0 && -n ${SROCE_IN_GUEST:-} ]] || skip "runs as root in the test guest (make test-deb)"
debdir=$1 updir=$2 kver2=$3 hdrdeb=$4
kver=$(uname -r)
unset RDMAV_DRIVERS SROCE_PROVIDER
require_cmd dkms dpkg modinfo ibv_rc_pingpong ibv_devinfo rdma
tmp=$(mktemp -d)
defer rm -rf "$tmp"
next_port=18600 failures=0

deb_version() { dpkg-deb -f "$1" Version; }
v1=$(deb_version "$debdir"/sroce-dkms_*_all.deb)
v2=$(deb_version "$updir"/sroce-dkms_*_all.deb)
log "version 1: $v1, version 2: $v2; kernels: $kver (running), $kver2"
dpkg --compare-versions "$v2" gt "$v1" || fail "version 2 ($v2) is not later than version 1 ($v1)"

# dpkg_install NAME WHAT DEB...: dpkg -i the packages, its output kept in
# $tmp/NAME.log and shown if it fails; how long it took is logged (DKMS
# builds the module inside it).
dpkg_install() {
	local name=$1 what=$2 t0=$SECONDS
	shift 2
	dpkg -i "$@" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "dpkg -i $what failed"; }
	log "dpkg -i took $((SECONDS - t0)) s"
}

# dkms_state VERSION KVER: "installed" (or built, added, ...) or nothing.
dkms_state() {
	dkms status -m sroce -v "$1" -k "$2" 2>/dev/null | sed -n 's/.*: *\([a-z]*\).*/\1/p' | head -n1
}
expect_built_for() { # VERSION KVER
	local st
	st=$(dkms_state "$1" "$2")
	[[ $st == installed ]] || fail "dkms status for sroce $1 on $2: '${st:-nothing}', want installed ($(dkms status 2>&1 | xargs))"
	local ver
	ver=$(modinfo -k "$2" -F version sroce) || fail "modinfo -k $2 sroce: no module"
	[[ $ver == "$1" ]] || fail "modinfo -k $2 sroce: version '$ver', want '$1'"
	[[ $(modinfo -k "$2" -n sroce) == /lib/modules/$2/updates/dkms/sroce.ko* ]] ||
		fail "modinfo -k $2 -n sroce: $(modinfo -k "$2" -n sroce), want the DKMS build under updates/dkms"
	[[ $(modinfo -k "$2" -F vermagic sroce) == "$2 "* ]] || fail "sroce.ko for $2: vermagic $(modinfo -k "$2" -F vermagic sroce)"
	log "sroce $1 built and installed for $2"
}

# traffic TAG VERSION (a subtest: its namespaces go when it ends): modprobe sroce, two devices in two namespaces, RC pingpong
# with the data checked, through the installed provider.
traffic() {
	local tag=$1 sa sb before after
	modprobe sroce || fail "modprobe sroce: $(modprobe sroce 2>&1)"
	[[ $(cat /sys/module/sroce/version) == "$2" ]] || fail "loaded sroce is version $(cat /sys/module/sroce/version), want $2"
	sr_dmesg_mark
	sr_veth_topology 192.0.2.1 192.0.2.2
	ns_exec "$nsa" ibv_devinfo -d "$da" >"$tmp/devinfo" 2>&1 ||
		fail "ibv_devinfo -d $da (installed provider): $(cat "$tmp/devinfo")"
	grep -q 'PORT_ACTIVE' "$tmp/devinfo" || fail "ibv_devinfo: port not active: $(cat "$tmp/devinfo")"
	sa=$(sr_gid_of "$da" 192.0.2.1)
	sb=$(sr_gid_of "$db" 192.0.2.2)
	before=$(sr_hwc "$da" sent_pkts)
	sr_pp ibv_rc_pingpong 60 60 "$tag" 65536 50 '' "$nsa" "$da" "$sa" \
		"$nsb" "$db" "$sb" 192.0.2.1 ::ffff:192.0.2.1 ::ffff:192.0.2.2 -c
	((failures == 0)) || fail "$tag: pingpong failed"
	after=$(sr_hwc "$da" sent_pkts)
	((after - before >= 50 * 65536 / 4096)) || fail "$tag: $da sent $((after - before)) packets, want >= $((50 * 65536 / 4096))"
	ns_exec "$nsa" rdma link delete "$da"
	ns_exec "$nsb" rdma link delete "$db"
	sr_wait_gone "$da"
	wait_for "rmmod sroce" 10 || fail "rmmod sroce after the traffic: $(rmmod sroce 2>&1)"
}

subtest_begin "setup: no sroce installed; $kver2 headers removed"
[[ ! -d /sys/module/sroce ]] || fail "sroce is loaded already"
! modinfo sroce >/dev/null 2>&1 || fail "a sroce module is installed already: $(modinfo -n sroce)"
[[ -r $hdrdeb ]] || fail "no headers package $hdrdeb"
hdrpkg=$(dpkg-deb -f "$hdrdeb" Package)
dpkg -r --force-depends "$hdrpkg" >"$tmp/hdr-r.log" 2>&1 || fail "dpkg -r $hdrpkg: $(tail -n3 "$tmp/hdr-r.log")"
[[ ! -e /lib/modules/$kver2/build/Makefile ]] || fail "$kver2 headers still there"

subtest_begin "install version 1: DKMS builds sroce for $kver"
dpkg_install i1 "version 1" "$debdir"/sroce-dkms_*_all.deb "$debdir"/ibverbs-provider-sroce_*.deb
expect_built_for "$v1" "$kver"
case $(dkms_state "$v1" "$kver2") in
built | installed) fail "sroce built for $kver2 without its headers? ($(dkms status -m sroce 2>&1 | xargs))" ;;
esac
[[ -r /etc/libibverbs.d/sroce.driver ]] || fail "no /etc/libibverbs.d/sroce.driver"
ls /usr/lib/x86_64-linux-gnu/libibverbs/libsroce-rdmav*.so >/dev/null || fail "no provider library installed"

subtest "use version 1: modprobe, two devices, ibv_rc_pingpong -c through the installed provider" traffic rc-v1 "$v1"

subtest_begin "$kver2 headers installed: DKMS builds sroce for it"
dpkg_install hdr-i "$hdrdeb" "$hdrdeb"
expect_built_for "$v1" "$kver2"

subtest_begin "upgrade to version 2: rebuilt for both kernels, version 1 gone"
dpkg_install i2 "version 2" "$updir"/sroce-dkms_*_all.deb "$updir"/ibverbs-provider-sroce_*.deb
expect_built_for "$v2" "$kver"
expect_built_for "$v2" "$kver2"
[[ -z $(dkms status -m sroce -v "$v1" 2>/dev/null) ]] || fail "version 1 still in dkms: $(dkms status -m sroce -v "$v1")"
[[ ! -e /usr/src/sroce-$v1 ]] || fail "/usr/src/sroce-$v1 is still there"

subtest "use version 2" traffic rc-v2 "$v2"

subtest_begin "purge: nothing left"
dpkg --purge sroce-dkms ibverbs-provider-sroce >"$tmp/p.log" 2>&1 || { cat "$tmp/p.log"; fail "dpkg --purge failed"; }
[[ -z $(dkms status -m sroce 2>/dev/null) ]] || fail "dkms still has sroce: $(dkms status -m sroce)"
left=$(find /lib/modules/"$kver" /lib/modules/"$kver2" -name 'sroce.ko*' 2>/dev/null)
[[ -z $left ]] || fail "modules left: $left"
[[ -z $(compgen -G '/usr/src/sroce-*') ]] || fail "sources left: $(compgen -G '/usr/src/sroce-*')"
[[ ! -e /etc/libibverbs.d/sroce.driver ]] || fail "/etc/libibverbs.d/sroce.driver left"
[[ -z $(compgen -G '/usr/lib/x86_64-linux-gnu/libibverbs/libsroce-*') ]] || fail "provider left"
! modinfo sroce >/dev/null 2>&1 || fail "modinfo still finds sroce: $(modinfo -n sroce)"
subtest_end
