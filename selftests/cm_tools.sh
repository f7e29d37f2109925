#!/bin/bash
# timeout: 1200
#
# RDMA CM over sroce with rdmacm-utils, unmodified: the kernel's RDMA CM and
# IB CM exchange their MADs through sroce's GSI QP (QP1, UD over RoCE v2),
# then the tools move data on RC (or UD) QPs through the provider.
#
# Two sroce devices in two namespaces on a veth pair, over IPv4 and IPv6:
#  - rping: 200 iterations with data verification (-V), 64 B and 64 KiB - 1;
#  - ucmatose: 4 connections, 50 messages each;
#  - udaddy: UD data transfers addressed by the CM (address handles, GRH);
#  - rdma_server / rdma_client (the librdmacm "simple" API);
#  - rstream and riostream (rsockets over RC), 100 transfers of 64 KiB, with
#    data verification where the tool has it.
# Every server and client must exit 0; the CM MADs must have gone through
# QP1 (rcvd_pkts moved on both devices) and no packet may have been dropped
# as malformed or for an unknown QP.
SR_TAG=cm
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_setup
require_cmd rping ucmatose udaddy rdma_server rdma_client rstream riostream timeout
require_module rdma_ucm
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

v4a=192.0.2.1 v4b=192.0.2.2 v6a=2001:db8::1 v6b=2001:db8::2

sr_veth_topology "$v4a" "$v4b" "$v6a" "$v6b"
sr_wait_gid "$da" "$v4a"
sr_wait_gid "$db" "$v4b"
sr_wait_gid "$da" "$v6a"
sr_wait_gid "$db" "$v6b"

declare -A rcvd0
for d in "$da" "$db"; do rcvd0[$d]=$(sr_hwc "$d" rcvd_pkts); done

tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
# cm_listening COMM: an RDMA CM ID of a process named COMM listens (every
# server here listens through one: rsockets too).
cm_listening() {
	rdma res show cm_id 2>/dev/null | grep "state LISTEN" | grep -q "comm $1 "
}
cmd_name() { local w; read -r w _ <<<"$1"; echo "$w"; }
n=0

# pair WHAT "SERVER CMD" "CLIENT CMD": server in namespace b, client in a;
# both must exit 0 within the time limit.
pair() {
	local what=$1 srv=$2 cli=$3 spid rs rc
	n=$((n + 1))
	log "### $what"
	# shellcheck disable=SC2086
	ip netns exec "$nsb" timeout 240 $srv >"$tmp/s$n" 2>&1 &
	spid=$!
	# The server must be listening before the client resolves the route:
	# the CM answers a REQ to nobody with a reject. (This was a 3 s sleep.)
	if ! wait_for "cm_listening $(cmd_name "$srv") || ! kill -0 $spid" 30 || ! kill -0 "$spid" 2>/dev/null; then
		log "note: $what: no listening RDMA CM ID of $(cmd_name "$srv") seen"
	fi
	rc=0 rs=0
	# shellcheck disable=SC2086
	ip netns exec "$nsa" timeout 200 $cli >"$tmp/c$n" 2>&1 || rc=$?
	wait "$spid" || rs=$?
	if ((rc != 0 || rs != 0)); then
		subtest_fail "$what" "client exit $rc, server exit $rs"
		log "--- server: $srv"
		tail -n 20 "$tmp/s$n"
		log "--- client: $cli"
		tail -n 20 "$tmp/c$n"
		failures=$((failures + 1))
		return 1
	fi
	subtest_ok "$what"
}

for fam in 4 6; do
	if [[ $fam == 4 ]]; then srv=$v4b; else srv=$v6b; fi
	pair "rping IPv$fam, 64 B x 200, verified" \
		"rping -s -a $srv -V -C 200 -S 64" \
		"rping -c -a $srv -V -C 200 -S 64"
	# rping's largest buffer is 64 KiB - 1.
	pair "rping IPv$fam, 65535 B x 50, verified" \
		"rping -s -a $srv -V -C 50 -S 65535" \
		"rping -c -a $srv -V -C 50 -S 65535"
	pair "ucmatose IPv$fam, 4 connections x 50 messages" \
		"ucmatose -b $srv -c 4 -C 50" \
		"ucmatose -s $srv -c 4 -C 50"
	pair "udaddy IPv$fam (UD through the CM)" \
		"udaddy -b $srv" \
		"udaddy -s $srv"
	pair "rdma_server/rdma_client IPv$fam" \
		"rdma_server -s $srv" \
		"rdma_client -s $srv"
	pair "rstream IPv$fam, 100 x 64 KiB" \
		"rstream -b $srv -C 100 -S 65536" \
		"rstream -s $srv -C 100 -S 65536"
	pair "riostream IPv$fam, 100 x 64 KiB" \
		"riostream -b $srv -C 100 -S 65536" \
		"riostream -s $srv -C 100 -S 65536"
done

nf=$failures
for d in "$da" "$db"; do
	r=$(sr_hwc "$d" rcvd_pkts)
	m=$(sr_hwc "$d" rcvd_malformed) nq=$(sr_hwc "$d" rcvd_no_qp) ic=$(sr_hwc "$d" rcvd_icrc_err)
	bad=$((m + nq + ic))
	log "$d: rcvd_pkts ${rcvd0[$d]} -> $r, rcvd_malformed $m, rcvd_no_qp $nq, rcvd_icrc_err $ic"
	((r > rcvd0[$d])) || { log "not ok: $d received nothing"; failures=$((failures + 1)); }
	((bad == 0)) || { log "not ok: $d dropped $bad packets"; failures=$((failures + 1)); }
done
if ((failures > nf)); then
	subtest_fail "the CM went through QP1; no packet dropped" "see 'not ok' above"
else
	subtest_ok "the CM went through QP1; no packet dropped"
fi

((failures == 0)) || fail "$failures of the RDMA CM runs failed"
log "all $n RDMA CM runs passed"
