#!/bin/bash
# timeout: 900
#
# UD data path with libibverbs' own ibv_ud_pingpong (SEND/RECV ping-pong over
# one UD QP per side, addressed through an address handle; every receive
# carries the 40-byte GRH in front of the payload):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket);
#  - message sizes from 1 byte up to the port's active MTU (a UD message is
#    one packet): 1024 with the veth at MTU 1500, 4096 at MTU 9000;
#    small sizes go inline (ud_pingpong uses IBV_SEND_INLINE when the QP's
#    max_inline_data allows it), larger ones from the MR;
#  - -e (completion events instead of polling) and -c (the receiver checks
#    its buffer behind the GRH: weak - one byte per page - but it catches a
#    payload at the wrong offset);
#  - then sroce_e2e_ud (user/tests/e2e_ud.cpp, if built) on the loopback
#    device, for what ud_pingpong does not look at (see there).
# Each run must exit 0 on both sides, print "invalid data" nowhere, and
# report "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds"
# with a positive rate; each side must see the peer's GID it was given.
# A lost datagram would hang a ping-pong: runs are bounded by timeout(1) and
# count as failures then.
#
# SROCE_UD_BACKEND=rxe runs the same exchanges over one rdma_rxe device in the
# initial namespace (both "sides" on it): a check of this script, not of sroce.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=ud
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

backend=${SROCE_UD_BACKEND:-sroce}
sr_pp_begin ibv_ud_pingpong 18700 120 90

# --- topology ---------------------------------------------------------------------
sr_pp_topology "$backend"

# active_mtu DEV NS: the port's active MTU in bytes.
active_mtu() {
	ns_exec "$2" ibv_devinfo -d "$1" | awk '$1 == "active_mtu:" { print $2; exit }'
}
sr_dmesg_mark

mtu=$(active_mtu "$da" "$nsa")
[[ $mtu == 1024 ]] || fail "$da: active_mtu $mtu with netdev MTU 1500, want 1024"
log "ok: active_mtu $mtu on $da"

# sr_pp4 / sr_pp6 (A serves B over IPv4 / IPv6) and sr_ppl4 / sr_ppl6 (the
# loopback device) TAG SIZE ITERS [ARGS...]: one exchange, checked (lib_sroce.sh).
log "=== two namespaces, IPv4 GIDs (MTU 1024)"
sr_pp4 v4-1 1 200 -c
sr_more_case v4-64 && sr_pp4 v4-64 64 200 -c
sr_pp4 v4-mtu 1024 200 -c
sr_pp4 v4-events 1024 200 -c -e
sr_pp4 v4-rxdepth 64 300 -c -r 16

log "=== two namespaces, IPv6 GIDs (MTU 1024)"
sr_more_case v6-1 && sr_pp6 v6-1 1 200 -c
sr_pp6 v6-mtu 1024 200 -c
sr_pp6 v6-events 1000 200 -c -e

log "=== one device looping back"
sr_more_case lo-v4-1 && sr_ppl4 lo-v4-1 1 200 -c
sr_ppl4 lo-v4-mtu 1024 200 -c
sr_more_case lo-v4-events && sr_ppl4 lo-v4-events 1024 200 -c -e
sr_more_case lo-v6-mtu && sr_ppl6 lo-v6-mtu 1024 200 -c
sr_ppl6 lo-v6-events 100 200 -c -e

# sroce_e2e_ud (user/tests/e2e_ud.cpp): two UD QPs of one process on the
# loopback device check what ibv_ud_pingpong cannot see - the GRH contents,
# the sender's QPN, IBV_WC_GRH, immediates, inline and wr_* sends, Q_Key
# filtering, an MTU-sized message, IBV_WC_LOC_LEN_ERR above it, the AH's PD.
if [[ $backend == sroce ]]; then
	sr_pp_e2e sroce_e2e_ud 240
fi

log "=== MTU 4096 (netdev MTU 9000)"
sr_pp_mtu4096
sr_pp4 mtu4096-v4-4k 4096 100 -c
sr_more_case mtu4096-v4-events && sr_pp4 mtu4096-v4-events 4096 100 -c -e
sr_pp6 mtu4096-v6-4k 4096 100 -c
sr_pp6 mtu4096-v6-events 3000 100 -c -e

sr_pp_end "ibv_ud_pingpong run(s)"
log "all ibv_ud_pingpong runs passed on $backend"
