#!/bin/bash
# timeout: 240
#
# rmmod sroce with devices present, in several namespaces, removes them all
# cleanly (sockets closed, netdevs untouched), and the netdevs take new
# devices after a reload. With a process holding a device open
# (ibv_asyncwatch; needs the provider), rmmod must either succeed (the device
# disassociated) or be refused cleanly with the device intact. sroce
# implements disassociate_ucontext, so the RDMA core holds no module
# reference for open contexts and rmmod succeeds: the process's device is
# disassociated (see also teardown_traffic, which does it under traffic).
export SR_TAG=rb # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns1=${SR_ID}1 ns2=${SR_ID}2 ns3=${SR_ID}3

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM"
require_cmd ip rdma ss jq
if _sroce_loaded; then
	log "sroce.ko is loaded; unloading it for this test (reloaded at exit)"
	check rmmod sroce
	defer sroce_load
fi
defer_quiet rmmod sroce

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
	log "--- round $round: 4 devices in 3 namespaces, then rmmod"
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

log "--- rmmod while a process holds a device open"
if ! { sr_have_provider && command -v ibv_asyncwatch >/dev/null; }; then
	log "NOTE: no provider or ibv_asyncwatch: busy case NOT checked"
	log "PASS"
	exit 0
fi
sroce_load
sr_link_add "$ns1" "${SR_ID}dib" "${SR_ID}d"
events=$(mktemp)
defer rm -f "$events"
ibv_asyncwatch -d "${SR_ID}dib" >"$events" 2>&1 &
watcher=$!
defer_quiet kill "$watcher"
wait_for "grep -q 'async event FD' $events" 10 || fail "ibv_asyncwatch did not start: $(cat "$events")"
rc=0
rmmod_out=$(rmmod sroce 2>&1) || rc=$?
if [[ $rc == 0 ]]; then
	log "rmmod succeeded with the device open (disassociated)"
	! sr_exists "${SR_ID}dib" || fail "device still there after a successful rmmod"
	log "watcher output: $(cat "$events")"
else
	log "rmmod refused: $rmmod_out"
	[[ "$rmmod_out" == *"in use"* ]] || fail "rmmod failed, but not with 'in use': $rmmod_out"
	[[ "$(cat /sys/module/sroce/initstate)" == live ]] || fail "module not live after the refused rmmod"
	sr_expect_port "${SR_ID}dib" ACTIVE
	sr_expect_sockets "$ns1" yes
	kill -0 "$watcher" || fail "ibv_asyncwatch died"
	# The device still works for its user: a port event reaches it.
	check ip -n "$ns1" link set "${SR_ID}d" down
	wait_for "grep -q IBV_EVENT_PORT_ERR $events" 10 || fail "no PORT_ERR after the refused rmmod: $(cat "$events")"
	check ip -n "$ns1" link set "${SR_ID}d" up
	kill "$watcher"
	wait "$watcher" 2>/dev/null || true
	check rmmod sroce
	! sr_exists "${SR_ID}dib" || fail "device survived rmmod"
	sr_expect_sockets "$ns1" no
fi
log "PASS"
