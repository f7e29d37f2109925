#!/bin/bash
# timeout: 180
#
# A sroce device goes away by itself (asynchronously) when its netdev does:
#  1. ip link del of a dummy,
#  2. ip link del of one end of a veth pair with a device on each end,
#  3. ip netns del of a namespace holding a device,
#  4. moving the netdev to another namespace (NETDEV_UNREGISTER in the old one).
# Each time the namespace's UDP 4791 sockets close with its last device, and
# the kernel log has no "unregister_netdevice: waiting for" (leaked netdev
# reference) line. Splats fail the test through run.sh.
export SR_TAG=nr # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns1=${SR_ID}1 ns2=${SR_ID}2 ns3=${SR_ID}3 ns4=${SR_ID}4 name=${SR_ID}ib

sr_setup
# A netdev whose references are not all given back makes the kernel log
# "unregister_netdevice: waiting for ..." every netdev_unregister_timeout_secs
# (10 by default): 1 s here, so that the check at the end, 2 s after the last
# removal, can see one (with 10 s it could not, short of waiting 10 s).
uto=/proc/sys/net/core/netdev_unregister_timeout_secs
if [[ -w $uto ]]; then
	defer sysctl -qw "net.core.netdev_unregister_timeout_secs=$(<"$uto")"
	echo 1 >"$uto"
fi
ns_create "$ns1"
ns_create "$ns2"
sr_dmesg_mark

subtest_begin "deleting a dummy"
sr_dummy "$ns1" "${SR_ID}d"
sr_link_add "$ns1" "${name}d" "${SR_ID}d"
sr_expect_sockets "$ns1" yes
check ip -n "$ns1" link del "${SR_ID}d"
sr_wait_gone "${name}d"
sr_expect_sockets "$ns1" no
log "ok: ${name}d removed with its dummy"

subtest_begin "deleting a veth pair with a device on each end"
veth_pair "$ns1" "${SR_ID}a" "$ns2" "${SR_ID}b"
sr_link_add "$ns1" "${name}a" "${SR_ID}a"
sr_link_add "$ns2" "${name}b" "${SR_ID}b"
sr_expect_sockets "$ns1" yes
sr_expect_sockets "$ns2" yes
check ip -n "$ns2" link del "${SR_ID}b"
sr_wait_gone "${name}a"
sr_wait_gone "${name}b"
sr_expect_sockets "$ns1" no
sr_expect_sockets "$ns2" no
log "ok: both veth devices removed"

subtest_begin "deleting a namespace holding a device (and a veth end)"
ip netns add "$ns3"
defer_quiet ip netns del "$ns3"
veth_pair "$ns3" "${SR_ID}c" "$ns1" "${SR_ID}e"
sr_dummy "$ns3" "${SR_ID}f"
sr_link_add "$ns3" "${name}c" "${SR_ID}c"
sr_link_add "$ns3" "${name}f" "${SR_ID}f"
sr_link_add "$ns1" "${name}e" "${SR_ID}e"
check ip netns del "$ns3"
sr_wait_gone "${name}c" 20
sr_wait_gone "${name}f" 20
# The peer end in ns1 dies with the namespace, and so does its device.
sr_wait_gone "${name}e" 20
sr_expect_sockets "$ns1" no
log "ok: namespace deletion removed its devices and the peer's"

subtest_begin "moving the netdev to another namespace"
ns_create "$ns4"
sr_dummy "$ns1" "${SR_ID}m"
defer_quiet ip -n "$ns4" link del "${SR_ID}m"
sr_link_add "$ns1" "${name}m" "${SR_ID}m"
check ip -n "$ns1" link set "${SR_ID}m" netns "$ns4"
sr_wait_gone "${name}m"
sr_expect_sockets "$ns1" no
sr_expect_sockets "$ns4" no
# The moved netdev can carry a new device in its new namespace.
check ip -n "$ns4" link set "${SR_ID}m" up
sr_link_add "$ns4" "${name}m" "${SR_ID}m"
sr_expect_sockets "$ns4" yes
sr_expect_port "${name}m" ACTIVE
check ip -n "$ns4" link del "${SR_ID}m"
sr_wait_gone "${name}m"
sr_expect_sockets "$ns4" no

subtest_begin "kernel log: no stuck netdev, no sroce failure"
# Twice the unregister warning period set above.
sleep 2
if sr_dmesg_since | grep -E 'unregister_netdevice: waiting for|sroce: .*fail'; then
	fail "kernel log shows a stuck netdev or a sroce failure"
fi
log "PASS"
