#!/bin/bash
# timeout: 300
#
# Multi-threaded posting and polling with tools/verbs-tests/rc_mt: several
# threads post SEND, SEND_WITH_IMM, RDMA WRITE and RDMA READ work requests
# to one shared QP, several threads post receives to the peer's one RQ, and
# several threads poll each shared CQ; every wr_id must complete exactly
# once with success, every message arrive exactly once and intact, and each
# thread's work requests complete in the order that thread posted them.
# Three phases on the same QPs: ibv_post_send + ibv_poll_cq; ibv_wr_* (with
# ibv_wr_abort) + ibv_start_poll/ibv_next_poll/ibv_end_poll; both mixed.
#
# Topologies: two sroce devices (veth between two namespaces), IPv4 and
# IPv6; one device (loopback), IPv4.
#
# SROCE_SEED=N reproduces a run's plan (what each thread posts; the
# interleaving of threads is not reproducible); SROCE_MSGS=N sets the work
# requests per sender thread and phase (default sized for a TCG guest).
export SR_TAG=rm # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_mt
msgs=${SROCE_MSGS:-2000}
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}

[[ -x "$bin" ]] || skip "$bin is not built (make verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

# --- topology ------------------------------------------------------------------

sr_vt_topology 83

# --- runs ------------------------------------------------------------------------

# Every run runs; the test fails at the end if any did.
failed=()
mt() { # DESCRIPTION ARGS...
	sr_vt_case 200 60 '' "$@"
}

log "seed base $seed (SROCE_SEED=$seed reproduces this run's plan)"
mt "two devices, IPv4: 4 senders, 4 receive posters, 3+3 pollers" \
	--dev-a "$da" --dev-b "$db" --msgs "$msgs"
mt "two devices, IPv6: 8 senders (2 WRs in flight each), 8 receive posters (4 each), 4+4 pollers" \
	--dev-a "$da" --dev-b "$db" --ipv6 --threads 8 --depth 2 --recv-threads 8 --recv-depth 4 \
	--pollers 4 --msgs $((msgs / 2))
mt "loopback on one device, IPv4: 4 senders, 4 receive posters, 2+2 pollers, path MTU 256" \
	--dev-a "$dl" --dev-b "$dl" --pollers 2 --mtu 256 --max-size 2K --msgs $((msgs / 2))
((${#failed[@]} == 0)) || fail "$(printf '%s; ' "${failed[@]}")"
log "all rc_mt runs passed"
