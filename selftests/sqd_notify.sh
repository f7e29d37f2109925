#!/bin/bash
# timeout: 300
#
# IBV_EVENT_SQ_DRAINED with tools/verbs-tests/sqd_notify, for RC, UC and UD
# QPs: send WRs posted, the QP moved RTS -> SQD at once with
# en_sqd_async_notify, then exactly one SQ_DRAINED must come once what had
# started is done, nothing completes after it while in SQD (SQD starts no
# new WR), and back in RTS the held WRs complete, in order.
# UC and UD QPs complete their WRs without acknowledgements, and the event
# used to be missing for them (a UD QP that had sent anything never
# drained; a UC message in progress at the move was retired by the
# requester, which did not look for the drained SQ).
#
# Topologies: two sroce devices (veth between two namespaces), IPv4 and
# IPv6; one device (loopback), IPv4. Each QP type of each topology is a
# sub-case. SROCE_SQD_ARGS="..." is appended to every run (the debug lane:
# smaller messages and fewer rounds).
export SR_TAG=sq # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/sqd_notify

[[ -x "$bin" ]] || skip "$bin is not built (cmake -S tools/verbs-tests -B build/verbs-tests && cmake --build build/verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

sr_vt_topology 89

tmp=$(mktemp -d)
defer rm -rf "$tmp"
# --timeout is a hang guard (a missing event never comes): 30 s, scaled,
# for the 7 MiB a round holds back until RTS, which took over 10 s on the
# debug kernel (2026-12-06).
guard=$((30 * ${SROCE_TIMEOUT_SCALE:-1}))
read -ra extra <<<"${SROCE_SQD_ARGS:-}"
sqd() { sr_run_prog_tap $((20 * guard)) "$1" "$bin" "${@:2}" --timeout "$guard" "${extra[@]}"; } # DESCRIPTION ARGS...

sqd "two devices, IPv4" --dev-a "$da" --dev-b "$db"
sqd "two devices, IPv6" --dev-a "$da" --dev-b "$db" --ipv6 --rounds 5
sqd "loopback on one device, IPv4" --dev-a "$dl" --dev-b "$dl" --rounds 5

((${#SR_PROG_FAILED[@]} == 0)) || fail "sqd_notify failed: $(printf '%s; ' "${SR_PROG_FAILED[@]}")"
log "all sqd_notify runs passed"
