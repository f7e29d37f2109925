#!/bin/bash
# timeout: 300
#
# The tracepoints (kernel/sroce_trace.h): each fires when what it reports
# happens, with the device, QPNs, PSNs and opcodes that go with it. The
# events go to a tracefs instance of the test's own
# (/sys/kernel/tracing/instances/sroce-PID): nothing global is touched. Each
# run enables only the events it looks at, so per-packet events cannot push
# the rare ones out of the ring buffer. Two sroce devices A and B on a veth
# pair (sr_vt_topology):
#  - events: all eleven are in events/sroce/;
#  - ibv_rc_pingpong A (server) <-> B: sroce_tx from each QP to the other
#    (SEND ONLY, opcode 0x04), sroce_rx of them at each end, sroce_qp_state
#    RESET -> INIT -> RTR -> RTS of both QPs (modify_qp) - with the QPNs
#    ibv_rc_pingpong printed;
#  - rc_errors --case retry_exceeded_destroyed (B's QP destroyed, A's WRITE
#    goes on being sent to it): sroce_drop on B with reason rcvd_no_qp;
#    sroce_timeout on A's QP, retry_left 2 down to 0 (retry_cnt 2);
#    sroce_retransmit of the PSN the first timeout named (WRITE ONLY, 0x0a);
#    sroce_qp_state RTS -> ERR of A's QP, the transport's own transition;
#  - rc_errors --case rnr_recover and --case bad_rkey_write: sroce_nak_sent
#    on B and sroce_nak_rcvd on A, same QPs and PSN: an RNR NAK (syndrome
#    0x2c: min_rnr_timer 12) and a remote access error NAK (0x62);
#  - ibv_rc_pingpong with netem CE-marking 10% of A's packets (as
#    dcqcn_basic.sh does): sroce_cnp_sent from B's QP to A's, sroce_cnp_rcvd
#    handled by A's QP, sroce_rate of A's QP cut by a CNP (new < old, still
#    limited) and raised again (timer or byte counter);
#  - "rdma -dd res show qp" of A's QP while ib_write_bw runs, then while it
#    retries into a blackhole (kernel/sroce_res.c).
# One sub-case per event and run (plus each traffic run's own).
export SR_TAG=tr # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

errbin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_errors
events=(sroce_tx sroce_rx sroce_drop sroce_retransmit sroce_timeout sroce_nak_sent
	sroce_nak_rcvd sroce_cnp_sent sroce_cnp_rcvd sroce_rate sroce_qp_state)

sr_setup
require_cmd tc ibv_rc_pingpong timeout
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
# shellcheck disable=SC2034 # sr_pp (lib_sroce.sh) takes ports from it
next_port=18700

sr_vt_topology 87
sr_dmesg_mark
ipa=10.87.0.1 ipb=10.87.0.2
ga=$(sr_gid_index "$da" "$ipa")
gb=$(sr_gid_index "$db" "$ipb")
# Resolve the neighbours before netem can drop a solicitation.
wait_for "sr_ping $nsa $ipb" 10 || fail "no ping from $nsa to $ipb"
wait_for "sr_ping $nsb $ipa" 10 || fail "no ping from $nsb to $ipa"

# --- the trace instance ----------------------------------------------------------------
tracing=/sys/kernel/tracing
if [[ ! -d $tracing/instances ]]; then
	mount -t tracefs nodev "$tracing" || skip "tracefs cannot be mounted at $tracing"
	defer_quiet umount "$tracing"
fi
inst=$tracing/instances/sroce-$$
ev=$inst/events/sroce
check mkdir "$inst"
# Events off first: an instance is removed only when nothing uses it.
defer_quiet rmdir "$inst"
defer_quiet tr_off
# Room for a run's per-packet events (KiB per CPU).
echo 4096 >"$inst/buffer_size_kb"

tr_off() { echo 0 >"$ev/enable"; }

