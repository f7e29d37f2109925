#!/bin/bash
# timeout: 600
#
# Hostile wire input: tools/inject/sroce_inject.py (python3-scapy) sends
# crafted RoCEv2 frames through an AF_PACKET socket on one end of a veth pair
# to the sroce device on the other end, while tools/verbs-tests/rc_integrity
# drives real RC traffic (every opcode, every byte checked) between the two
# devices, back to back, IPv4 and IPv6 runs alternating.
#
#   netns A: veth A, sroce device A, the injector's packet sockets
#   netns B: veth B, sroce device B: the target
#
# The injector creates "victim" QPs on device B with pyverbs (RC in INIT,
# RTR and RTS, UC, UD, IPv4 and IPv6) whose remote QPNs are phantoms on A, so
# every ACK/NAK device B sends them is caught by a BPF-filtered sniffer on
# veth A and checked (opcode, syndrome, PSN, ICRC), as are the victims'
# completions and memory. Phases (1b to 4 in one injector process, with the
# real traffic running throughout):
#
#  1. ICRC: the injector's known-answer vectors, its ICRC against scapy's,
#     and against real sroce traffic (IPv4 and IPv6), before any injection.
#  2. Directed cases, each with the counter it must move by exactly the
#     number of packets (EXACT counters; NOISY ones, which real traffic
#     moves too, at least that much plus the sniffed answers):
#       valid packets (probes: ICRC-invariant fields changed, IP fragments,
#       trailing bytes past the UDP length, P_Key 0x7fff) are accepted;
#       truncated UDP payload / extension headers, IPv4 options, pad count
#       underflow, unaligned lengths, payload on header-only opcodes,
#       impossible payload lengths, reserved opcodes, TVer != 0 -> rcvd_malformed;
#       bad ICRC (IPv4, IPv6), UDP length cutting the ICRC -> rcvd_icrc_err;
#       UDP length beyond the IP payload -> dropped by UDP (Udp InErrors);
#       opcode invalid for the QP type -> rcvd_bad_opcode;
#       wrong P_Key -> rcvd_bad_pkey; wrong Q_Key (UD, GSI) -> rcvd_bad_qkey;
#       unknown QPN -> rcvd_no_qp; CNPs -> rcvd_cnp;
#       ACK to an RTR QP, request to an INIT or ERR QP -> rcvd_bad_qp_state;
#       PSN ahead -> out_of_seq_request + one PSN sequence NAK; PSN behind ->
#       duplicate_request + re-ACK (an atomic replayed from its cache);
#       bad R_Key, VA/length past the MR or wrapping 2^64, missing rights ->
#       NAK remote access error (rem_access_nak_sent), the QP to error;
#       READ/WRITE over 2^31, misaligned atomics, payload != DMA length,
#       SEND_MIDDLE without FIRST, SEND longer than the receive buffer, bad
#       IETH R_Key -> NAK invalid request (rem_inv_req_nak_sent);
#       SEND into a receive WQE with a bad L_Key -> NAK remote operational
#       error (rem_op_nak_sent);
#       SEND with no receive posted -> RNR NAK, the QP stays up;
#       READ responses nobody asked for, ACKs for unsent PSNs, reserved AETH
#       syndromes -> completer_drop, the QP stays up; forged responses with
#       the wrong PSN/length/position for a posted READ/atomic are dropped,
#       the right ones complete it;
#       UC errors drop the message without an answer.
#       UD datagrams longer than the receive WQE (a user UD QP, the GSI QP 1)
#       -> rcvd_ud_len_drop, the WQE kept, the QP stays up; ONLY packets
#       longer than the path MTU -> NAK invalid request; a NAK for the
#       next, unsent PSN -> completer_drop, the QP stays up;
#       stale ACKs, repeated sequence NAKs and ACKs past a READ, every
#       10 ms, to a requester whose peer never answers -> its READ fails
#       with RETRY_EXC_ERR after two ACK timeouts, resent once for the
#       first of the NAKs (then not again) and at most once per ACK past
#       it; the same READ outstanding when
#       its QP went to SQD -> resent in SQD, RETRY_EXC_ERR; a sequence NAK,
#       an RNR NAK and a sequence NAK of one SEND's PSN -> the SEND resent
#       for each (after an RNR NAK a sequence NAK is a new gap's).
#     A case marked as a known deviation would be reported as XFAIL (none
#     is, now).
#  3. Flood: 50k SENDs to unknown QPNs and 5k CNPs for unknown QPs: every one
#     counted (less what the veth dropped), a victim answers right after.
#  4. Mutation run: >= 100k mutated valid packets (SROCE_MUTATIONS), seeded
#     (SROCE_SEED=N reproduces), aimed only at the victims and at QPNs no
#     real QP has, most with a fixed-up ICRC.
#  5. After all that: no kernel splat (run.sh checks), real traffic passed
#     throughout, rc_integrity passes again (IPv4 and IPv6), fresh probes
#     pass, and no QP, MR or CQ is left on either device.
#
# SROCE_SEED=N replays a run (the injector's choices and the rc_integrity
# seeds; QPNs, R_Keys and addresses come from the device and may differ);
# SROCE_MUTATIONS=N sets the mutation count, SROCE_FLOOD=N the flood size,
# SROCE_WH_TRAFFIC_ITERS=N the operations of each real-traffic run (6000;
# fewer on slow debug kernels, so that runs of both families complete),
# SROCE_WH_INTEGRITY_ARGS="..." is appended to every rc_integrity run.
export SR_TAG=wh # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

