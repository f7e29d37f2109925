#!/bin/bash
# timeout: 180
#
# rdma link add with bad input fails with the right errno, says why in the
# kernel log ("sroce: ..."; the unknown-netdev case is rejected by the RDMA
# core before sroce sees it), and leaves nothing behind: no RDMA device, no
# link on the netdev, no UDP 4791 socket in the namespace.
#   unknown netdev                        ENODEV (core)
#   tun / ipip / lo (not ARPHRD_ETHER)    EINVAL "is not an Ethernet device"
#   name of an existing sroce device      EEXIST "an RDMA device named X already exists"
#   name of an existing rxe device        EEXIST (same message)
#   second device on the same netdev      EEXIST "already has sroce device"
# and a verb the module refuses (a CQ over max_cqe) says why in a debug
# message once dynamic debug is on for sroce, and nothing while it is off.
export SR_TAG=bi # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns=$SR_ID d0=${SR_ID}a d1=${SR_ID}b tun=${SR_ID}t ipip=${SR_ID}i
good=${SR_ID}ib bad=${SR_ID}no

sr_setup
ns_create "$ns"
sr_dummy "$ns" "$d0"
sr_dummy "$ns" "$d1"

# nothing_left NETDEV: no device named $bad, no RDMA link on NETDEV.
nothing_left() {
	! sr_exists "$bad" || fail "$bad exists after a failed rdma link add"
	if ns_exec "$ns" rdma link show -j | jq -e --arg n "$1" '.[] | select(.netdev == $n)' >/dev/null; then
		fail "an RDMA link is on $1 after a failed add: $(rdma link show)"
	fi
}

subtest_begin "unknown netdev: ENODEV"
sr_dmesg_mark
sr_link_add_fails "$ns" "$bad" "${SR_ID}zz" "No such device"
nothing_left "${SR_ID}zz"
sr_expect_sockets "$ns" no

subtest_end
if modprobe tun 2>/dev/null && ip netns exec "$ns" ip tuntap add dev "$tun" mode tun; then
	subtest_begin "tun device: EINVAL"
	sr_dmesg_mark
	sr_link_add_fails "$ns" "$bad" "$tun" "Invalid argument"
	sr_expect_dmesg "sroce: $tun is not an Ethernet device"
	nothing_left "$tun"
	sr_expect_sockets "$ns" no
else
	subtest_skip "tun device: EINVAL" "no tun support in the guest"
fi

if modprobe ipip 2>/dev/null; then
	subtest_begin "ipip device: EINVAL"
	check ip -n "$ns" link add "$ipip" type ipip local 10.0.0.1 remote 10.0.0.2
	check ip -n "$ns" link set "$ipip" up
	sr_dmesg_mark
	sr_link_add_fails "$ns" "$bad" "$ipip" "Invalid argument"
	sr_expect_dmesg "sroce: $ipip is not an Ethernet device"
	nothing_left "$ipip"
	sr_expect_sockets "$ns" no
else
	subtest_skip "ipip device: EINVAL" "kernel module ipip is not available"
fi

subtest_begin "loopback: EINVAL"
sr_dmesg_mark
sr_link_add_fails "$ns" "$bad" lo "Invalid argument"
sr_expect_dmesg "sroce: lo is not an Ethernet device"
nothing_left lo
sr_expect_sockets "$ns" no

subtest_begin "duplicate device name: EEXIST"
sr_link_add "$ns" "$good" "$d0"
sr_expect_sockets "$ns" yes
sr_dmesg_mark
sr_link_add_fails "$ns" "$good" "$d1" "File exists"
sr_expect_dmesg "sroce: an RDMA device named $good already exists"
sr_expect_eq "$good still on" "$(sr_link_field "$good" netdev)" "$d0"
nothing_left "$d1"

subtest_begin "second device on the same netdev: EEXIST"
sr_dmesg_mark
sr_link_add_fails "$ns" "$bad" "$d0" "File exists"
sr_expect_dmesg "sroce: $d0 already has sroce device $good"
! sr_exists "$bad" || fail "$bad exists"
sr_expect_eq "links on $d0" "$(ns_exec "$ns" rdma link show -j | jq -r --arg n "$d0" '[.[] | select(.netdev == $n) | .ifname] | join(" ")')" "$good"

subtest_end
if sr_rxe_use; then
	subtest_begin "name of an rxe device: EEXIST"
	sr_dummy - "${SR_ID}r"
	check rdma link add "${SR_ID}rxe" type rxe netdev "${SR_ID}r"
	defer_quiet rdma link delete "${SR_ID}rxe"
	sr_dmesg_mark
	sr_link_add_fails "$ns" "${SR_ID}rxe" "$d1" "File exists"
	sr_expect_dmesg "sroce: an RDMA device named ${SR_ID}rxe already exists"
	sr_expect_eq "${SR_ID}rxe still on" "$(sr_link_field "${SR_ID}rxe" netdev)" "${SR_ID}r"
	nothing_left "$d1"
	check rdma link delete "${SR_ID}rxe"
else
	subtest_skip "name of an rxe device: EEXIST" "rdma_rxe cannot be loaded"
fi

# The control path's refusals are debug messages (ibdev_dbg): a verb that
# fails says why once dynamic debug is on for the module, and nothing while
# it is off (Documentation/troubleshooting.rst, "A verb fails with a bare
# error"). ibv_rc_pingpong -r 70000 asks for a CQ of 70001 entries, more
# than the device's max_cqe (65535): create_cq refuses it.
ddc=/sys/kernel/debug/dynamic_debug/control
if [[ ! -w $ddc ]]; then
	subtest_skip "a refused verb: its reason with dynamic debug on, nothing off" "no $ddc (CONFIG_DYNAMIC_DEBUG)"
elif ! sr_have_provider; then
	subtest_skip "a refused verb: its reason with dynamic debug on, nothing off" "the provider is not built"
else
	subtest_begin "a refused verb: its reason with dynamic debug on, nothing off"
	sites=$(grep -c '\[sroce\]' "$ddc" || true)
	((sites >= 100)) || fail "dynamic debug lists $sites call sites in sroce, expected the control path's (100 or more)"
	log "ok: $sites dynamic debug call sites in sroce"
	defer_quiet sh -c "echo 'module sroce -p' > $ddc"
	echo 'module sroce +p' >"$ddc"
	sr_dmesg_mark
	pp=$(ns_exec "$ns" ibv_rc_pingpong -d "$good" -r 70000 2>&1) && fail "ibv_rc_pingpong -r 70000 succeeded: $pp"
	grep -q "Couldn't create CQ" <<<"$pp" || fail "ibv_rc_pingpong -r 70000: expected \"Couldn't create CQ\", got: $pp"
	sr_expect_dmesg "$good: create_cq: cqe 70001 not in \[1, 65535\]"
	echo 'module sroce -p' >"$ddc"
	sr_dmesg_mark
	pp=$(ns_exec "$ns" ibv_rc_pingpong -d "$good" -r 70000 2>&1) && fail "ibv_rc_pingpong -r 70000 succeeded: $pp"
	if sr_dmesg_since | grep -q 'create_cq: cqe'; then
		fail "a debug message with dynamic debug off: $(sr_dmesg_since | grep 'create_cq: cqe')"
	fi
	log "ok: no message with dynamic debug off"
fi

subtest_begin "the good device intact after the failures"
# All the failures left the sockets of the good device alone, exactly one
# pair, and deleting it closes them.
sr_expect_sockets "$ns" yes
sr_expect_port "$good" ACTIVE
check ns_exec "$ns" rdma link delete "$good"
sr_expect_sockets "$ns" no
subtest_end
log "PASS"