# tr_start EVENT...: an empty buffer, only these events on.
tr_start() {
	local e
	tr_off
	: >"$inst/trace"
	for e in "$@"; do
		echo 1 >"$ev/$e/enable"
	done
	echo 1 >"$inst/tracing_on"
}

# tr_stop FILE: events off, what they recorded into FILE, counted in the log.
tr_stop() {
	tr_off
	grep -v '^#' "$inst/trace" >"$1" || true
	log "  recorded: $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^sroce_[a-z_]+:$/) n[$i]++ }
		END { for (e in n) printf "%s %d  ", e, n[e] }' "$1")"
}

# need FILE ERE WHAT: FILE has an event line matching ERE (logged), else WHAT
# becomes the reason the current case fails ($why, first one kept).
why=''
need() {
	local line
	if line=$(grep -m1 -E -- "$2" "$1"); then
		log "  ok: ${line#"${line%%sroce_*}"}"
		return 0
	fi
	log "  missing: $3"
	why=${why:-$3}
}

# verdict NAME: the case ends, failed if a need missed ($why).
verdict() {
	subtest_verdict "$1" "$why"
	why=''
}

# qpn_of FILE: the local QPN ibv_rc_pingpong printed, decimal.
qpn_of() {
	local q
	q=$(sed -nE 's/^ *local address: .*QPN (0x[0-9a-fA-F]+),.*/\1/p' "$1" | head -n1)
	[[ -n $q ]] && echo $((q))
}

# pp TAG SIZE ITERS [ARGS...]: ibv_rc_pingpong, server on A, client on B,
# over the IPv4 GIDs (sr_pp: a sub-case of its own). Sets qa and qb, the
# QPNs of A's and B's QP (empty if not printed).
pp() {
	sr_pp ibv_rc_pingpong 150 120 "$1" "$2" "$3" '' "$nsa" "$da" "$ga" "$nsb" "$db" "$gb" \
		"$ipa" "$ipa" "$ipb" "${@:4}"
	qa=$(qpn_of "$tmp/$1.srv") || true
	qb=$(qpn_of "$tmp/$1.cli") || true
	log "  QPNs: $da $qa, $db $qb"
}

# errors CASE...: rc_errors with these cases between A and B (A the
# requester), its verdict a sub-case.
errors() {
	local rc=0 c args=()
	for c in "$@"; do args+=(--case "$c"); done
	log "+ $errbin ${args[*]} --dev-a $da --dev-b $db"
	timeout 200 "$errbin" "${args[@]}" --dev-a "$da" --dev-b "$db" >"$tmp/errors.out" 2>&1 || rc=$?
	sed 's/^/  | /' "$tmp/errors.out"
	if [[ $rc == 0 ]]; then
		subtest_ok "rc_errors $*"
	else
		subtest_fail "rc_errors $*" "exit $rc"
	fi
}

subtest_begin "events: all of them in $ev"
for e in "${events[@]}"; do
	[[ -f $ev/$e/enable ]] || fail "no $e in $ev"
done
log "ok: ${events[*]}"
subtest_end

# --- packets and the QP state machine ------------------------------------------------
tr_start sroce_tx sroce_rx sroce_qp_state
pp pingpong 64 20
f=$tmp/pingpong.trace
tr_stop "$f"
qa=${qa:-none} qb=${qb:-none}
need "$f" " sroce_tx: dev=$da sqpn=$qa dqpn=$qb op=0x04 psn=[0-9]+ len=[1-9][0-9]*$" \
	"no sroce_tx of a SEND ONLY from $da QP $qa to QP $qb"
need "$f" " sroce_tx: dev=$db sqpn=$qb dqpn=$qa op=0x04 psn=[0-9]+ len=[1-9][0-9]*$" \
	"no sroce_tx of a SEND ONLY from $db QP $qb to QP $qa"
verdict "sroce_tx: SENDs from both QPs, to each other"
need "$f" " sroce_rx: dev=$db dqpn=$qb op=0x04 psn=[0-9]+ len=[1-9][0-9]*$" \
	"no sroce_rx of a SEND ONLY on $db for QP $qb"
