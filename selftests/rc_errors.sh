#!/bin/bash
# timeout: 300
#
# RC error paths with tools/verbs-tests/rc_errors: each case on a fresh pair
# of connected QPs - bad lkey/rkey, out-of-bounds and access-right
# violations, misaligned atomic, SEND longer than the receive, responder
# local protection error, RNR retry exhaustion and recovery, transport retry
# exhaustion against a destroyed / RESET peer - checking the exact
# completion statuses, the QP states, and the flushes on both sides.
#
# Topologies: two sroce devices (veth between two namespaces), IPv4 with
# polling and IPv6 with completion events; one device (loopback), IPv4.
# The device counters (sent_pkts, rcvd_pkts) must have moved.
# Each case of each topology is a sub-case.
export SR_TAG=re # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_errors

[[ -x "$bin" ]] || skip "$bin is not built (cmake -S tools/verbs-tests -B build/verbs-tests && cmake --build build/verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

sr_vt_topology 79


sr_pkts_mark "$da" "$db" "$dl"

tmp=$(mktemp -d)
defer rm -rf "$tmp"
errors() { sr_run_prog_tap 200 "$1" "$bin" "${@:2}"; } # DESCRIPTION ARGS...

errors "two devices, IPv4, polling" --dev-a "$da" --dev-b "$db"
errors "two devices, IPv6, completion events" --dev-a "$da" --dev-b "$db" --ipv6 --use-event
errors "loopback on one device, IPv4" --dev-a "$dl" --dev-b "$dl"

subtest_begin "device counters moved"
sr_pkts_moved "$da" "$db" "$dl"

subtest_end
((${#SR_PROG_FAILED[@]} == 0)) || fail "rc_errors failed: $(printf '%s; ' "${SR_PROG_FAILED[@]}")"
log "all rc_errors runs passed"
