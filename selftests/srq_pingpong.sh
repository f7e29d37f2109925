#!/bin/bash
# timeout: 900
#
# Shared receive queues with libibverbs' own ibv_srq_pingpong (SEND/RECV
# ping-pong over several RC QPs per side; each side's QPs all receive through
# one SRQ, which it refills with ibv_post_srq_recv when it runs low):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket), IPv4 and IPv6;
#  - 1 to 16 QPs on the SRQ (-q), message sizes 1 B to 64 KiB (path MTU 1024:
#    up to 64 packets per message), a shallow SRQ (-r 8: the refill runs all
#    the time) and the default 500-deep one, -e (completion events instead of
#    polling) and -c (srq_pingpong's buffer check: it only catches a message
#    that never landed);
#  - then sroce_e2e_srq (user/tests/e2e_srq.cpp, if built) on the loopback
#    device, for what ibv_srq_pingpong does not look at: WQEs taken in posting
#    order across RC and UC QPs, two-SGE scatter, the SRQ limit event
#    (IBV_EVENT_SRQ_LIMIT_REACHED exactly when fewer than srq_limit remain,
#    once), resize with WQEs posted (they survive and complete first; shrinking
#    below what is posted is refused), IBV_EVENT_QP_LAST_WQE_REACHED, and the
#    up-front rejects (ibv_post_recv on a QP with an SRQ, too many SGEs, full).
# Each run must exit 0 on both sides, print "invalid data" nowhere, report
# "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds" with a
# positive rate, and list one remote address per QP, each with the peer's GID.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=srq
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_pp_begin ibv_srq_pingpong 18800 150 120 nqp

# --- topology ---------------------------------------------------------------------
sr_pp_topology sroce
sr_dmesg_mark

# sr_pp4 / sr_pp6 (A serves B over IPv4 / IPv6) and sr_ppl4 / sr_ppl6 (the
# loopback device) TAG SIZE ITERS NQP [ARGS...]: one exchange, checked (lib_sroce.sh).
# Iterations: TCG moves some 30-70 MB/s; keep each run to a few seconds.
log "=== two namespaces, IPv4 GIDs"
sr_pp4 v4-q1 64 200 1 -c
sr_more_case v4-q4-1 && sr_pp4 v4-q4-1 1 400 4 -c
sr_more_case v4-q4-4k && sr_pp4 v4-q4-4k 4096 200 4 -c
sr_pp4 v4-q4-64k 65536 40 4 -c
sr_pp4 v4-q16 1024 400 16 -c
sr_pp4 v4-q4-shallow 64 400 4 -c -r 8
sr_pp4 v4-q4-events 4096 200 4 -c -e
sr_more_case v4-q4-events-64k && sr_pp4 v4-q4-events-64k 65536 32 4 -c -e

log "=== two namespaces, IPv6 GIDs"
sr_more_case v6-q4-1 && sr_pp6 v6-q4-1 1 400 4 -c
sr_pp6 v6-q4-64k 65536 40 4 -c
sr_pp6 v6-q8-events 4096 200 8 -c -e -r 16

log "=== one device looping back"
sr_more_case lo-v4-q4-4k && sr_ppl4 lo-v4-q4-4k 4096 200 4 -c
sr_ppl4 lo-v4-q4-64k 65536 40 4 -c
sr_ppl4 lo-v4-q4-events 1024 200 4 -c -e -r 8
sr_more_case lo-v6-q4-64k && sr_ppl6 lo-v6-q4-64k 65536 40 4 -c
sr_ppl6 lo-v6-q16-events 64 400 16 -c -e

# sroce_e2e_srq (user/tests/e2e_srq.cpp): what ibv_srq_pingpong cannot see.
sr_pp_e2e sroce_e2e_srq 300

sr_pp_end "srq_pingpong check(s)"
log "all ibv_srq_pingpong runs and sroce_e2e_srq passed"
