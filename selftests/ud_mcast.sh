#!/bin/bash
# timeout: 600
#
# UD multicast over sroce with rdmacm-utils' mckey: the receivers join an IP
# multicast group through the RDMA CM and attach their UD QPs to its GID
# (ibv_attach_mcast), the sender sends UD datagrams to the group's AH
# (destination QPN 0xFFFFFF), and sroce fans each packet out to every
# attached QP on the receiving device.
#
# Two namespaces on a veth pair: the sender in one, two receivers (two QPs
# attached to the same group on one device) in the other; an IPv4 (239.x)
# group. Every receiver must get every message (a veth does not lose
# packets), and the receiving device must have joined the IP group (ip
# maddr) while attached and left it afterwards.
#
# IPv6 groups cannot be tested through the RDMA CM on 6.1: its
# cma_iboe_join_multicast() refuses IPv6 joins on RoCE v2 GIDs with
# ENOTSUPP (mckey: "failure joining: Unknown error 524"), on any device.
# So the verbs do it directly as well: tools/verbs-tests/ud_mcast attaches a
# UD QP to an IPv6 group (ff0e::...) and to an IPv4 one by their GIDs, the
# sender addresses an AH to the group, and the receiver checks every
# datagram (order, payload, GRH destination, source QPN); the device must
# join the IP group while attached and leave it after the detach.
SR_TAG=mc
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_setup
require_cmd mckey timeout stdbuf
require_module rdma_ucm
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

v4a=192.0.2.1 v4b=192.0.2.2 v6a=2001:db8::1 v6b=2001:db8::2
count=20

sr_veth_topology "$v4a" "$v4b" "$v6a" "$v6b"
# Multicast needs a route out of the sender's namespace.
check ip -n "$nsa" route add 224.0.0.0/4 dev "$va"
check ip -n "$nsb" route add 224.0.0.0/4 dev "$vb"
sr_wait_gid "$da" "$v4a"
sr_wait_gid "$db" "$v4b"
sr_wait_gid "$da" "$v6a"
sr_wait_gid "$db" "$v6b"

tmp=$(mktemp -d)
defer rm -rf "$tmp"

run_group() { # FAMILY GROUP SENDER_BIND RECEIVER_BIND
	local fam=$1 grp=$2 sbind=$3 rbind=$4 r1 r2 rc=0 f
	log "### IPv$fam group $grp: 2 receivers in $nsb, sender in $nsa, $count messages"
	ip netns exec "$nsb" timeout 120 stdbuf -oL mckey -m "$grp" -b "$rbind" -C "$count" >"$tmp/r1" 2>&1 &
	r1=$!
	ip netns exec "$nsb" timeout 120 stdbuf -oL mckey -m "$grp" -b "$rbind" -C "$count" >"$tmp/r2" 2>&1 &
	r2=$!
	# The receivers must have joined before anything is sent: mckey prints
	# "receiving data transfers" once its joins completed (its receives
	# are posted before it joins). (This was a 4 s sleep.)
	wait_for "grep -q 'receiving data transfers' $tmp/r1 && grep -q 'receiving data transfers' $tmp/r2" 60 ||
		{ log "not ok: the receivers did not report their joins"; cat "$tmp/r1" "$tmp/r2"; rc=1; }
	if [[ $fam == 4 ]]; then
		ip -n "$nsb" maddr show dev "$vb" | grep -q "inet  *$grp" ||
			{ log "not ok: $vb did not join $grp"; ip -n "$nsb" maddr show dev "$vb"; rc=1; }
	else
		ip -n "$nsb" maddr show dev "$vb" | grep -q "inet6 *$grp" ||
			{ log "not ok: $vb did not join $grp"; ip -n "$nsb" maddr show dev "$vb"; rc=1; }
	fi
	ip netns exec "$nsa" timeout 120 mckey -m "$grp" -b "$sbind" -s -C "$count" >"$tmp/s" 2>&1 ||
		{ log "not ok: sender failed"; cat "$tmp/s"; rc=1; }
	wait "$r1" || { log "not ok: receiver 1 failed"; cat "$tmp/r1"; rc=1; }
	wait "$r2" || { log "not ok: receiver 2 failed"; cat "$tmp/r2"; rc=1; }
	for f in r1 r2; do
		log "$f: $(tail -n 2 "$tmp/$f" | tr '\n' ' ')"
	done
	# Both QPs detached: the device leaves the group.
	if ip -n "$nsb" maddr show dev "$vb" | grep -q " $grp\$"; then
		log "not ok: $vb is still in $grp after the receivers exited"
		rc=1
	fi
	return $rc
}

# verbs_group GROUP FAMILY: ud_mcast receiver in nsb, sender in nsa.
verbs_group() {
	local grp=$1 fam=$2 rpid rc=0 gs gr saddr raddr
	if [[ $fam == 6 ]]; then saddr=$v6a raddr=$v6b; else saddr=$v4a raddr=$v4b; fi
	gs=$(sr_gid_index "$da" "$saddr") gr=$(sr_gid_index "$db" "$raddr")
	log "### verbs, IPv$fam group $grp: receiver on $db (GID $gr), sender on $da (GID $gs)"
	ip netns exec "$nsb" timeout 120 "$ud_mcast" recv "$db" "$gr" "$grp" "$count" >"$tmp/vr" 2>&1 &
	rpid=$!
	wait_for "grep -qx ready $tmp/vr" 30 || { log "not ok: receiver not ready"; cat "$tmp/vr"; rc=1; }
	ip -n "$nsb" maddr show dev "$vb" | grep -q "inet6\? *$grp\b" ||
		{ log "not ok: $vb did not join $grp"; ip -n "$nsb" maddr show dev "$vb"; rc=1; }
	ip netns exec "$nsa" timeout 120 "$ud_mcast" send "$da" "$gs" "$grp" "$count" >"$tmp/vs" 2>&1 ||
		{ log "not ok: sender failed"; cat "$tmp/vs"; rc=1; }
	wait "$rpid" || { log "not ok: receiver failed"; cat "$tmp/vr"; rc=1; }
	log "receiver: $(tail -n 1 "$tmp/vr")"
	if ip -n "$nsb" maddr show dev "$vb" | grep -q " $grp\$"; then
		log "not ok: $vb is still in $grp after the detach"
		rc=1
	fi
	return $rc
}

failures=0
# verdict NAME STATUS: a group's sub-case.
verdict() {
	if [[ $2 == 0 ]]; then
		subtest_ok "$1"
	else
		failures=$((failures + 1))
		subtest_fail "$1" "see the log above"
	fi
}
rc=0
run_group 4 239.192.0.1 "$v4a" "$v4b" || rc=$?
verdict "mckey, IPv4 group, 2 receivers" "$rc"
ud_mcast=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/ud_mcast
if [[ -x $ud_mcast ]]; then
	rc=0
	verbs_group ff0e::db8:1 6 || rc=$?
	verdict "verbs, IPv6 group (attach by GID)" "$rc"
	rc=0
	verbs_group 239.192.0.2 4 || rc=$?
	verdict "verbs, IPv4 group (attach by GID)" "$rc"
else
	subtest_skip "verbs, IPv6 group (attach by GID)" "$ud_mcast is not built (make verbs-tests)"
	subtest_skip "verbs, IPv4 group (attach by GID)" "$ud_mcast is not built (make verbs-tests)"
fi
((failures == 0)) || fail "$failures multicast runs failed"
log "multicast: all runs passed"
