#!/bin/bash
# timeout: 300
#
# Packets the kernel could not allocate, with tools/verbs-tests/tx_nomem
# and sroce's debugfs knobs sroce/fail_tx_alloc{,_skip,_qpn} (the next N
# packet allocations of one QP fail, after K let through): a UC WRITE whose
# packet was dropped completes, like one lost on the wire, and so does the
# fenced WRITE behind it, posted apart or in one list; a 4-packet UC WRITE
# whose first packet was dropped completes and nothing of it lands; an RC
# WRITE at ACK timeout 0 (none) completes, sent again after a short hold;
# an RC WRITE with retry_cnt 0 survives 3 failed allocations (they cost no
# retry); one whose 11th packet failed completes with nothing else sent
# again; a UD SEND completes as a lost datagram. Data checked at B in each
# case; A's send_err counts every failed allocation.
#
# Topologies: two sroce devices (veth between two namespaces), IPv4 and
# IPv6; one device (loopback), IPv4. Each case of each topology is a
# sub-case, and the counter check of each topology another.
export SR_TAG=tn # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/tx_nomem
knob=/sys/kernel/debug/sroce/fail_tx_alloc

[[ -x "$bin" ]] || skip "$bin is not built (cmake -S tools/verbs-tests -B build/verbs-tests && cmake --build build/verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
grep -qs ' /sys/kernel/debug debugfs ' /proc/mounts || skip "debugfs is not mounted on /sys/kernel/debug"
[[ -w $knob ]] || fail "$knob is missing: sroce.ko has no fail_tx_alloc"

sr_vt_topology 93

tmp=$(mktemp -d)
defer rm -rf "$tmp"
knob_zero() { echo 0 >"$knob"; echo 0 >"${knob}_skip"; echo 0 >"${knob}_qpn"; }
defer knob_zero
guard=$((10 * ${SROCE_TIMEOUT_SCALE:-1}))
# Failed allocations per run: 1 in each of the 7 cases but rc-no-retry's 3.
want=9
nomem() { # DESCRIPTION DEVICE ARGS...
	local what=$1 dev=$2 before after why
	shift 2
	before=$(sr_hwc "$dev" send_err)
	sr_run_prog_tap $((10 * guard)) "$what" "$bin" --knob "$knob" --timeout "$guard" "$@"
	after=$(sr_hwc "$dev" send_err)
	why=''
	((after - before == want)) || why="send_err went from $before to $after, want +$want"
	subtest_verdict "$what: A's send_err counted each failed allocation" "$why"
}

nomem "two devices, IPv4" "$da" --dev-a "$da" --dev-b "$db"
nomem "two devices, IPv6" "$da" --dev-a "$da" --dev-b "$db" --ipv6
nomem "loopback on one device, IPv4" "$dl" --dev-a "$dl" --dev-b "$dl"

((${#SR_PROG_FAILED[@]} == 0)) || fail "tx_nomem failed: $(printf '%s; ' "${SR_PROG_FAILED[@]}")"
log "all tx_nomem runs passed"
