#!/bin/bash
# timeout: 600
#
# 25 x (SROCE_LINK_CYCLES) (rdma link add, verify, rdma link delete, verify) on one netdev, then
# two devices in one namespace: the UDP 4791 sockets of a namespace are opened
# by its first sroce device and closed with its last one, not before.
export SR_TAG=lc # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

readonly CYCLES=${SROCE_LINK_CYCLES:-25}
ns=$SR_ID d0=${SR_ID}a d1=${SR_ID}b name=${SR_ID}ib
mac0=02:5a:00:00:20:01 mac1=02:5a:00:00:20:02

sr_setup
ns_create "$ns"
sr_dummy "$ns" "$d0" "$mac0"
sr_dummy "$ns" "$d1" "$mac1"
guid0=$(sr_guid_of_mac "$mac0")

sr_expect_sockets "$ns" no
sr_dmesg_mark
subtest_begin "$CYCLES x rdma link add, verify, delete"
for ((i = 1; i <= CYCLES; i++)); do
	sr_link_add "$ns" "$name" "$d0"
	[[ "$(<"$SR_SYS/$name/node_guid")" == "$guid0" ]] || fail "cycle $i: node_guid $(<"$SR_SYS/$name/node_guid"), want $guid0"
	[[ "$(sr_link_field "$name" netdev)" == "$d0" ]] || fail "cycle $i: rdma link show: $(rdma link show "$name/1")"
	[[ "$(sr_port_attr "$name" state)" == "4: ACTIVE" ]] || fail "cycle $i: port state $(sr_port_attr "$name" state)"
	[[ "$(sr_sockets "$ns")" == "0.0.0.0:4791 [::]:4791" ]] || fail "cycle $i: sockets with the device: '$(sr_sockets "$ns")'"
	ns_exec "$ns" rdma link delete "$name" || fail "cycle $i: rdma link delete $name failed"
	# Deletion is synchronous: gone when the command returns.
	! sr_exists "$name" || fail "cycle $i: $name still exists after rdma link delete"
	rdma link show "$name/1" >/dev/null 2>&1 && fail "cycle $i: rdma link show still finds $name"
	[[ -z "$(sr_sockets "$ns")" ]] || fail "cycle $i: sockets after the last device is gone: '$(sr_sockets "$ns")'"
	((i % 10)) || log "ok: $i add/verify/delete cycles"
done
created=$(sr_dmesg_since | grep -c "sroce: $name created on $d0") || true
sr_expect_eq "'$name created on $d0' kernel log lines" "$created" "$CYCLES"

subtest_begin "two devices in one namespace share the sockets"
sr_link_add "$ns" "${name}0" "$d0"
sr_expect_sockets "$ns" yes
sr_link_add "$ns" "${name}1" "$d1"
sr_expect_sockets "$ns" yes
check ns_exec "$ns" rdma link delete "${name}0"
! sr_exists "${name}0" || fail "${name}0 still exists"
# The remaining device keeps the sockets open and stays usable.
sr_expect_sockets "$ns" yes
sr_expect_port "${name}1" ACTIVE
sr_expect_eq "${name}1 node_guid" "$(cat "$SR_SYS/${name}1/node_guid")" "$(sr_guid_of_mac "$mac1")"
# Re-adding the first one does not open a second pair of sockets.
sr_link_add "$ns" "${name}0" "$d0"
sr_expect_sockets "$ns" yes
check ns_exec "$ns" rdma link delete "${name}1"
sr_expect_sockets "$ns" yes
check ns_exec "$ns" rdma link delete "${name}0"
sr_expect_sockets "$ns" no
subtest_end
log "PASS"
