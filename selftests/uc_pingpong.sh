#!/bin/bash
# timeout: 1200
#
# UC data path with libibverbs' own ibv_uc_pingpong (SEND/RECV ping-pong over
# one UC QP per side: no ACKs, no retransmission - a lost packet would lose
# its message and hang the ping-pong, which timeout(1) turns into a failure):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket), IPv4 and IPv6;
#  - message sizes 1 B (inline: uc_pingpong uses IBV_SEND_INLINE when the QP's
#    max_inline_data allows it) to 64 KiB (64 packets at path MTU 1024: FIRST,
#    MIDDLEs, LAST), path MTU 1024 (-m 1024, veth MTU 1500) and 4096 (-m 4096,
#    veth MTU 9000), -e (completion events instead of polling), -r (a shallow
#    receive queue), -c (uc_pingpong's buffer check, weak: it catches a
#    message that never landed).
# Each run must exit 0 on both sides, print "invalid data" nowhere, and
# report "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds"
# with a positive rate; each side must see the peer's GID it was given.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=uc
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_pp_begin ibv_uc_pingpong 18900 150 120

# --- topology ---------------------------------------------------------------------
sr_pp_topology sroce
sr_dmesg_mark

# sr_pp4 / sr_pp6 (A serves B over IPv4 / IPv6) and sr_ppl4 / sr_ppl6 (the
# loopback device) TAG SIZE ITERS [ARGS...]: one exchange, checked (lib_sroce.sh).
# Iterations: TCG moves some 30-70 MB/s; keep each run to a few seconds.
log "=== two namespaces, IPv4 GIDs"
sr_pp4 v4-1 1 200 -c
sr_more_case v4-64 && sr_pp4 v4-64 64 200 -c
sr_pp4 v4-1k 1024 200 -c
sr_more_case v4-4k && sr_pp4 v4-4k 4096 100 -c
sr_pp4 v4-64k 65536 30 -c
sr_pp4 v4-events 4096 100 -c -e
sr_more_case v4-events-64k && sr_pp4 v4-events-64k 65536 20 -c -e
sr_pp4 v4-rxdepth 64 300 -c -r 4

log "=== two namespaces, IPv6 GIDs"
sr_more_case v6-1 && sr_pp6 v6-1 1 200 -c
sr_pp6 v6-4k 4096 100 -c
sr_pp6 v6-64k 65536 30 -c
sr_more_case v6-events && sr_pp6 v6-events 1000 100 -c -e

log "=== one device looping back"
sr_ppl4 lo-v4-1 1 200 -c
sr_more_case lo-v4-4k && sr_ppl4 lo-v4-4k 4096 100 -c
sr_ppl4 lo-v4-64k 65536 30 -c
sr_more_case lo-v4-events && sr_ppl4 lo-v4-events 4096 100 -c -e
sr_more_case lo-v6-64k && sr_ppl6 lo-v6-64k 65536 30 -c
sr_ppl6 lo-v6-events 100 200 -c -e

log "=== path MTU 4096 (netdev MTU 9000)"
sr_pp_mtu4096
sr_more_case mtu4096-4k && sr_pp4 mtu4096-4k 4096 50 -c -m 4096
sr_pp4 mtu4096-64k 65536 20 -c -m 4096
sr_pp6 mtu4096-v6-64k 65536 20 -c -m 4096 -e

sr_pp_end "ibv_uc_pingpong run(s)"
log "all ibv_uc_pingpong runs passed"
