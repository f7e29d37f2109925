#!/bin/bash
# timeout: 240
#
# Port 1 follows its netdev: ACTIVE/LinkUp iff the netdev is up with carrier,
# DOWN/Disabled otherwise (admin down, or carrier lost because the veth peer
# went down), with one IB async event per change (IBV_EVENT_PORT_ERR /
# IBV_EVENT_PORT_ACTIVE, seen by ibv_asyncwatch through the provider).
# active_mtu follows the netdev MTU: the largest IB MTU with IB MTU + 84 <=
# netdev MTU (256 below 340); max_mtu is always 4096.
export SR_TAG=po # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns=$SR_ID va=${SR_ID}a vb=${SR_ID}b name=${SR_ID}ib

sr_setup
ns_create "$ns"
veth_pair "$ns" "$va" "$ns" "$vb"
sr_link_add "$ns" "$name" "$va"
wait_for "[[ \"\$(cat $SR_SYS/$name/ports/1/state)\" == '4: ACTIVE' ]]" 10 || true
sr_expect_port "$name" ACTIVE
sr_expect_eq "link_layer" "$(sr_port_attr "$name" link_layer)" "Ethernet"

provider=0
if sr_have_provider && command -v ibv_asyncwatch >/dev/null; then
	provider=1
	sr_asyncwatch "$name"
else
	log "NOTE: provider (build/user/libsroce-rdmav<N>.so) or ibv_asyncwatch missing: async events and active_mtu NOT checked"
fi

# expect_events N: the watcher has printed exactly N port events so far, the
# last one being $2. (An extra event still on its way when this looks is
# caught by the next call: events arrive in order, and the last call, after
# a port change of its own, is the fence for everything before it.)
expect_events() {
	((provider)) || return 0
	wait_for "(( \$(grep -c 'event_type' $events) >= $1 ))" 10 ||
		fail "expected $1 async events, got: $(cat "$events")"
	sr_expect_eq "number of async events" "$(grep -c event_type "$events")" "$1"
	sr_expect_eq "async event #$1" "$(grep event_type "$events" | tail -n1 | awk '{print $2}')" "$2"
	grep event_type "$events" | tail -n1 | grep -q 'port 1$' || fail "event not for port 1: $(tail -n1 "$events")"
}

evs=" and async events"
((provider)) || evs=" (async events unchecked: no provider)"
subtest_begin "admin down/up: port state$evs"
check ip -n "$ns" link set "$va" down
sr_expect_port "$name" DOWN
expect_events 1 IBV_EVENT_PORT_ERR
check ip -n "$ns" link set "$va" up
wait_for "[[ \"\$(cat $SR_SYS/$name/ports/1/state)\" == '4: ACTIVE' ]]" 10 || true
sr_expect_port "$name" ACTIVE
expect_events 2 IBV_EVENT_PORT_ACTIVE

subtest_begin "carrier loss (peer down/up): port state$evs"
check ip -n "$ns" link set "$vb" down
wait_for "[[ \"\$(cat $SR_SYS/$name/ports/1/state)\" == '1: DOWN' ]]" 10 || true
sr_expect_port "$name" DOWN
expect_events 3 IBV_EVENT_PORT_ERR
check ip -n "$ns" link set "$vb" up
wait_for "[[ \"\$(cat $SR_SYS/$name/ports/1/state)\" == '4: ACTIVE' ]]" 10 || true
sr_expect_port "$name" ACTIVE
expect_events 4 IBV_EVENT_PORT_ACTIVE

if ((provider)); then
	subtest_begin "an MTU change gives no event"
else
	subtest_skip "an MTU change gives no event" "no provider or ibv_asyncwatch"
fi
check ip -n "$ns" link set "$va" mtu 1400
check ip -n "$ns" link set "$va" mtu 1500
expect_events 4 IBV_EVENT_PORT_ACTIVE

if ((provider)); then
	subtest_begin "active_mtu follows the netdev MTU (each boundary)"
	# Each boundary from both sides: 4096+84, 2048+84, 1024+84, 512+84, 340.
	for mtu in 1500 9000 4200 4180 4179 2132 2131 1108 1107 1280 600 596 595 340 339 68; do
		check ip -n "$ns" link set "$va" mtu "$mtu"
		info=$(sr_devinfo "$name") || fail "ibv_devinfo -d $name failed: $(cat "$SR_DEVINFO_ERR")"
		want=$(sr_ib_mtu "$mtu")
		got=$(sr_devinfo_field "$info" active_mtu)
		[[ "$got" == "$want "* ]] || fail "netdev MTU $mtu: active_mtu '$got', want $want"
		got=$(sr_devinfo_field "$info" max_mtu)
		[[ "$got" == "4096 (5)" ]] || fail "netdev MTU $mtu: max_mtu '$got', want 4096 (5)"
		log "ok: netdev MTU $mtu -> active_mtu $want, max_mtu 4096"
	done
	check ip -n "$ns" link set "$va" mtu 1500
	# An MTU change never changes the port state.
	sr_expect_port "$name" ACTIVE
	# The fence: the next port change is event 5, so no MTU change (or
	# anything before) sent one of its own.
	subtest_begin "no spurious event before the next port change"
	check ip -n "$ns" link set "$va" down
	expect_events 5 IBV_EVENT_PORT_ERR
	check ip -n "$ns" link set "$va" up
	expect_events 6 IBV_EVENT_PORT_ACTIVE
	subtest_end
else
	subtest_skip "active_mtu follows the netdev MTU (each boundary)" "needs the provider and ibv_asyncwatch"
	subtest_skip "no spurious event before the next port change" "needs the provider and ibv_asyncwatch"
fi
log "PASS"
