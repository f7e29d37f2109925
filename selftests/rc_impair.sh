#!/bin/bash
# timeout: 900
#
# RC over an impaired link: tc netem on both ends of the veth between two
# sroce devices (so requests, ACKs, NAKs and READ responses all suffer), and
# tools/verbs-tests/rc_integrity driving every RC opcode (SEND, SEND_IMM,
# WRITE, WRITE_IMM, READ, CMP_SWAP, FETCH_ADD) in both directions. The
# integrity checker verifies that every message lands exactly once and in
# order, every byte and guard byte, every completion once, and every atomic's
# original value and target: an atomic executed twice (a duplicate not
# answered from the responder's cache) shows up as a wrong value.
#
# Per impairment the device counters must agree with what netem did:
#  - every packet one device sent and netem did not drop, the other received
#    (sent - rcvd = netem's drops on that direction, give or take a few
#    ARP/ND packets, which netem counts but sroce does not send);
#  - loss makes the requesters retransmit (retransmitted_pkts, retry_timeouts
#    or sequence NAKs); a clean run retransmits nothing and sees no
#    out-of-sequence request, also with each WR posted from the next CPU
#    (the hop case), and while the machine stalls (the stall cases);
#  - duplication makes the responders see duplicate requests;
#  - reordering makes them see out-of-sequence requests;
#  - corruption is caught by the ICRC check (rcvd_icrc_err), or by IP/UDP
#    before sroce sees it, and costs retransmissions, never data;
#  - nothing ever ends in retry_exceeded_err or a fatal NAK.
# Then a peer that vanishes (netem loss 100%) must end in RETRY_EXC_ERR after
# exactly retry_cnt retries, and sroce against rdma_rxe under 5% loss (every
# retransmission path on the wire to another implementation) must pass
# rc_integrity with no ICRC or malformed-packet counts.
#
# The default matrix is sized for CI under TCG; SROCE_IMPAIR_FULL=1 runs the
# whole one (every loss rate, IPv6, path MTU 256, more operations).
# SROCE_SEED=N reproduces a run; SROCE_IMPAIR_ONLY="TAG..." runs only the
# cases named (plus the vanishing peer). Each impairment is a sub-case (the
# full matrix's, and those SROCE_IMPAIR_ONLY leaves out, skipped ones), as
# are the vanishing peer and the rxe run.
export SR_TAG=im # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_integrity
stall_ko=${SROCE_STALL_KO:-$SROCE_ROOT/selftests/kverbs/sroce_stall_test.ko}
stall_args=() # the stall module's arguments, set per stall case below (impair)
full=${SROCE_IMPAIR_FULL:-${SROCE_FULL:-0}}
# SROCE_IMPAIR_ONLY="TAG...": run only these cases of the matrix (with
# SROCE_IMPAIR_FULL=1 for the full matrix's), then the vanishing peer.
only=${SROCE_IMPAIR_ONLY:-}
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}

[[ -x "$bin" ]] || skip "$bin is not built (make verbs-tests)"
sr_setup
require_cmd tc
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
defer_quiet rmmod sroce_stall_test

sr_veth_topology 10.83.0.1 10.83.0.2 fd83::1 fd83::2
for g in "$da 10.83.0.1" "$db 10.83.0.2" "$da fd83::1" "$db fd83::2"; do
	read -r d a <<<"$g"
	wait_for "sr_gid_index $d $a" 10 || fail "$d has no RoCE v2 GID for $a"
done
# Resolve the neighbours before netem can drop the solicitations.
wait_for "sr_ping $nsa 10.83.0.2" 10 || fail "no ping from $nsa to 10.83.0.2"
wait_for "sr_ping $nsa fd83::2" 10 || fail "no ICMPv6 echo from $nsa to fd83::2"
wait_for "sr_ping $nsb fd83::1" 10 || fail "no ICMPv6 echo from $nsb to fd83::1"
check modprobe sch_netem

names=(sent_pkts rcvd_pkts retransmitted_pkts retry_timeouts rcvd_seq_err seq_nak_sent
	duplicate_request out_of_seq_request rcvd_icrc_err rcvd_malformed retry_exceeded_err
	rcvd_fatal_nak rnr_nak_sent completer_drop implied_nak_seq_err roce_adp_retrans
	tail_loss_probes stalled_timeouts)