inj=$SROCE_ROOT/tools/inject/sroce_inject.py
bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_integrity
ipa=10.91.0.1 ipb=10.91.0.2 ip6a=fd91::1 ip6b=fd91::2
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}
mutations=${SROCE_MUTATIONS:-100000}
flood=${SROCE_FLOOD:-50000}
traffic_iters=${SROCE_WH_TRAFFIC_ITERS:-6000}
read -ra ri_args <<<"${SROCE_WH_INTEGRITY_ARGS:-}"

[[ -x "$bin" ]] || skip "$bin is not built (make verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
tmp=$(mktemp -d)
defer rm -rf "$tmp"
# The injector stamps its cases with this clock ($SECONDS of this script).
SROCE_T0=$(($(date +%s) - SECONDS))
export SROCE_T0
log "seed $seed (SROCE_SEED=$seed reproduces this run)"

bg_kill() { # TAG PID: on an early exit, kill a background job not yet reaped
	[[ -e "$tmp/reaped.$1" ]] || kill "$2" 2>/dev/null || true
}

# --- phase 1a: the injector's own ICRC (no device needed), while the topology
# is set up. Exit 4: $PYTHON lacks scapy or pyverbs.
"$PYTHON" "$inj" selftest >"$tmp/selftest.log" 2>&1 &
selftest_pid=$!
defer_quiet bg_kill selftest "$selftest_pid"

# --- topology ------------------------------------------------------------------------
sr_veth_topology "$ipa" "$ipb" "$ip6a" "$ip6b"
ga4=$(sr_gid_of "$da" "$ipa")
gb4=$(sr_gid_of "$db" "$ipb")
ga6=$(sr_gid_of "$da" "$ip6a")
gb6=$(sr_gid_of "$db" "$ip6b")
for p in "$nsa $ipb" "$nsb $ipa" "$nsa $ip6b" "$nsb $ip6a"; do
	read -r ns a <<<"$p"
	wait_for "sr_ping $ns $a" 10 || fail "no ping from $ns to $a"
done
mac_a=$(sr_mac "$nsa" "$va")
mac_b=$(sr_mac "$nsb" "$vb")

names=(rcvd_pkts sent_pkts rcvd_icrc_err rcvd_malformed rcvd_no_qp rcvd_bad_qp_state
	rcvd_bad_opcode rcvd_bad_pkey rcvd_cnp rcvd_bad_qkey rcvd_no_wqe_drop rcvd_ud_len_drop duplicate_request
	out_of_seq_request seq_nak_sent rnr_nak_sent rem_access_nak_sent rem_inv_req_nak_sent
	rem_op_nak_sent completer_drop rcvd_fatal_nak retransmitted_pkts retry_exceeded_err)
counters() { # DEV: "name value" for each of names
	local n
	for n in "${names[@]}"; do
		echo "$n $(<"$SR_SYS/$1/ports/1/hw_counters/$n")"
	done
}
counters "$db" >"$tmp/counters.start"

# injector CMD ARGS...: the injector, sending from veth A (netns A) to device B.
# It runs in the initial namespace (sysfs shows both devices' counters there)
# and only opens its packet sockets in netns A.
injector() {
	local cmd=$1
	shift
	log "+ sroce_inject.py $cmd $*"
	"$PYTHON" "$inj" "$cmd" --ns "$nsa" --ifname "$va" --src-mac "$mac_a" --dst-mac "$mac_b" \
		--src-ip "$ipa" --dst-ip "$ipb" --src-ip6 "$ip6a" --dst-ip6 "$ip6b" \
		--dev "$db" --peer-dev "$da" --gid-index "$gb4" --gid-index6 "$gb6" \
		--peer-gid-index "$ga4" --peer-gid-index6 "$ga6" --peer-ns "$nsb" "$@"
}

