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


declare -A sent0 rcvd0
for d in "$da" "$db" "$dl"; do
	sent0[$d]=$(sr_hwc "$d" sent_pkts)
	rcvd0[$d]=$(sr_hwc "$d" rcvd_pkts)
	[[ -n "${sent0[$d]}" && -n "${rcvd0[$d]}" ]] || fail "no sent_pkts/rcvd_pkts counters for $d"
done

failed=()
tmp=$(mktemp -d)
defer rm -rf "$tmp"
errors() { # DESCRIPTION ARGS...
	local what=$1 rc=0
	shift
	log "### $what"
	log "+ $bin $*"
	timeout 200 "$bin" "$@" >"$tmp/out" 2>&1 || rc=$?
	cat "$tmp/out"
	[[ $rc == 0 ]] || failed+=("$what (exit $rc)")
	pass_fail_to_tap <"$tmp/out" >"$tmp/tap"
	subtests_from_tap "$tmp/tap" "$what" "$rc"
}

errors "two devices, IPv4, polling" --dev-a "$da" --dev-b "$db"
errors "two devices, IPv6, completion events" --dev-a "$da" --dev-b "$db" --ipv6 --use-event
errors "loopback on one device, IPv4" --dev-a "$dl" --dev-b "$dl"

subtest_begin "device counters moved"
for d in "$da" "$db" "$dl"; do
	s=$(sr_hwc "$d" sent_pkts)
	r=$(sr_hwc "$d" rcvd_pkts)
	log "$d: sent_pkts ${sent0[$d]} -> $s, rcvd_pkts ${rcvd0[$d]} -> $r"
	((s > sent0[$d])) || fail "$d: sent_pkts did not move"
	((r > rcvd0[$d])) || fail "$d: rcvd_pkts did not move"
done

subtest_end
((${#failed[@]} == 0)) || fail "rc_errors failed: $(printf '%s; ' "${failed[@]}")"
log "all rc_errors runs passed"