need "$f" " sroce_rx: dev=$da dqpn=$qa op=0x04 psn=[0-9]+ len=[1-9][0-9]*$" \
	"no sroce_rx of a SEND ONLY on $da for QP $qa"
verdict "sroce_rx: the SENDs arrive, for the right QPs"
for side in "$da $qa" "$db $qb"; do
	read -r d q <<<"$side"
	for t in "RESET INIT" "INIT RTR" "RTR RTS"; do
		read -r from to <<<"$t"
		need "$f" " sroce_qp_state: dev=$d qpn=$q type=RC old=$from new=$to$" \
			"no sroce_qp_state $from -> $to of $d QP $q"
	done
done
verdict "sroce_qp_state: modify_qp RESET -> INIT -> RTR -> RTS, both QPs"

# --- loss: a peer QP that is gone -----------------------------------------------------
if [[ -x $errbin ]]; then
	tr_start sroce_drop sroce_timeout sroce_retransmit sroce_qp_state
	errors retry_exceeded_destroyed
	f=$tmp/retry.trace
	tr_stop "$f"
	need "$f" " sroce_drop: dev=$db reason=rcvd_no_qp$" \
		"no sroce_drop on $db with reason rcvd_no_qp"
	verdict "sroce_drop: rcvd_no_qp, requests to a destroyed QP"
	# A's QP: the one whose ACK timeout expired.
	q=$(sed -nE "s/.* sroce_timeout: dev=$da qpn=([0-9]+) .*/\\1/p" "$f" | head -n1)
	q=${q:-none}
	psn=$(sed -nE "s/.* sroce_timeout: dev=$da qpn=$q psn=([0-9]+) retry_left=2 .*/\\1/p" "$f" | head -n1)
	psn=${psn:-none}
	need "$f" " sroce_timeout: dev=$da qpn=$q psn=$psn retry_left=2 backoff=[0-9]+$" \
		"no sroce_timeout on $da with retry_left 2 (retry_cnt)"
	need "$f" " sroce_timeout: dev=$da qpn=$q psn=[0-9]+ retry_left=0 backoff=[0-9]+$" \
		"no sroce_timeout of $da QP $q with retry_left 0 (the one that fails it)"
	verdict "sroce_timeout: retry_cnt + 1 ACK timeouts"
	need "$f" " sroce_retransmit: dev=$da qpn=$q dqpn=[0-9]+ op=0x0a psn=$psn$" \
		"no sroce_retransmit of the WRITE ONLY at PSN $psn by $da QP $q"
	verdict "sroce_retransmit: the PSN the timeout named, sent again"
	need "$f" " sroce_qp_state: dev=$da qpn=$q type=RC old=RTS new=ERR$" \
		"no sroce_qp_state RTS -> ERR of $da QP $q"
	verdict "sroce_qp_state: RTS -> ERR on RETRY_EXC_ERR"

	# --- NAKs ------------------------------------------------------------------------
	tr_start sroce_nak_sent sroce_nak_rcvd
	errors rnr_recover bad_rkey_write
	f=$tmp/nak.trace
	tr_stop "$f"
	# nak KIND SYNDROME: B NAKed a request of A with SYNDROME, and A took it.
	nak() {
		local line re=" psn=[0-9]+ syndrome=$2 kind=$1$"
		if ! line=$(grep -m1 -E " sroce_nak_sent: dev=$db qpn=[0-9]+ dqpn=[0-9]+$re" "$f"); then
			why="no sroce_nak_sent on $db with syndrome $2 ($1)"
			log "  missing: $why"
			return 0
		fi
		log "  ok: ${line#"${line%%sroce_*}"}"
		[[ $line =~ qpn=([0-9]+)\ dqpn=([0-9]+)\ psn=([0-9]+) ]]
		need "$f" " sroce_nak_rcvd: dev=$da qpn=${BASH_REMATCH[2]} dqpn=${BASH_REMATCH[1]} psn=${BASH_REMATCH[3]} syndrome=$2 kind=$1$" \
			"no sroce_nak_rcvd on $da QP ${BASH_REMATCH[2]} of the $1 NAK at PSN ${BASH_REMATCH[3]}"
	}
	nak rnr 0x2c
	verdict "sroce_nak_sent, sroce_nak_rcvd: RNR NAK"
	nak rem_access 0x62
	verdict "sroce_nak_sent, sroce_nak_rcvd: remote access error NAK"