# --- real traffic ----------------------------------------------------------------------
# traffic_start TAG: rc_integrity runs back to back (odd ones IPv6) until
# traffic_stop; after each run the number of runs done goes to $tmp/gen.TAG
# (the injector tolerates teardown noise in rcvd_no_qp/rcvd_bad_qp_state
# only when it changed during a case).
tr_pid='' tr_tag='' tr_n=0
traffic_start() {
	tr_tag=$1
	tr_n=$((tr_n + 1))
	local base=$((seed + tr_n * 1000))
	echo 0 >"$tmp/gen.$tr_tag"
	(
		trap - EXIT ERR
		set +eE
		i=0
		while [[ ! -e $tmp/stop.$tr_tag ]]; do
			i=$((i + 1))
			fam=()
			((i % 2 == 0)) || fam=(--ipv6)
			echo "# run $i at t=${SECONDS}s: rc_integrity --seed $((base + i)) ${fam[*]}"
			"$bin" --seed $((base + i)) --dev-a "$da" --dev-b "$db" "${fam[@]}" --iters "$traffic_iters" \
				--depth 8 --max-size 32K --use-event --timeout 60 "${ri_args[@]}" &
			echo $! >"$tmp/child.$tr_tag"
			if ! wait $!; then
				echo "# run $i FAILED at t=${SECONDS}s; counters:"
				rdma statistic show link "$da/1"
				rdma statistic show link "$db/1"
				exit 1
			fi
			echo "$i" >"$tmp/gen.$tr_tag"
		done
	) >"$tmp/traffic.$tr_tag" 2>&1 &
	tr_pid=$!
	defer_quiet traffic_kill "$tr_tag" "$tr_pid"
	# Let the first run get going: its QPs connected (it prints the path
	# MTU then, and posts right after). (This was a 2 s sleep.)
	wait_for "grep -q '^path_mtu' $tmp/traffic.$tr_tag" 60 || true
}
traffic_kill() { # TAG PID: on an early exit, stop the loop and its current run
	[[ ! -e "$tmp/reaped.$1" ]] || return 0
	touch "$tmp/stop.$1"
	kill "$2" 2>/dev/null || true
	[[ ! -s "$tmp/child.$1" ]] || kill "$(<"$tmp/child.$1")" 2>/dev/null || true
}
traffic_stop() {
	local rc=0 runs
	touch "$tmp/stop.$tr_tag"
	wait "$tr_pid" || rc=$?
	touch "$tmp/reaped.$tr_tag"
	runs=$(<"$tmp/gen.$tr_tag")
	log "real traffic during $tr_tag: $runs rc_integrity run(s) passed" \
		"($(grep -c '^# run .*--ipv6' "$tmp/traffic.$tr_tag") of them IPv6), exit $rc"
	grep -E 'FAIL|error|^link' "$tmp/traffic.$tr_tag" | sed 's/^/  /' || true
	[[ $rc == 0 ]] || fail "real traffic failed during $tr_tag: $(tail -n 20 "$tmp/traffic.$tr_tag")"
	((runs >= 1)) || fail "no rc_integrity run completed during $tr_tag"
}

log "+ sroce_inject.py selftest"
rc=0
wait "$selftest_pid" || rc=$?
touch "$tmp/reaped.selftest"
cat "$tmp/selftest.log"
[[ $rc != 4 ]] || skip "$PYTHON cannot import scapy.contrib.roce or pyverbs (python3-scapy, python3-pyverbs)"
subtest_verdict "the injector's ICRC: known answers, scapy's" "$([[ $rc == 0 ]] || echo "self-test exit $rc")"
[[ $rc == 0 ]] || fail "the injector's ICRC self-test failed"

