#!/bin/bash
# timeout: 240
#
# rmmod sroce with devices present, in several namespaces, removes them all
# cleanly (sockets closed, netdevs untouched), and the netdevs take new
# devices after a reload.
# With processes holding a device open (needs the provider): ibv_asyncwatch
# (an async event file) and an ibv_rc_pingpong server waiting for its peer
# (a PD, an MR, CQs and a QP), rmmod must succeed. sroce implements
# disassociate_ucontext, so the RDMA core holds no module reference for open
# contexts: it disassociates them, and rmmod returns with the module gone.
# The watcher must receive IBV_EVENT_DEVICE_FATAL (ib_uverbs sends it to
# every open context of a device being removed); nothing may be left: no
# device, no uverbs node, no resource in "rdma res show", no socket, and a
# reloaded module makes the device again, with no resources. (teardown_traffic
# does the same under traffic.)
export SR_TAG=rb # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns1=${SR_ID}1 ns2=${SR_ID}2 ns3=${SR_ID}3

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM"
require_cmd ip rdma ss jq
sr_module_own

ns_create "$ns1"
ns_create "$ns2"
ns_create "$ns3"
sr_dummy "$ns1" "${SR_ID}d"
veth_pair "$ns2" "${SR_ID}a" "$ns3" "${SR_ID}b"
sr_dummy "$ns3" "${SR_ID}e"
devs=("${SR_ID}d:$ns1" "${SR_ID}a:$ns2" "${SR_ID}b:$ns3" "${SR_ID}e:$ns3")

create_all() {
	local d
	for d in "${devs[@]}"; do sr_link_add "${d#*:}" "${d%%:*}ib" "${d%%:*}"; done
	for ns in "$ns1" "$ns2" "$ns3"; do sr_expect_sockets "$ns" yes; done
}

for round in 1 2; do
	subtest_begin "round $round: 4 devices in 3 namespaces, then rmmod"
	sroce_load
	create_all
	sr_dmesg_mark
	check rmmod sroce
	[[ ! -e /sys/module/sroce ]] || fail "sroce still loaded"
	for d in "${devs[@]}"; do
		! sr_exists "${d%%:*}ib" || fail "${d%%:*}ib survived rmmod"
		ip -n "${d#*:}" link show "${d%%:*}" >/dev/null || fail "netdev ${d%%:*} vanished with the module"
	done
	for ns in "$ns1" "$ns2" "$ns3"; do sr_expect_sockets "$ns" no; done
	sr_expect_dmesg "sroce: unloaded"
done

subtest_end
if ! { sr_have_provider && command -v ibv_asyncwatch ibv_rc_pingpong >/dev/null; }; then
	why="no provider, ibv_asyncwatch or ibv_rc_pingpong"
	subtest_skip "rmmod with processes holding the device open succeeds" "$why"
	subtest_skip "the holder gets IBV_EVENT_DEVICE_FATAL" "$why"
	subtest_skip "nothing left after rmmod, and after the holders exit" "$why"
	subtest_skip "a reloaded module makes the device again, with no resources" "$why"
	log "PASS"
	exit 0
fi

