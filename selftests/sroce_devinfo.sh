#!/bin/bash
# timeout: 180
#
# Provider-level view of a device (needs build/user/libsroce-rdmav<N>.so):
# ibv_devices lists it with its GUID; ibv_devinfo -v shows the attributes
# sroce.ko reports. With rdma_rxe present too, each provider claims only its
# own devices: ibv_devinfo works for both without "no userspace
# device-specific driver" warnings, and without the sroce provider no other
# provider (rxe's included) claims a sroce device.
export SR_TAG=di # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns=$SR_ID dev=${SR_ID}d name=${SR_ID}ib mac=aa:bb:cc:dd:ee:ff
rxe=${SR_ID}rxe

sr_setup
require_cmd ibv_devices ibv_devinfo
sr_have_provider || skip "no provider: build/user/libsroce-rdmav<N>.so is not built"
ns_create "$ns"
sr_dummy "$ns" "$dev" "$mac"
check ip -n "$ns" addr add 10.66.0.1/24 dev "$dev"
sr_link_add "$ns" "$name" "$dev"
wait_for "sr_gid_index $name 10.66.0.1" 10 || fail "no GID for 10.66.0.1"

have_rxe=0
if sr_rxe_use; then
	sr_dummy - "${SR_ID}r"
	check rdma link add "$rxe" type rxe netdev "${SR_ID}r"
	defer_quiet rdma link delete "$rxe"
	have_rxe=1
else
	log "NOTE: rdma_rxe cannot be loaded: coexistence NOT checked"
fi

no_warnings() { # no_warnings WHAT FILE
	if grep -iE 'no userspace device-specific driver|couldn.t load driver|warning' "$2"; then
		fail "$1 printed provider warnings"
	fi
}

subtest_begin "ibv_devices lists the devices with their GUIDs"
err=$(mktemp)
defer rm -f "$err"
list=$(ibv_devices 2>"$err") || fail "ibv_devices failed: $(cat "$err")"
log "$list"
no_warnings ibv_devices "$err"
sr_expect_eq "ibv_devices GUID of $name" "$(awk -v n="$name" '$1 == n {print $2}' <<<"$list")" a8bbccfffeddeeff
if ((have_rxe)); then
	sr_expect_eq "ibv_devices GUID of $rxe" "$(awk -v n="$rxe" '$1 == n {print $2}' <<<"$list")" \
		"$(tr -d : <"$SR_SYS/$rxe/node_guid")"
fi

subtest_begin "ibv_devinfo -v: sroce's attributes"
info=$(sr_devinfo "$name" -v) || fail "ibv_devinfo -v -d $name failed: $(cat "$SR_DEVINFO_ERR")"
no_warnings "ibv_devinfo -d $name" "$SR_DEVINFO_ERR"
field() { sr_devinfo_field "$info" "$1"; }
sr_expect_eq hca_id "$(field hca_id)" "$name"
sr_expect_eq transport "$(field transport)" "InfiniBand (0)"
# Firmware 0.1; the provider prints major.minor.sub, and the kernel's
# sysfs string (get_dev_fw_str) must say the same.
fw=$(field fw_ver)
[[ "$fw" == 0.1 || "$fw" == 0.1.0 ]] || fail "fw_ver '$fw', want 0.1 (or 0.1.0)"
sr_expect_eq "fw_ver: ibv_devinfo vs sysfs" "$fw" "$(cat "$SR_SYS/$name/fw_ver")"
sr_expect_eq node_guid "$(field node_guid)" a8bb:ccff:fedd:eeff
sr_expect_eq sys_image_guid "$(field sys_image_guid)" a8bb:ccff:fedd:eeff
sr_expect_eq vendor_id "$(field vendor_id)" 0xffffff
sr_expect_eq vendor_part_id "$(field vendor_part_id)" 21330
sr_expect_eq hw_ver "$(field hw_ver)" 0x1
sr_expect_eq phys_port_cnt "$(field phys_port_cnt)" 1
sr_expect_eq max_qp "$(field max_qp)" 65536
sr_expect_eq max_qp_wr "$(field max_qp_wr)" 16384
sr_expect_eq max_cqe "$(field max_cqe)" 65535
sr_expect_eq max_pd "$(field max_pd)" 65536
sr_expect_eq atomic_cap "$(field atomic_cap)" "ATOMIC_HCA (1)"
sr_expect_eq "port state" "$(field state)" "PORT_ACTIVE (4)"
sr_expect_eq max_mtu "$(field max_mtu)" "4096 (5)"
sr_expect_eq active_mtu "$(field active_mtu)" "1024 (3)"
sr_expect_eq link_layer "$(field link_layer)" Ethernet
sr_expect_eq phys_state "$(field phys_state)" "LINK_UP (5)"
sr_expect_eq "sysfs node_guid" "$(cat "$SR_SYS/$name/node_guid")" a8bb:ccff:fedd:eeff
grep -qE 'GID\[ *[0-9]+\]:[[:space:]]+fe80::a8bb:ccff:fedd:eeff, RoCE v2$' <<<"$info" ||
	fail "no link-local RoCE v2 GID line: $(grep GID <<<"$info")"
grep -qE 'GID\[ *[0-9]+\]:[[:space:]]+::ffff:10.66.0.1, RoCE v2$' <<<"$info" ||
	fail "no RoCE v2 GID line for 10.66.0.1: $(grep GID <<<"$info")"
subtest_begin "ibv_devinfo -v: RoCE v2 GIDs"
if grep GID <<<"$info" | grep -v 'RoCE v2$'; then
	fail "GIDs other than RoCE v2"
fi
log "ok: GID lines: $(grep -c GID <<<"$info"), all RoCE v2"

if ((have_rxe)); then
	subtest_begin "ibv_devinfo of an rxe device with both providers"
	rinfo=$(sr_devinfo "$rxe") || fail "ibv_devinfo -d $rxe failed: $(cat "$SR_DEVINFO_ERR")"
	no_warnings "ibv_devinfo -d $rxe" "$SR_DEVINFO_ERR"
	sr_expect_eq "$rxe hca_id" "$(sr_devinfo_field "$rinfo" hca_id)" "$rxe"
	sr_expect_eq "$rxe node_guid" "$(sr_devinfo_field "$rinfo" node_guid)" "$(cat "$SR_SYS/$rxe/node_guid")"
	[[ "$(sr_devinfo_field "$rinfo" vendor_part_id)" != 21330 ]] || fail "$rxe reports sroce's vendor_part_id"
else
	subtest_skip "ibv_devinfo of an rxe device with both providers" "rdma_rxe cannot be loaded"
fi

subtest_begin "without the sroce provider, nobody claims a sroce device"
list=$(env -u RDMAV_DRIVERS ibv_devices 2>&1)
if awk '{print $1}' <<<"$list" | grep -qx "$name"; then
	fail "ibv_devices without the sroce provider lists $name: another provider claimed it"
fi
if ((have_rxe)); then
	awk '{print $1}' <<<"$list" | grep -qx "$rxe" || fail "without the sroce provider, $rxe is not listed"
fi
log "ok: $name unclaimed without the sroce provider"
subtest_end
log "PASS"