# injector_tap <LOG: the injector's phases as TAP lines: the ICRC check of
# real traffic, each directed case ("--- NAME: N packet(s)", then "    ok",
# "    NOT OK: why" or "    XFAIL"), and the flood and mutation phases by
# their summary lines ("PHASE: N cases, ..., F failed, ...").
injector_tap() {
	awk '
		function flush() {
			if (name == "") return
			if (st == "fail") print "not ok - directed: " name " # " why
			else if (st == "xfail") print "ok - directed: " name " # SKIP known deviation (XFAIL)"
			else if (st == "ok") print "ok - directed: " name
			else print "not ok - directed: " name " # no verdict"
			name = ""
		}
		/^### ICRC of real traffic/ { ph = "icrc"; next }
		/^### (directed|flood|mutate)/ {
			flush()
			if (ph == "icrc") print (icrc_bad == "" ? "ok - ICRC of real traffic, both families" : "not ok - ICRC of real traffic, both families # " icrc_bad)
			ph = $2; sub(/\[.*/, "", ph); next
		}
		ph == "icrc" && /ICRC mismatch|disagrees with the wire|icrc-check: want at least/ {
			if (icrc_bad == "") { icrc_bad = $0; gsub(/#/, "", icrc_bad) }
		}
		ph == "directed" && /^--- / {
			flush()
			name = $0; sub(/^--- /, "", name); sub(/: [0-9]+ packet\(s\).*$/, "", name); gsub(/#/, "", name)
			st = ""; why = ""; next
		}
		ph == "directed" && /^    NOT OK: / { st = "fail"; if (why == "") { why = $0; sub(/^    NOT OK: /, "", why); gsub(/#/, "", why) } }
		ph == "directed" && /^    XFAIL/ && st != "fail" { st = "xfail" }
		ph == "directed" && /^    ok \(/ && st == "" { st = "ok" }
		/^(directed|flood|mutate): [0-9]+ cases, / {
			if ($1 == "directed:") flush()
			p = $1; sub(/:$/, "", p)
			if (p == "directed") next
			f = $0; sub(/ failed.*/, "", f); sub(/.* /, "", f)
			print (f == 0 ? "ok - " p : "not ok - " p " # " f " check(s) failed")
		}
		END { flush() }'
}

# --- phases 1b-4: one injector process, real traffic throughout ----------------------------
# (Python and scapy take seconds to start in a TCG guest.) The injector first
# checks its ICRC against real sroce packets of both families, before it
# injects anything, then runs the directed cases, the flood and the mutation
# run, each phase with its own summary.
log "### [t=${SECONDS}s] ICRC of real traffic, directed cases, flood, mutation run ($mutations" \
	"packets, seed $seed), with real traffic running"
traffic_start hostile
t0=$SECONDS
rc=0
injector all --seed "$seed" --count "$mutations" --cycle 2000 --flood "$flood" --cnps 5000 \
	--min-packets 100 --traffic-gen "$tmp/gen.hostile" 2>&1 | tee "$tmp/inj.log" || rc=$?
log "injector: $((SECONDS - t0)) s, exit $rc"
injector_tap <"$tmp/inj.log" >"$tmp/inj.tap"
subtests_from_tap "$tmp/inj.tap" injector "$rc"
subtest_begin "real traffic passed throughout the hostile input"
traffic_stop
subtest_end
[[ $rc == 0 ]] || fail "hostile input checks failed (seed $seed; see above)"

# --- phase 5: the device still passes traffic, nothing is left over ---------------------------
log "### [t=${SECONDS}s] after the hostile input"
subtest_begin "rc_integrity after the hostile input, IPv4"
check "$bin" --seed $((seed + 7)) --dev-a "$da" --dev-b "$db" --iters 150 --max-size 64K --timeout 60 "${ri_args[@]}"
subtest_begin "rc_integrity after the hostile input, IPv6"
check "$bin" --seed $((seed + 8)) --dev-a "$da" --dev-b "$db" --ipv6 --iters 100 --timeout 60 "${ri_args[@]}"
subtest_begin "no user QP, CQ, MR or PD left"
leftovers() { # user-space QPs, CQs, MRs and PDs still on our devices
	local r
	for r in qp cq mr pd; do
		rdma res show "$r" -j | jq -r --arg r "$r" --arg a "$da" --arg b "$db" \
			'.[] | select(has("pid")) | select((.ifname | split("/")[0]) as $d | $d == $a or $d == $b)
			     | "\($r) on \(.ifname) of pid \(.pid) (\(.comm // "?"))"'
	done
}
no_leftovers() { [[ -z "$(leftovers)" ]]; }
wait_for no_leftovers 10 || fail "resources left on $da/$db: $(leftovers)"
log "ok: no user QP, CQ, MR or PD left on $da or $db"
subtest_end

counters "$db" >"$tmp/counters.end"
log "$db counters over the whole test:"
paste -d ' ' "$tmp/counters.start" "$tmp/counters.end" | awk '{ printf "  %-22s +%d\n", $1, $4 - $2 }'
log "all hostile-input phases passed (seed $seed)"
