#!/bin/bash
# timeout: 900
#
# RC data path with libibverbs' own ibv_rc_pingpong (SEND/RECV ping-pong, one
# QP per side, server and client exchange QP info over TCP):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket);
#  - message sizes 1, 64, 4096, 65536 and 1 MiB with -c (the server checks
#    the received buffer: rc_pingpong's check is weak - the first byte of
#    every page - but catches data that never landed);
#  - -e (completion events instead of polling), -N (the ibv_wr_* API);
#  - path MTU 1024 (-m 1024, veth MTU 1500) and 4096 (-m 4096, veth MTU 9000).
# Each run must exit 0 on both sides, print "invalid data" nowhere, and
# report "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds"
# with a positive rate; each side must see the peer's GID it was given.
#
# SROCE_RC_BACKEND=rxe runs the same exchanges over one rdma_rxe device in the
# initial namespace (both "sides" on it): a check of this script, not of sroce.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=pp
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

backend=${SROCE_RC_BACKEND:-sroce}
sr_pp_begin ibv_rc_pingpong 18600 150 120

# --- topology ---------------------------------------------------------------------
# Each "side" of an exchange: namespace, device, GID index, and (for the
# server) the address the client connects to over TCP.
sr_pp_topology "$backend"
sr_dmesg_mark

# sr_pp4 / sr_pp6 (A serves B over IPv4 / IPv6) and sr_ppl4 / sr_ppl6 (the
# loopback device) TAG SIZE ITERS [ARGS...]: one exchange, checked (lib_sroce.sh).
# Iterations: TCG moves some 30-70 MB/s; keep each run to a few seconds.
log "=== two namespaces, IPv4 GIDs"
sr_pp4 v4-1 1 200 -c
sr_more_case v4-64 && sr_pp4 v4-64 64 200 -c
sr_more_case v4-4k && sr_pp4 v4-4k 4096 100 -c
sr_pp4 v4-64k 65536 30 -c
sr_pp4 v4-1m 1048576 6 -c
sr_pp4 v4-events 4096 100 -c -e
sr_more_case v4-events-64k && sr_pp4 v4-events-64k 65536 20 -c -e
sr_pp4 v4-wrapi 4096 100 -c -N
sr_pp4 v4-rxdepth 64 300 -c -r 16

log "=== two namespaces, IPv6 GIDs"
sr_more_case v6-1 && sr_pp6 v6-1 1 200 -c
sr_more_case v6-4k && sr_pp6 v6-4k 4096 100 -c
sr_pp6 v6-64k 65536 30 -c
sr_pp6 v6-1m 1048576 6 -c -e

log "=== one device looping back"
sr_more_case lo-1 && sr_ppl4 lo-1 1 200 -c
sr_more_case lo-4k && sr_ppl4 lo-4k 4096 100 -c
sr_ppl4 lo-64k 65536 30 -c
sr_ppl4 lo-1m 1048576 6 -c
sr_ppl4 lo-events 4096 100 -c -e

log "=== path MTU 1024 (netdev MTU 1500)"
sr_pp4 mtu1024-64k 65536 20 -c -m 1024
sr_pp6 mtu1024-v6-4k 4096 50 -c -m 1024

log "=== path MTU 4096 (netdev MTU 9000)"
sr_pp_mtu4096
sr_pp4 mtu4096-4k 4096 50 -c -m 4096
sr_pp4 mtu4096-64k 65536 20 -c -m 4096
sr_pp4 mtu4096-1m 1048576 6 -c -m 4096
sr_pp6 mtu4096-v6-64k 65536 20 -c -m 4096 -e

sr_pp_end "ibv_rc_pingpong run(s)"
log "all ibv_rc_pingpong runs passed on $backend"
