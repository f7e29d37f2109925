#!/bin/bash
# timeout: 200
#
# Zero-length RC operations with tools/verbs-tests/rc_zero: an RDMA WRITE,
# a WRITE with immediate, a READ and a SEND of zero bytes, the WRITE's and
# READ's remote address and R_Key left 0 (then a nonzero address and an
# R_Key that names nothing): IBTA C9-88, the responder checks neither for
# a zero-length transfer. Each completes successfully, the QPs stay in
# RTS, a WRITE behind it arrives, nothing else is written. UCX's rc_verbs
# sends such WRITEs (its endpoint check and flush); sroce used to NAK them
# with a remote access error, failing both QPs.
#
# Topologies: two sroce devices (veth between two namespaces), IPv4, with
# 0/0 and with the bad address and R_Key; one device (loopback), IPv4.
# Then B's QP without remote access rights: the zero-length WRITEs and
# READ must fail with a remote access error (C9-88 spares the R_Key check,
# not the QP's rights; they used to pass).
# Each case of each run is a sub-case.
export SR_TAG=rz # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_zero

[[ -x "$bin" ]] || skip "$bin is not built (cmake -S tools/verbs-tests -B build/verbs-tests && cmake --build build/verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

sr_vt_topology 99

tmp=$(mktemp -d)
defer rm -rf "$tmp"
guard=$((10 * ${SROCE_TIMEOUT_SCALE:-1}))
zero() { sr_run_prog_tap $((10 * guard)) "$1" "$bin" --timeout "$guard" "${@:2}"; } # DESCRIPTION ARGS...

zero "two devices, IPv4, address and R_Key 0" --dev-a "$da" --dev-b "$db"
zero "two devices, IPv4, a bad address and R_Key" --dev-a "$da" --dev-b "$db" --bad-addr
zero "loopback on one device, IPv4" --dev-a "$dl" --dev-b "$dl"
zero "two devices, IPv4, no remote access on B's QP" --dev-a "$da" --dev-b "$db" --no-remote-access

((${#SR_PROG_FAILED[@]} == 0)) || fail "rc_zero failed: $(printf '%s; ' "${SR_PROG_FAILED[@]}")"
log "all rc_zero runs passed"