subtest_begin "rmmod with processes holding the device open succeeds"
name=${SR_ID}dib
sroce_load
sr_link_add "$ns1" "$name" "${SR_ID}d"
uverbs=$(basename "$(ls -d "$SR_SYS/$name/device/infiniband_verbs/"* 2>/dev/null ||
	ls -d /sys/class/infiniband_verbs/*/ 2>/dev/null | while read -r u; do
		[[ $(cat "$u/ibdev" 2>/dev/null) == "$name" ]] && echo "$u"; done)")
[[ -n $uverbs && -e /dev/infiniband/$uverbs ]] || fail "no uverbs node for $name (found '$uverbs')"
log "$name: /dev/infiniband/$uverbs"
sr_asyncwatch "$name"
# ibv_rc_pingpong creates its PD, MR, CQ and QP, then waits for a client on
# TCP: a process with resources on the device, blocked in user space.
pp_out=$(mktemp)
defer rm -f "$pp_out"
ip netns exec "$ns1" ibv_rc_pingpong -d "$name" -p 18777 >"$pp_out" 2>&1 &
holder=$!
defer_quiet kill -9 "$holder"
# res_of DEV: its user objects in "rdma res show" (the process's QP, CQ, MR, PD).
res_of() {
	local t
	for t in qp cq mr pd; do
		rdma res show "$t" 2>/dev/null | grep -E "(link|dev) $1[/ ]" | grep -E 'pid [0-9]+' || true
	done
}
wait_for "ns_exec $ns1 ss -Hltn 'sport = :18777' | grep -q ." 20 ||
	fail "ibv_rc_pingpong did not get to wait for its peer: $(cat "$pp_out")"
held=$(res_of "$name")
grep -q ' qp ' <<<" $held" || grep -q 'qpn' <<<"$held" || fail "rdma res show lists no QP of ibv_rc_pingpong on $name: $held"
log "held on $name: $(wc -l <<<"$held") user objects"
sed 's/^/  | /' <<<"$held"
sr_dmesg_mark
rc=0
t0=$SECONDS
rmmod_out=$(timeout 120 rmmod sroce 2>&1) || rc=$?
log "rmmod: exit $rc after $((SECONDS - t0)) s ${rmmod_out:+($rmmod_out)}"
[[ $rc == 0 ]] || fail "rmmod sroce with the device open: exit $rc: $rmmod_out"
[[ ! -e /sys/module/sroce ]] || fail "rmmod returned 0 but /sys/module/sroce is still there"
sr_expect_dmesg "sroce: unloaded"

subtest_begin "the holder gets IBV_EVENT_DEVICE_FATAL"
wait_for "grep -q IBV_EVENT_DEVICE_FATAL $events" 10 ||
	fail "ibv_asyncwatch saw no IBV_EVENT_DEVICE_FATAL: $(cat "$events")"
log "watcher: $(grep event_type "$events" | xargs)"
# DEVICE_FATAL is the last event: ib_uverbs frees the async file's queue
# only when the fd is released (uverbs_async_event_destroy_uobj, 5.7 on: "the
# user knows it has reached the end of the event stream"), so the watcher's
# next read blocks. It had that one event, and still waits.
n=$(grep -c event_type "$events" || true)
[[ $n == 1 ]] || fail "ibv_asyncwatch saw $n events, want the one DEVICE_FATAL: $(cat "$events")"
sleep 2
kill -0 "$watcher" 2>/dev/null || fail "ibv_asyncwatch ended after the fatal event: $(cat "$events")"
log "ibv_asyncwatch had the one fatal event and waits for more, as ib_uverbs intends (killed)"
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true

subtest_begin "nothing left after rmmod, and after the holders exit"
! sr_exists "$name" || fail "$name still exists after rmmod"
[[ ! -e /dev/infiniband/$uverbs ]] || fail "/dev/infiniband/$uverbs is still there after rmmod"
[[ ! -e /sys/class/infiniband_verbs/$uverbs ]] || fail "/sys/class/infiniband_verbs/$uverbs is still there"
[[ -z "$(res_of "$name")" ]] || fail "rdma res show still lists objects on $name: $(res_of "$name")"
sr_expect_sockets "$ns1" no
kill -0 "$holder" 2>/dev/null || log "note: ibv_rc_pingpong already ended: $(tail -n 2 "$pp_out" | xargs)"
kill -9 "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
[[ -z "$(rdma res show 2>/dev/null | grep -F "$SR_ID" || true)" ]] || fail "rdma res show: $(rdma res show | grep -F "$SR_ID")"
[[ ! -e /sys/module/sroce ]] || fail "sroce came back?"
! lsmod | grep -qw '^sroce' || fail "lsmod still lists sroce"

subtest_begin "a reloaded module makes the device again, with no resources"
sroce_load
sr_link_add "$ns1" "$name" "${SR_ID}d"
sr_expect_port "$name" ACTIVE
sr_expect_sockets "$ns1" yes
left=$(rdma res show -j 2>/dev/null | jq -r --arg d "$name" '.[] | select(.ifname == $d) | "\(.pd) \(.cq) \(.qp) \(.mr) \(.ctx)"')
log "rdma res show $name: pd cq qp mr ctx = $left"
# The core's own QP1 (GSI) with its CQ and PD may be counted; no MR, no context.
read -r _ _ _ mrs ctxs <<<"$left"
[[ ${mrs:-0} == 0 && ${ctxs:-0} == 0 ]] || fail "the new $name starts with $mrs MRs and $ctxs user contexts"
check rmmod sroce
! sr_exists "$name" || fail "device survived rmmod"
sr_expect_sockets "$ns1" no
subtest_end
log "PASS"
