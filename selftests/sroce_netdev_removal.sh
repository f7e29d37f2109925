#!/bin/bash
# timeout: 180
#
# A sroce device goes away by itself (asynchronously) when its netdev does:
#  1. ip link del of a dummy,
#  2. ip link del of one end of a veth pair with a device on each end,
#  3. ip netns del of a namespace holding a device,
#  4. moving the netdev to another namespace (NETDEV_UNREGISTER in the old one).
# Each time the namespace's UDP 4791 sockets close with its last device.
# Then: every removed netdev is freed (the kernel's "unregister_netdevice:
# waiting for" notices, every second here, stop: no leaked reference), the
# log has no sroce failure, and - strictly - no notice at all (each netdev
# freed within 1 s). Splats fail the test through run.sh.
export SR_TAG=nr # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns1=${SR_ID}1 ns2=${SR_ID}2 ns3=${SR_ID}3 ns4=${SR_ID}4 name=${SR_ID}ib

sr_setup
# A netdev whose references are not all given back makes the kernel log
# "unregister_netdevice: waiting for ..." every netdev_unregister_timeout_secs
# (10 by default): 1 s here, so that the checks at the end see a leak as a
# notice that keeps coming every second, and any netdev held for more than
# 1 s as at least one notice.
uto=/proc/sys/net/core/netdev_unregister_timeout_secs
[[ -w $uto ]] || skip "$uto is not writable"
defer sysctl -qw "net.core.netdev_unregister_timeout_secs=$(<"$uto")"
echo 1 >"$uto"
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

# The kernel repeats "unregister_netdevice: waiting for NAME" every period
# (1 s here) while NAME has references out: for good if one leaked, until
# it is freed if it is only late. Count each name's notices every 3 s until
# no count grows (every removed netdev freed), 60 s at most.
notice_counts() {
	sr_dmesg_since | sed -nE 's/.*unregister_netdevice: waiting for ([^ ]+) to become free.*/\1/p' |
		sort | uniq -c | awk '{print $2 "=" $1}'
}
subtest_begin "every removed netdev was freed (no leaked reference)"
before=$(notice_counts)
pending='' t0=$SECONDS
while :; do
	sleep 3
	now=$(notice_counts)
	pending=$(comm -13 <(sort <<<"$before") <(sort <<<"$now") | sed 's/=.*//' | xargs)
	[[ -n $pending && $((SECONDS - t0)) -lt 60 ]] || break
	before=$now
done
[[ -z $pending ]] || fail "still waited for after $((SECONDS - t0)) s (a leaked reference): $pending"
log "ok: no netdev still waited for$([[ -z $now ]] || echo " (notices per netdev: $(xargs <<<"$now"))")"

subtest_begin "kernel log: no sroce failure"
if sr_dmesg_since | grep -E 'sroce: .*fail'; then
	fail "kernel log shows a sroce failure"
fi
log "PASS"

# The strict promptness check: no notice at all, i.e. every netdev freed
# within 1 s of its removal. The RDMA core gives a netdev back only once
# it has unregistered the device on it, from a work item
# (ib_unregister_device_queued); where that alone takes half the period or
# more (measured: "rdma link delete" of a device, timed below), the check
# stays visible as a known failure, reported as a skipped sub-case.
sr_dummy "$ns2" "${SR_ID}t"
sr_link_add "$ns2" "${name}t" "${SR_ID}t"
ts=$EPOCHREALTIME
check ns_exec "$ns2" rdma link delete "${name}t"
te=$EPOCHREALTIME
unreg_ms=$(((${te/./} - ${ts/./}) / 1000))
log "info: rdma link delete took ${unreg_ms} ms here"
if [[ -z $now ]]; then
	subtest_ok "every netdev freed within 1 s of its removal (no notice)"
elif ((unreg_ms >= 500)); then
	subtest_skip "every netdev freed within 1 s of its removal (no notice)" \
		"known failure: notices $(xargs <<<"$now"): unregistering one device takes ${unreg_ms} ms on this kernel, and the core frees the netdev only after that"
else
	subtest_fail "every netdev freed within 1 s of its removal (no notice)" \
		"notices $(xargs <<<"$now") although unregistering a device takes ${unreg_ms} ms here"
fi
