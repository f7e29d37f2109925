#!/bin/bash
# timeout: 900
#
# Memory windows with tools/verbs-tests/rc_mw: type 1 (ibv_bind_mw) and
# type 2B (IBV_WR_BIND_MW, ibv_wr_bind_mw) windows on an MR registered with
# IBV_ACCESS_MW_BIND and no remote rights; RDMA WRITE/READ and atomics
# through them checked byte by byte; accesses one byte outside a window, or
# needing a right it lacks, or with the MR's own rkey, a stale key (rebind,
# unbind, LOCAL_INV, SEND_WITH_INV, dealloc) or through another QP (type 2B)
# refused with REM_ACCESS_ERR; MW_BIND_ERR for bad binds; ibv_dereg_mr EBUSY
# while windows are bound; EINVAL for bad window types. Each refusal moves
# rem_access_nak_sent / rcvd_fatal_nak by exactly one (rc_mw checks).
#
# Topologies: two sroce devices (veth between two namespaces), IPv4 with
# polling and IPv6 with completion events; one device (loopback), IPv4.
# No device may have seen ICRC errors or malformed packets.
# Each case of each topology is a sub-case.
# SROCE_FULL=1 adds a third pass: two devices over IPv6 with completion events
# (window semantics do not depend on either; other tests cover both).
export SR_TAG=mw # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_mw

[[ -x "$bin" ]] || skip "$bin is not built (cmake -S tools/verbs-tests -B build/verbs-tests && cmake --build build/verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

sr_vt_topology 81

for d in "$da" "$db" "$dl"; do
	[[ -r "$SR_SYS/$d/ports/1/hw_counters/rem_access_nak_sent" ]] || fail "$d has no hw counter rem_access_nak_sent"
done

tmp=$(mktemp -d)
defer rm -rf "$tmp"
mw() { sr_run_prog_tap 400 "$1" "$bin" "${@:2}"; } # DESCRIPTION ARGS...

mw "two devices, IPv4, polling" --dev-a "$da" --dev-b "$db"
sr_more_case "two devices, IPv6, completion events" &&
	mw "two devices, IPv6, completion events" --dev-a "$da" --dev-b "$db" --ipv6 --use-event
mw "loopback on one device, IPv4" --dev-a "$dl" --dev-b "$dl"

subtest_begin "counters: no ICRC error or malformed packet; the NAKs where they belong"
cfailed=()
for d in "$da" "$db" "$dl"; do
	for c in rcvd_icrc_err rcvd_malformed; do
		v=$(sr_hwc "$d" "$c")
		[[ $v == 0 ]] || cfailed+=("$d: $c is $v")
	done
	log "$d: rem_access_nak_sent $(sr_hwc "$d" rem_access_nak_sent), rcvd_fatal_nak $(sr_hwc "$d" rcvd_fatal_nak)"
done
# Every refusal is A (da) accessing B (db).
(($(sr_hwc "$db" rem_access_nak_sent) > 0)) || cfailed+=("$db sent no remote access NAK")
(($(sr_hwc "$da" rem_access_nak_sent) == 0)) || cfailed+=("$da sent remote access NAKs (it only requests)")
((${#cfailed[@]} == 0)) || fail "$(printf '%s; ' "${cfailed[@]}")"
subtest_end

((${#SR_PROG_FAILED[@]} == 0)) || fail "rc_mw failed: $(printf '%s; ' "${SR_PROG_FAILED[@]}")"
log "all rc_mw runs passed"
