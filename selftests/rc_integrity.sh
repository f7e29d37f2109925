#!/bin/bash
# timeout: 420
#
# RC data integrity with tools/verbs-tests/rc_integrity: one process drives
# two connected RC QPs with random SEND/SEND_IMM/SEND_INV/WRITE/WRITE_IMM/
# READ/CMP_SWAP/FETCH_ADD traffic in both directions and checks every byte
# (and the guard bytes around it), every completion (SEND_WITH_INV: the
# invalidated R_Key of a type 2 window, which must bind again) and every
# atomic result.
# SQD: with --sqd each QP in turn goes RTS -> SQD with work requests
# outstanding, must report IBV_EVENT_SQ_DRAINED and start nothing new, takes
# a new ACK timeout and retry count in SQD, goes back to RTS, and its traffic
# continues, checked (one sub-case per QP for the cycle, one for the traffic
# after it), over two devices and over one device looping back.
#
# Topologies:
#  - two sroce devices, one per namespace on the two ends of a veth pair;
#  - one sroce device on a dummy, both QPs on it (loopback);
# each over IPv4 and IPv6 GIDs, with polling and with completion events.
# The device counters (sent_pkts, rcvd_pkts) must have moved.
# Then build/user/tests/sroce_e2e (user/tests/e2e_verbs.cpp) on the loopback
# device, over its IPv4 and its IPv6 GID: the provider's verbs one by one
# (ibv_cq_ex, the wr_* builder, SGE lists, inline, immediates, completion
# channels, resize_cq with completions queued, the up-front rejects, a
# 20000-SEND volume run); each of its parts is a sub-case.
# Each rc_integrity run is a sub-case.
#
# SROCE_SEED=N reproduces a run (each run prints its seed); SROCE_ITERS=N
# scales the iteration counts (default sized for a TCG guest).
export SR_TAG=ri # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_integrity
iters=${SROCE_ITERS:-400}
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}

[[ -x "$bin" ]] || skip "$bin is not built (cmake -S tools/verbs-tests -B build/verbs-tests && cmake --build build/verbs-tests)"
sr_setup
tmp=$(mktemp -d)
defer rm -rf "$tmp"
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

# --- topology ------------------------------------------------------------------

sr_vt_topology 77 v6l


sr_pkts_mark "$da" "$db" "$dl"

# --- runs ------------------------------------------------------------------------

n=0
integrity() { # DESCRIPTION ARGS...
	local what=$1 rc=0
	shift
	n=$((n + 1))
	log "### $what"
	log "+ $bin --seed $((seed + n)) --timeout 60 $*"
	timeout 150 "$bin" --seed $((seed + n)) --timeout 60 "$@" || rc=$?
	if [[ $rc == 0 ]]; then
		subtest_ok "$what"
	else
		subtest_fail "$what" "rc_integrity --seed $((seed + n)) exited with $rc"
	fi
}

log "seed base $seed (SROCE_SEED=$seed reproduces this run)"
integrity "two devices, IPv4, polling" \
	--dev-a "$da" --dev-b "$db" --iters "$iters" --depth 16
integrity "two devices, IPv6, completion events" \
	--dev-a "$da" --dev-b "$db" --ipv6 --use-event --iters "$iters" --depth 16
integrity "loopback on one device, IPv4, completion events" \
	--dev-a "$dl" --dev-b "$dl" --use-event --iters "$iters" --depth 8
integrity "loopback on one device, IPv6, polling" \
	--dev-a "$dl" --dev-b "$dl" --ipv6 --iters "$iters" --depth 8
integrity "two devices, IPv4, path MTU 256 (many packets per message)" \
	--dev-a "$da" --dev-b "$db" --mtu 256 --iters $((iters / 4)) --depth 4 --max-size 64K
integrity "two devices, large messages (up to 16 MiB)" \
	--dev-a "$da" --dev-b "$db" --iters 12 --depth 2 --max-size 16M --mem 40M \
	--ops SEND,WRITE,WRITE_IMM,READ

# integrity_sqd WHAT ARGS...: a run with --sqd, its TAP lines as sub-cases.
integrity_sqd() {
	local what=$1 rc=0
	shift
	n=$((n + 1))
	log "### $what"
	log "+ $bin --seed $((seed + n)) --timeout 60 --sqd --tap $*"
	timeout 150 "$bin" --seed $((seed + n)) --timeout 60 --sqd --tap "$@" >"$tmp/sqd" 2>&1 || rc=$?
	sed 's/^/  | /' "$tmp/sqd"
	# The per-kind lines are the other runs' business here.
	grep -E '^(not )?ok - (SQD|traffic|rc_integrity)|^not ok - ' "$tmp/sqd" >"$tmp/sqd.tap" || true
	subtests_from_tap "$tmp/sqd.tap" "$what" "$rc"
}
integrity_sqd "two devices, IPv4, SQD cycles" \
	--dev-a "$da" --dev-b "$db" --iters "$iters" --depth 16 --max-size 256K
integrity_sqd "loopback, IPv6, events, SQD cycles" \
	--dev-a "$dl" --dev-b "$dl" --ipv6 --use-event --iters "$iters" --depth 8 --max-size 256K

# --- the provider's verbs one by one: sroce_e2e ---------------------------------------

e2e=$SROCE_ROOT/build/user/tests/sroce_e2e
for fam in 10.78.0.1 fd78::1; do
	what="sroce_e2e, loopback, IPv$([[ $fam == *:* ]] && echo 6 || echo 4)"
	if [[ ! -x $e2e ]]; then
		subtest_skip "$what" "$e2e is not built (make user)"
		continue
	fi
	g=$(sr_gid_index "$dl" "$fam")
	log "### $what"
	log "+ [$nsl] $e2e $dl $g"
	rc=0
	ns_exec "$nsl" timeout 240 "$e2e" "$dl" "$g" >"$tmp/e2e" 2>&1 || rc=$?
	sed 's/^/  | /' "$tmp/e2e"
	subtests_from_tap "$tmp/e2e" "$what" "$rc"
done

# --- counters --------------------------------------------------------------------

subtest_begin "device counters moved"
sr_pkts_moved "$da" "$db" "$dl"
subtest_end
log "all rc_integrity runs passed"