else
	for c in "rc_errors" "sroce_drop" "sroce_timeout" "sroce_retransmit" "sroce_qp_state: RTS -> ERR" \
		"sroce_nak_sent, sroce_nak_rcvd"; do
		subtest_skip "$c" "$errbin is not built (make verbs-tests)"
	done
fi

# --- congestion: CNPs and the rate ---------------------------------------------------
# netem on A's egress CE-marks 10% of A's (ECT(0)) packets: B's QP sends CNPs
# to A's, which cut its rate.
modprobe sch_netem 2>/dev/null || true
if ip netns exec "$nsa" tc qdisc add dev "$va" root netem loss 10% ecn; then
	defer_quiet ip netns exec "$nsa" tc qdisc del dev "$va" root
	tr_start sroce_cnp_sent sroce_cnp_rcvd sroce_rate
	pp ce-marked 1024 300
	f=$tmp/cnp.trace
	tr_stop "$f"
	check ip netns exec "$nsa" tc qdisc del dev "$va" root
	qa=${qa:-none} qb=${qb:-none}
	need "$f" " sroce_cnp_sent: dev=$db qpn=$qb dqpn=$qa$" \
		"no sroce_cnp_sent from $db QP $qb to QP $qa"
	verdict "sroce_cnp_sent: B's QP to A's, for the CE marks"
	need "$f" " sroce_cnp_rcvd: dev=$da qpn=$qa handled=1$" \
		"no sroce_cnp_rcvd handled by $da QP $qa"
	verdict "sroce_cnp_rcvd: handled by A's QP"
	# rate CAUSE DOWN|UP: a sroce_rate of A's QP with that cause, in that
	# direction (a cut leaves the QP limited).
	rate() {
		awk -v pat="sroce_rate: dev=$da qpn=$qa cause=$1 " -v dir="$2" '
			index($0, pat) {
				for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
				old = v["old_mbps"] + 0
				new = v["new_mbps"] + 0
				if ((dir == "DOWN" && new < old && v["limited"] == 1) || (dir == "UP" && new > old)) {
					print
					found = 1
					exit
				}
			}
			END { exit !found }' "$f"
	}
	if line=$(rate cnp DOWN); then
		log "  ok: ${line#"${line%%sroce_*}"}"
	else
		why="no sroce_rate of $da QP $qa cut by a CNP"
	fi
	if line=$(rate timer UP || rate bytes UP); then
		log "  ok: ${line#"${line%%sroce_*}"}"
	else
		why=${why:-no sroce_rate of $da QP $qa raised by the timer or byte counter}
	fi
	verdict "sroce_rate: A's QP cut by CNPs, raised again"
else
	for c in sroce_cnp_sent sroce_cnp_rcvd sroce_rate; do
		subtest_skip "$c" "netem cannot CE-mark (tc qdisc add ... netem loss 10% ecn failed)"
	done
fi

