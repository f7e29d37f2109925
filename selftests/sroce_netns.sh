#!/bin/bash
# timeout: 240
#
# Coexistence with rdma_rxe, and one socket pair per namespace:
#  - rxe on a dummy in the initial namespace (6.1's rxe binds UDP 4791 there),
#  - sroce devices in two other namespaces, on the two ends of a veth pair;
#  - IP works across the veth; each namespace has its own 4791 sockets;
#  - the RDMA core (sysfs, rdma link) and, with the provider, ibv_devices see
#    all three devices; ibv_devinfo works for each;
#  - sroce in the initial namespace (where rxe holds 4791) fails cleanly with
#    EADDRINUSE and a "sroce:" message, leaving nothing behind.
export SR_TAG=nn # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns1=${SR_ID}1 ns2=${SR_ID}2 va=${SR_ID}a vb=${SR_ID}b
sa=${SR_ID}sa sb=${SR_ID}sb rxe=${SR_ID}rxe rxedev=${SR_ID}r bad=${SR_ID}bad

sr_setup
sr_rxe_use || skip "rdma_rxe cannot be loaded (is UDP 4791 of the initial namespace taken?)"

sr_dummy - "$rxedev"
check rdma link add "$rxe" type rxe netdev "$rxedev"
defer_quiet rdma link delete "$rxe"
subtest_begin "rxe in the initial namespace, sroce in two others"
init_socks=$(sr_sockets -)
[[ -n "$init_socks" ]] || fail "rdma_rxe holds no UDP 4791 socket in the initial namespace?"
log "initial namespace 4791 sockets (rxe): $init_socks"

ns_create "$ns1"
ns_create "$ns2"
veth_pair "$ns1" "$va" "$ns2" "$vb"
maca=$(sr_mac "$ns1" "$va")
macb=$(sr_mac "$ns2" "$vb")
check ip -n "$ns1" addr add 192.0.2.1/24 dev "$va"
check ip -n "$ns2" addr add 192.0.2.2/24 dev "$vb"

sr_link_add "$ns1" "$sa" "$va"
sr_link_add "$ns2" "$sb" "$vb"
sr_expect_sockets "$ns1" yes
sr_expect_sockets "$ns2" yes
sr_expect_eq "initial namespace 4791 sockets" "$(sr_sockets -)" "$init_socks"
wait_for "sr_ping $ns1 192.0.2.2" 10 || fail "no ping from $ns1 to 192.0.2.2"
wait_for "sr_ping $ns2 192.0.2.1" 10 || fail "no ping from $ns2 to 192.0.2.1"
log "ok: ping across the veth in both directions"

sr_expect_port "$sa" ACTIVE
sr_expect_port "$sb" ACTIVE
sr_expect_eq "$sa node_guid" "$(cat "$SR_SYS/$sa/node_guid")" "$(sr_guid_of_mac "$maca")"
sr_expect_eq "$sb node_guid" "$(cat "$SR_SYS/$sb/node_guid")" "$(sr_guid_of_mac "$macb")"
sr_expect_eq "$sa netdev" "$(sr_link_field "$sa" netdev)" "$va"
sr_expect_eq "$sb netdev" "$(sr_link_field "$sb" netdev)" "$vb"
sr_expect_eq "$rxe state" "$(sr_port_attr "$rxe" state)" "4: ACTIVE"
wait_for "sr_gid_index $sa 192.0.2.1" 10 || fail "$sa: no GID for 192.0.2.1: $(sr_gids "$sa")"
wait_for "sr_gid_index $sb 192.0.2.2" 10 || fail "$sb: no GID for 192.0.2.2: $(sr_gids "$sb")"

if sr_have_provider; then
	subtest_begin "ibv_devices and ibv_devinfo see all three devices"
	list=$(ibv_devices 2>&1)
	log "$list"
	for d in "$rxe" "$sa" "$sb"; do
		grep -qw "$d" <<<"$list" || fail "ibv_devices does not list $d"
		info=$(sr_devinfo "$d") || fail "ibv_devinfo -d $d failed: $(cat "$SR_DEVINFO_ERR")"
		grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$info" || fail "ibv_devinfo -d $d: port not active: $info"
		if grep -i 'no userspace device-specific driver\|couldn.t load driver' "$SR_DEVINFO_ERR"; then
			fail "ibv_devinfo -d $d warned about its provider"
		fi
		log "ok: ibv_devinfo -d $d"
	done
	# Inside a namespace too.
	ns_exec "$ns1" ibv_devices | grep -qw "$sa" || fail "ibv_devices in $ns1 does not list $sa"
else
	subtest_skip "ibv_devices and ibv_devinfo see all three devices" "no provider (build/user/libsroce-rdmav<N>.so)"
fi

subtest_begin "sroce where rxe holds UDP 4791: EADDRINUSE, nothing left"
sr_dummy - "${SR_ID}x"
sr_dmesg_mark
sr_link_add_fails - "$bad" "${SR_ID}x" "Address already in use"
sr_expect_dmesg "sroce: UDP port 4791 is already in use in this network namespace"
! sr_exists "$bad" || fail "$bad exists after the failed add"
rdma link show -j | jq -e --arg n "${SR_ID}x" '.[] | select(.netdev == $n)' >/dev/null &&
	fail "some RDMA link is on ${SR_ID}x after the failed add"
sr_expect_eq "initial namespace 4791 sockets after the failure" "$(sr_sockets -)" "$init_socks"
sr_expect_eq "$rxe state after the failure" "$(sr_port_attr "$rxe" state)" "4: ACTIVE"
# The failure left no half-taken reference: the namespace devices are intact,
# and deleting them closes their sockets.
sr_expect_sockets "$ns1" yes
check ns_exec "$ns1" rdma link delete "$sa"
sr_expect_sockets "$ns1" no
sr_expect_sockets "$ns2" yes
check ns_exec "$ns2" rdma link delete "$sb"
sr_expect_sockets "$ns2" no
sr_expect_eq "initial namespace 4791 sockets at the end" "$(sr_sockets -)" "$init_socks"
subtest_end
log "PASS"