declare -A c0 c1
snap() { # ARRAY: counters of both devices into ARRAY[dev.name]
	local -n arr=$1
	local d n
	for d in "$da" "$db"; do
		for n in "${names[@]}"; do
			# shellcheck disable=SC2034 # arr is a nameref
			arr[$d.$n]=$(<"$SR_SYS/$d/ports/1/hw_counters/$n")
		done
	done
}
dc() { echo $((c1[$1.$2] - c0[$1.$2])); } # dc DEV NAME: how much NAME moved
# netem_drops NS DEV: packets netem dropped on DEV's egress since the qdisc
# was put there.
netem_drops() {
	tc -n "$1" -s qdisc show dev "$2" | awk '/dropped/ { sub(",", "", $7); print $7; exit }'
}

failed=()
bad() {
	log "NOT OK: $*"
	failed+=("$*")
}
n=0
# counters_settled: both devices' sent_pkts and rcvd_pkts stay the same over
# three reads 0.2 s apart (the last ACKs and retransmissions have landed).
counters_settled() {
	local before='' cur i stable=0
	for ((i = 0; i < 100 && stable < 3; i++)); do
		cur=$(cat "$SR_SYS/$da/ports/1/hw_counters/sent_pkts" "$SR_SYS/$da/ports/1/hw_counters/rcvd_pkts" \
			"$SR_SYS/$db/ports/1/hw_counters/sent_pkts" "$SR_SYS/$db/ports/1/hw_counters/rcvd_pkts")
		if [[ $cur == "$before" ]]; then stable=$((stable + 1)); else stable=0; fi
		before=$cur
		sleep 0.2
	done
	((stable >= 3)) || log "note: the counters were still moving after 20 s"
}
# impair TAG 'NETEM ARGS' EXPECT RC_INTEGRITY_ARGS...: one run, one sub-case.
# EXPECT is a comma-separated list of what the impairment must show: loss,
# dup, reorder, corrupt, clean.
impair() {
	local tag=$1 spec=$2 expect=$3 t0 rc=0 d side ns dev peer dr lost nf=${#failed[@]}
	shift 3
	n=$((n + 1))
	if [[ -n $only && " $only " != *" $tag "* ]]; then
		subtest_skip "$tag" "not in SROCE_IMPAIR_ONLY"
		return 0
	fi
	log "### $tag: netem ${spec:-(none)}"
	for side in "$nsa $va" "$nsb $vb"; do
		read -r ns dev <<<"$side"
		# shellcheck disable=SC2086 # the netem arguments are words
		check tc -n "$ns" qdisc replace dev "$dev" root netem limit 10000 $spec
	done
	snap c0
	t0=$SECONDS
	local stalls=''
	case ",$expect," in *,stall,*)
		log "+ insmod $stall_ko ${stall_args[*]}"
		check insmod "$stall_ko" "${stall_args[@]}"
		;;
	esac
	log "+ $bin --seed $((seed + n)) $*"
	timeout 400 "$bin" --seed $((seed + n)) --dev-a "$da" --dev-b "$db" --timeout 60 "$@" || rc=$?
	if [[ -d /sys/module/sroce_stall_test ]]; then
		stalls=$(</sys/module/sroce_stall_test/parameters/stalls)
		check rmmod sroce_stall_test
	fi
	# Let the last ACKs and any retransmission land before counting.
	counters_settled
	snap c1
	local -A drops=([$da]=$(netem_drops "$nsa" "$va") [$db]=$(netem_drops "$nsb" "$vb"))
	check tc -n "$nsa" qdisc del dev "$va" root
	check tc -n "$nsb" qdisc del dev "$vb" root
	[[ $rc == 0 ]] || bad "$tag: rc_integrity exited with $rc"
	log "$tag: $((SECONDS - t0))s; netem dropped $da->$db ${drops[$da]}, $db->$da ${drops[$db]}"
	for d in "$da" "$db"; do
		local line="  $d:"
		for x in "${names[@]}"; do
			line+=" $x +$(dc "$d" "$x")"
		done
		log "$line"
	done

	local retx=0 dup=0 oos=0 icrc=0 late=0 to=0 tlp=0
	for d in "$da" "$db"; do
		late=$((late + $(dc "$d" stalled_timeouts)))
		to=$((to + $(dc "$d" retry_timeouts)))
		tlp=$((tlp + $(dc "$d" tail_loss_probes)))
		retx=$((retx + $(dc "$d" retransmitted_pkts)))
		dup=$((dup + $(dc "$d" duplicate_request)))
		oos=$((oos + $(dc "$d" out_of_seq_request)))
		icrc=$((icrc + $(dc "$d" rcvd_icrc_err)))
		for x in retry_exceeded_err rcvd_fatal_nak; do
			(($(dc "$d" "$x") == 0)) || bad "$tag: $d $x +$(dc "$d" "$x")"
		done
	done
	# Packet accounting, per direction.
	for side in "$da $db" "$db $da"; do
		read -r dev peer <<<"$side"
		lost=$(($(dc "$dev" sent_pkts) - $(dc "$peer" rcvd_pkts)))
		dr=${drops[$dev]}
		case "$spec" in
		*duplicate* | *corrupt*)
			# Duplicates add packets, corruption can remove them
			# before sroce (IP/UDP): only the direction is checked.
			;;
		*)
			((lost >= 0 && lost <= dr && dr - lost <= 8)) ||
				bad "$tag: $dev sent - $peer rcvd = $lost packets, netem dropped $dr"
			;;
		esac
	done
	case ",$expect," in *,clean,*)
		((retx == 0)) || bad "$tag: $retx retransmitted packets on a clean link"
		((dup == 0)) || bad "$tag: $dup duplicate requests on a clean link"
		((oos == 0)) || bad "$tag: $oos out-of-sequence requests on a clean link"
		;;
	esac
	case ",$expect," in *,stall,*)
		log "$tag: ${stalls:-0} stalls (${stall_args[*]}); stalled_timeouts +$late"
		((${stalls:-0} > 0)) || bad "$tag: the machine never stalled"
		((late > 0)) || bad "$tag: no timer came late: the stalls missed the traffic"
		((to == 0)) || bad "$tag: $to ACK timeouts on a lossless link"
		((tlp == 0)) || bad "$tag: $tlp tail loss probes on a lossless link"
		;;
	esac
	case ",$expect," in *,loss,*)
		((drops[$da] + drops[$db] > 0)) || bad "$tag: netem dropped nothing"
		((retx > 0)) || bad "$tag: packets were lost but nothing was retransmitted"
		;;
	esac
	case ",$expect," in *,dup,*)
		((dup > 0)) || bad "$tag: netem duplicated, but no responder saw a duplicate request"
		;;
	esac
	case ",$expect," in *,reorder,*)
		((oos > 0)) || bad "$tag: netem reordered, but no responder saw an out-of-sequence request"
		((retx > 0)) || bad "$tag: reordering caused no retransmission (go-back-N resends after a sequence NAK)"
		;;
	esac
	case ",$expect," in *,corrupt,*)
		((icrc > 0)) || bad "$tag: netem corrupted packets, but no ICRC error was counted"
		((retx > 0)) || bad "$tag: corrupted packets were never retransmitted"
		;;
	esac
	if ((${#failed[@]} > nf)); then
		subtest_fail "$tag" "${failed[nf]#"$tag: "}$( ((${#failed[@]} - nf > 1)) && echo " (and $((${#failed[@]} - nf - 1)) more)")"
	else
		subtest_ok "$tag"
	fi
}

ops=(--depth 8 --max-size 16K)
it=${SROCE_ITERS:-150}
log "seed base $seed (SROCE_SEED=$seed reproduces this run)"
impair clean "" clean --iters "$it" "${ops[@]}"
# The same with every WR posted from the next CPU (rc_integrity
# --hop-cpus): the doorbell runs the requester on the CPU that rings it,
# and a QP's packets must still leave in order (veth hands each CPU's to
# that CPU's backlog: packets sent from two CPUs can pass each other).
impair hop "" clean --iters "$it" --hop-cpus "${ops[@]}"
# A host that stops running (a VM's vCPUs descheduled: every CPU stopped
# 100 ms, then running 200 ms, over and over; sroce_stall_test.ko) finds
# its timers due at once when it runs again, before the ACKs that wait to
# be received: none of them may take that for the peer's silence
# (sroce_gbn.h): no ACK timeout, no probe. The link loses nothing; its 5 ms
# keep packets in flight when a stall comes.
# (It may reorder: after a stall netem can hand packets to veth from both
# CPUs, whose backlogs then race; a sequence NAK recovers those.)
# stall-75: stalls just longer than rc_integrity's 67 ms ACK timeout, so
# that a timer armed just before one fires only a few ms late.
for c in "stall 100" "stall-75 75"; do
	read -r t ms <<<"$c"
	if [[ -f $stall_ko ]]; then
		stall_args=(stall_ms="$ms" period_ms=200)
		impair "$t" "delay 5ms" stall --iters $((it * 4)) "${ops[@]}"
	else
		n=$((n + 1))
		subtest_fail "$t" "$stall_ko is not built (make kverbs-test)"
		failed+=("$t: $stall_ko is not built")
	fi
done
impair loss-1 "loss 1%" loss --iters "$it" "${ops[@]}"
impair loss-10 "loss 10%" loss --iters "$it" "${ops[@]}"
impair reorder-25 "delay 2ms reorder 25% 50%" reorder --iters "$it" "${ops[@]}"
impair dup-5 "duplicate 5%" dup --iters "$it" "${ops[@]}"
impair corrupt-1 "corrupt 1%" corrupt --iters "$it" "${ops[@]}" --max-size 64K
impair jitter "delay 5ms 2ms" "" --iters "$it" "${ops[@]}"
# (mixed corrupts only a handful of its ~800 packets: not always one that
# reaches the ICRC check, so it does not insist on an ICRC error.)
impair mixed "loss 1% duplicate 2% corrupt 0.5% delay 1ms reorder 10% 50%" loss,dup \
	--iters "$it" "${ops[@]}" --ipv6 --use-event
# The settings of ordinary lossy Ethernet that make bench-lossy measures
# goodput under (issue 25): loss 0.1 / 1 / 5 %, each with and without 1 ms
# +- 1 ms of jitter (which reorders), and 1 % duplication; loss 1 % alone
# is loss-1 above. Every RC opcode, every byte verified.
impair eth-loss-0.1 "loss 0.1%" "" --iters "$it" "${ops[@]}"
impair eth-loss-5 "loss 5%" loss --iters "$it" "${ops[@]}"
impair eth-jitter "delay 1ms 1ms" "" --iters "$it" "${ops[@]}"
impair eth-jitter-loss-0.1 "delay 1ms 1ms loss 0.1%" "" --iters "$it" "${ops[@]}"
impair eth-jitter-loss-1 "delay 1ms 1ms loss 1%" loss --iters "$it" "${ops[@]}"
impair eth-jitter-loss-5 "delay 1ms 1ms loss 5%" loss --iters "$it" "${ops[@]}"
impair eth-dup-1 "duplicate 1%" "" --iters "$it" "${ops[@]}"
full_only() { # TAG: a case of the full matrix (a skipped sub-case without it)
	[[ $full == 1 ]] && return 0
	subtest_skip "$1" "full matrix only (SROCE_IMPAIR_FULL=1 or SROCE_FULL=1)"
	return 1
}
for t in loss-0.1 loss-5 loss-5-v6-events loss-5-mtu256 loss-1-large reorder-50 dup-20 corrupt-5 \
	atomics-loss-10 reads-loss-10 mixed-heavy; do
	full_only "$t" || true
done
if [[ $full == 1 ]]; then
	impair loss-0.1 "loss 0.1%" "" --iters $((it * 4)) "${ops[@]}"
	impair loss-5 "loss 5%" loss --iters $((it * 2)) "${ops[@]}"
	impair loss-5-v6-events "loss 5%" loss --iters "$it" "${ops[@]}" --ipv6 --use-event
	impair loss-5-mtu256 "loss 5%" loss --iters "$it" --depth 8 --max-size 64K --mtu 256
	impair loss-1-large "loss 1%" loss --iters 8 --depth 2 --max-size 4M --mem 16M \
		--ops SEND,WRITE,WRITE_IMM,READ
	impair reorder-50 "delay 3ms reorder 50% 50%" reorder --iters "$it" "${ops[@]}"
	impair dup-20 "duplicate 20%" dup --iters "$it" "${ops[@]}"
	impair corrupt-5 "corrupt 5%" corrupt --iters "$it" "${ops[@]}" --max-size 64K
	impair atomics-loss-10 "loss 10%" loss --iters $((it * 2)) --depth 8 --ops CMP_SWAP,FETCH_ADD
	impair reads-loss-10 "loss 10%" loss --iters "$it" --depth 8 --max-size 64K --ops READ
	impair mixed-heavy "loss 5% duplicate 5% corrupt 1% delay 2ms 1ms reorder 25% 50%" \
		loss,dup,corrupt --iters "$it" "${ops[@]}"
fi

# --- a peer that vanishes ----------------------------------------------------------
# netem loss 100%: the peer QP is fine but nothing reaches it. The requester
# must give up with RETRY_EXC_ERR after retry_cnt retries, the ACK timeout
# doubling after each (rc_errors checks the time and the flushes), and the
# counters must say exactly that: retry_cnt + 1 timeouts, three of them
# doubling the next (roce_adp_retrans), one retry_exceeded_err, and each
# packet in flight (one) sent retry_cnt + 1 times.
errbin=${bin%/*}/rc_errors
nf=${#failed[@]}
log "### blackhole: netem loss 100%, rc_errors --case retry_exceeded_blackhole"
check tc -n "$nsa" qdisc replace dev "$va" root netem loss 100%
snap c0
rc=0
# --retry-bound 3: the error is due after 15 ACK timeouts of 67 ms, 1.01 s;
# measured 1.07 s in the TCG guest, so 3 s leaves 2 s for a stalled guest.
timeout 120 "$errbin" --case retry_exceeded_blackhole --dev-a "$da" --dev-b "$db" --retry-bound 3 || rc=$?
snap c1
check tc -n "$nsa" qdisc del dev "$va" root
[[ $rc == 0 ]] || bad "blackhole: rc_errors exited with $rc"
to=$(dc "$da" retry_timeouts) ex=$(dc "$da" retry_exceeded_err)
tx=$(dc "$da" sent_pkts) rt=$(dc "$da" retransmitted_pkts)
log "blackhole: $da retry_timeouts +$to, retry_exceeded_err +$ex, sent_pkts +$tx, retransmitted_pkts +$rt"
((to == 4)) || bad "blackhole: retry_timeouts +$to, want 4 (retry_cnt 3, then the error)"
((ex == 1)) || bad "blackhole: retry_exceeded_err +$ex, want 1"
ad=$(dc "$da" roce_adp_retrans)
((ad == 3)) || bad "blackhole: roce_adp_retrans +$ad, want 3 (the ACK timeout doubled after each retry)"
((tx > 0 && tx % 4 == 0 && rt * 4 == tx * 3)) ||
	bad "blackhole: sent_pkts +$tx and retransmitted_pkts +$rt: want every packet sent 4 times, 3 of them retransmissions"
(($(dc "$db" rcvd_pkts) == 0)) || bad "blackhole: $db received $(dc "$db" rcvd_pkts) packets through netem loss 100%"
if ((${#failed[@]} > nf)); then
	subtest_fail "blackhole: RETRY_EXC_ERR after retry_cnt + 1 timeouts" "${failed[nf]#blackhole: }"
else
	subtest_ok "blackhole: RETRY_EXC_ERR after retry_cnt + 1 timeouts"
fi

# --- against rdma_rxe, under loss ---------------------------------------------------
# The retransmission paths must stay wire compatible: with rxe on one end, a
# READ resumed mid-message must name the rest of the data in its RETH (rxe's
# responder reads from it) and its responses continue as MIDDLE/LAST (rxe's
# requester takes a FIRST there for an error, with a WARN). Both directions
# run (rc_integrity posts from A and from B), with every opcode
# rc_integrity posts. rxe once answered an invalid-request NAK here (with
# SEND, WRITE, READ and FETCH_ADD only); that did not come back in 6 runs of
# 300 operations of every opcode under 5% loss since 4eb60b5.
rxe_loss() {
	local nsx=${SR_ID}x vr=${SR_ID}vr vx=${SR_ID}vx rxe=${SR_ID}rxe dx=${SR_ID}x0 rc=0 d=0 dev nf=${#failed[@]}
	ns_create "$nsx"
	veth_pair - "$vr" "$nsx" "$vx"
	check ip addr add 10.84.0.1/24 dev "$vr"
	check ip -n "$nsx" addr add 10.84.0.2/24 dev "$vx"
	check rdma link add "$rxe" type rxe netdev "$vr"
	defer_quiet rdma link delete "$rxe"
	sr_link_add "$nsx" "$dx" "$vx"
	wait_for "sr_gid_index $rxe 10.84.0.1" 10 || fail "$rxe has no RoCE v2 GID for 10.84.0.1"
	wait_for "sr_gid_index $dx 10.84.0.2" 10 || fail "$dx has no RoCE v2 GID for 10.84.0.2"
	wait_for "sr_ping - 10.84.0.2" 10 || fail "no ping to 10.84.0.2"
	wait_for "sr_ping $nsx 10.84.0.1" 10 || fail "no ping from $nsx to 10.84.0.1"
	check tc qdisc replace dev "$vr" root netem limit 10000 loss 5%
	check tc -n "$nsx" qdisc replace dev "$vx" root netem limit 10000 loss 5%
	local -A x0 x1
	for n in retransmitted_pkts implied_nak_seq_err rcvd_icrc_err rcvd_malformed; do
		x0[$n]=$(<"$SR_SYS/$dx/ports/1/hw_counters/$n")
	done
	log "+ $bin --seed $((seed + 99)) --dev-a $dx --dev-b $rxe (netem loss 5% both ways, every opcode)"
	# --rxe-side b: rxe flags a SEND_WITH_INV it receives with the kernel's
	# bit (see rc_rxe_interop).
	timeout 300 "$bin" --seed $((seed + 99)) --dev-a "$dx" --dev-b "$rxe" --timeout 60 \
		--iters "$it" --depth 8 --max-size 64K --rxe-side b || rc=$?
	for n in "${!x0[@]}"; do
		x1[$n]=$(<"$SR_SYS/$dx/ports/1/hw_counters/$n")
	done
	d=$(tc -s qdisc show dev "$vr" | awk '/dropped/ { sub(",", "", $7); print $7; exit }')
	check tc qdisc del dev "$vr" root
	check tc -n "$nsx" qdisc del dev "$vx" root
	log "rxe-loss-5: netem dropped $d towards $dx; $dx:$(for n in "${!x0[@]}"; do
		printf ' %s +%d' "$n" $((x1[$n] - x0[$n]))
	done)"
	[[ $rc == 0 ]] || bad "rxe-loss-5: rc_integrity between $dx and rdma_rxe exited with $rc"
	((x1[retransmitted_pkts] > x0[retransmitted_pkts])) ||
		bad "rxe-loss-5: $dx retransmitted nothing through 5% loss"
	for n in rcvd_icrc_err rcvd_malformed; do
		((x1[$n] == x0[$n])) || bad "rxe-loss-5: $dx counted $n +$((x1[$n] - x0[$n])) from rxe"
	done
	if ((${#failed[@]} > nf)); then
		subtest_fail rxe-loss-5 "${failed[nf]#rxe-loss-5: }"
	else
		subtest_ok rxe-loss-5
	fi
}
if [[ -n $only && " $only " != *" rxe-loss-5 "* ]]; then
	subtest_skip rxe-loss-5 "not in SROCE_IMPAIR_ONLY"
elif sr_rxe_use; then
	rxe_loss
else
	subtest_skip rxe-loss-5 "rdma_rxe cannot be loaded"
fi

((${#failed[@]} == 0)) || fail "${#failed[@]} impairment check(s) failed: $(printf '%s; ' "${failed[@]}")"
log "all impairment runs passed"