# --- rdma res show qp -dd: the transport state ------------------------------------------
# ib_write_bw A -> B (for up to 30 s: a sample takes up to a second in a busy guest; 64 KiB WRITEs, ACK timeout 0.5 s: -u 17), A's
# RC QP sampled with "rdma -dd res show qp" (sr_rc_qp_json) as it runs: in
# RTS with WRITEs outstanding (sq_wqes), its PSNs moving (sq_psn_max, una_psn
# behind it), perftest's retry_cnt and rnr_retry 7 (retry_left, rnr_left),
# a window, a DCQCN rate. Then netem drops all of A's packets, until a
# sample shows the retries being spent (retry_left below 7 or backoff up).
name="rdma res show qp -dd: A's QP under traffic, then retrying"
log "--- $name"
p=18790
ns_exec "$nsb" timeout 90 ib_write_bw -d "$db" -x "$gb" -F -p $p -s 65536 -u 17 -D 30 >"$tmp/bw.srv" 2>&1 &
spid=$!
wait_for "sr_listening $nsb $p" 20 || fail "ib_write_bw server did not listen"
ns_exec "$nsa" timeout 90 ib_write_bw -d "$da" -x "$ga" -F -p $p -s 65536 -u 17 -D 30 "$ipb" >"$tmp/bw.cli" 2>&1 &
cpid=$!
# The samples of A's QP in RTS, before and after the loss began.
: >"$tmp/res.before"
: >"$tmp/res.after"
res=$tmp/res.before
while kill -0 "$cpid" 2>/dev/null; do
	q=$(sr_rc_qp_json "$da") || q=''
	if [[ $q == *'"state":"RTS"'* ]]; then
		echo "$q" >>"$res"
		# Three samples of the QP at work, then the blackhole (it stops
		# the traffic from then on: a sample after it sees the retries).
		if [[ $res == */res.before ]] && (($(wc -l <"$res") == 3)); then
			check ip netns exec "$nsa" tc qdisc add dev "$va" root netem loss 100%
			res=$tmp/res.after
		elif [[ $res == */res.after ]] &&
			jq -e '.drv_retry_left < 7 or .drv_backoff >= 1' <<<"$q" >/dev/null; then
			break # seen retrying: RETRY_EXC_ERR itself is the trace part's
		fi
	fi
	sleep 0.2
done
kill "$cpid" "$spid" 2>/dev/null || true
wait "$cpid" "$spid" 2>/dev/null || true
[[ $res == */res.before ]] || check ip netns exec "$nsa" tc qdisc del dev "$va" root
show='{drv_sq_psn, drv_sq_psn_max, drv_una_psn, drv_sq_wqes, drv_window, drv_retry_left, drv_rnr_left, drv_backoff, drv_dcqcn_rate_mbps}'
for f in "$tmp/res.before" "$tmp/res.after"; do
	log "  ${f##*.}: $(wc -l <"$f") samples in RTS; last: $(tail -n1 "$f" | jq -c "$show")"
done
why=''
if [[ $res == */res.before ]]; then
	why="A's QP was seen in RTS $(wc -l <"$res") times (3 wanted before the loss)"
else
	jq -se 'any(.[]; .drv_sq_wqes >= 1)' "$tmp/res.before" >/dev/null ||
		why="no sample with a WRITE outstanding (drv_sq_wqes)"
	# PSNs are 24 bits: differences are taken modulo 2^24.
	jq -se '((.[-1].drv_sq_psn_max - .[0].drv_sq_psn_max + 16777216) % 16777216) > 0' \
		"$tmp/res.before" >/dev/null ||
		why=${why:-sq_psn_max did not move between the samples before the loss}
	# retry_left is what is left of retry_cnt for the oldest WQE: a stalled
	# guest can spend one before the loss, so "7" is wanted once.
	jq -se 'any(.[]; .drv_retry_left == 7)' "$tmp/res.before" >/dev/null ||
		why=${why:-before the loss: retry_left never 7 (the retry_cnt perftest sets)}
	jq -se 'all(.[]; .drv_rnr_left == 7 and .drv_window > 0 and .drv_dcqcn_rate_mbps > 0 and
		((.drv_sq_psn_max - .drv_una_psn + 16777216) % 16777216) <= .drv_window)' \
		"$tmp/res.before" >/dev/null ||
		why=${why:-before the loss: want rnr_left 7, a window, a rate, una_psn within the window}
	jq -se 'any(.[]; .drv_retry_left < 7 or .drv_backoff >= 1)' "$tmp/res.after" >/dev/null ||
		why=${why:-no sample after the loss with a retry spent (retry_left below 7 or backoff up)}
fi
verdict "$name"

((failures == 0)) || log "$failures traffic run(s) failed"
