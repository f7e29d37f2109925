#!/bin/bash
# timeout: 900
#
# XRC (eXtended Reliable Connected transport) with libibverbs' own
# ibv_xsrq_pingpong: the server opens an XRC domain, creates one XRC SRQ and
# one XRC target QP (IBV_QPT_XRC_RECV) per client plus an XRC initiator QP
# (IBV_QPT_XRC_SEND) for its replies; each client does the same, and every
# SEND names the peer's XRC SRQ in its XRCETH. rdma_rxe has no XRC at all.
#  - two sroce devices in two namespaces on a veth pair, over their IPv4 and
#    IPv6 RoCE v2 GIDs, with 1 to 4 clients at once;
#  - one sroce device on a dummy netdev, server and clients on the same device;
#  - message sizes 1 B to 64 KiB at path MTU 1024 (up to 64 packets per
#    SEND, each with its XRCETH), -e (completion events).
# Each run must exit 0 on every side, each side must print "success", and the
# server's device must have received at least the packets the run implies
# (ibv_xsrq_pingpong does not look at the data: the pyverbs suite's XRC
# tests, run by pyverbs_suite, check payloads).
SR_TAG=xs
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss ibv_xsrq_pingpong timeout stdbuf

tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
next_port=19800

sr_pp_topology sroce
# ibv_xsrq_pingpong's server starts sending as soon as it has connected its
# own QPs, and gives a client that has not yet moved its XRC TGT QP to RTR
# only its retry budget (timeout 14, retry_cnt 7: about 0.5 s) to get there.
# The client's modify_qp(RTR) resolves the server's MAC in ib_core, and with
# a cold IPv6 neighbour that can take ib_core's whole 1 s resolve timeout:
# it queues its request only after sending the neighbour solicitation, and an
# advertisement that arrives before that wakes nothing. The server then ends
# in RETRY_EXC and both sides hang; that would happen on any RoCE device.
# Over IPv4 the TCP exchange has already resolved the neighbour; over IPv6
# (the exchange runs on IPv4) a ping each way does.
wait_for "sr_ping $nsb $v6a" 10 || fail "no ICMPv6 echo from $nsb to $v6a"
wait_for "sr_ping $nsa $v6b" 10 || fail "no ICMPv6 echo from $nsa to $v6b"
sr_dmesg_mark

rx_pkts() { cat "$SR_SYS/$1/ports/1/hw_counters/rcvd_pkts"; }

# xp TAG SIZE ITERS NCLI SNS SDEV SGID CNS CDEV CGID ADDR [ARGS...]: one
# ibv_xsrq_pingpong server with -c NCLI and NCLI clients at once, all with
# -s SIZE -n ITERS -m 1024 ARGS. Counts a failure rather than ending the test.
xp() {
	local tag=$1 size=$2 iters=$3 ncli=$4 sns=$5 sdev=$6 sgid=$7 cns=$8
	local cdev=$9 cgid=${10} addr=${11}
	shift 11
	local port=$((next_port++)) spid rc=0 i t0 why='' rx0 rx1 want
	# Line-buffered, so that a hang shows how far each side got.
	local -a common=(stdbuf -oL ibv_xsrq_pingpong -p "$port" -s "$size" -n "$iters" -m 1024 "$@")
	local -a cpids=()
	log "--- $tag: size $size, $iters tests per client, $ncli clients${*:+, $*}"
	rx0=$(rx_pkts "$sdev")
	t0=$SECONDS
	sr_untrapped ns_exec "$sns" timeout 150 "${common[@]}" -c "$ncli" -d "$sdev" -g "$sgid" \
		>"$tmp/$tag.srv" 2>&1 &
	spid=$!
	if sr_server_listens "$spid" "$sns" "$port"; then
		for ((i = 0; i < ncli; i++)); do
			sr_untrapped ns_exec "$cns" timeout 120 "${common[@]}" -d "$cdev" -g "$cgid" "$addr" \
				>"$tmp/$tag.cli$i" 2>&1 &
			cpids+=($!)
		done
		for ((i = 0; i < ncli; i++)); do
			rc=0
			wait "${cpids[i]}" || rc=$?
			[[ $rc == 0 ]] || why="${why:+$why, }client $i exited with $rc"
		done
		[[ -z "$why" ]] || wait_for "! kill -0 $spid" 5 || kill "$spid" 2>/dev/null || true
		rc=0
		wait "$spid" || rc=$?
		[[ $rc == 0 ]] || why="${why:+$why, }server exited with $rc"
	fi
	if [[ -z "$why" ]]; then
		for f in "$tmp/$tag".*; do
			grep -qx success "$f" || { why="${f##*.}: no 'success' line"; break; }
		done
	fi
	if [[ -z "$why" ]]; then
		# Every client's SENDs reach the server's SRQ: ITERS messages of
		# ceil(SIZE / 1024) packets each, at least.
		rx1=$(rx_pkts "$sdev")
		want=$((ncli * iters * ((size + 1023) / 1024)))
		((size > 0)) || want=$((ncli * iters))
		((rx1 - rx0 >= want)) ||
			why="$sdev received $((rx1 - rx0)) packets, want at least $want"
	fi
	if [[ -n "$why" ]]; then
		failures=$((failures + 1))
		subtest_fail "$tag" "$why"
		for f in "$tmp/$tag".*; do sed "s/^/  ${f##*.}| /" "$f"; done
		for d in "$sdev" "$cdev"; do
			log "  $d counters: $(grep -H . "$SR_SYS/$d/ports/1/hw_counters/"* |
				sed 's|.*/||' | grep -v ':0$' | tr '\n' ' ')"
		done
		sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
		return 0
	fi
	log "ok: $tag ($((SECONDS - t0))s, $sdev received $((rx1 - rx0)) packets)"
	subtest_ok "$tag"
}

xp4() { xp "$1" "$2" "$3" "$4" "$nsa" "$da" "$ga4" "$nsb" "$db" "$gb4" "$v4a" "${@:5}"; }
xp6() { xp "$1" "$2" "$3" "$4" "$nsa" "$da" "$ga6" "$nsb" "$db" "$gb6" "$v4a" "${@:5}"; }
xpl() { xp "$1" "$2" "$3" "$4" "$nsl" "$dl" "$gl4" "$nsl" "$dl" "$gl4" 127.0.0.1 "${@:5}"; }
xpl6() { xp "$1" "$2" "$3" "$4" "$nsl" "$dl" "$gl6" "$nsl" "$dl" "$gl6" 127.0.0.1 "${@:5}"; }

log "=== two namespaces, IPv4 GIDs"
xp4 v4-c1-1 1 50 1
xp4 v4-c2-4k 4096 50 2
xp4 v4-c4-64k 65536 10 4
xp4 v4-c2-events 4096 50 2 -e

log "=== two namespaces, IPv6 GIDs"
xp6 v6-c2-4k 4096 50 2
xp6 v6-c1-64k 65536 10 1

log "=== one device looping back"
xpl lo-v4-c2-4k 4096 50 2
xpl6 lo-v6-c2-64k 65536 10 2 -e

if sr_dmesg_since | grep -qi sroce; then
	log "kernel log lines about sroce during the test:"
	sr_dmesg_since | grep -i sroce | tail -n 20 | sed 's/^/  dmesg| /'
fi
[[ $failures == 0 ]] || fail "$failures xsrq_pingpong check(s) failed (see NOT OK above)"
log "all ibv_xsrq_pingpong runs passed"
