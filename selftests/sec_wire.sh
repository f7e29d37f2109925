#!/bin/bash
# timeout: 480
#
# Security regressions on the wire side: what a local user or a peer can do
# to sroce QPs with packets, and a netlink race. One sub-case per case (those
# SROCE_SECWIRE_CASES leaves out are skipped ones):
#
#   netns A: veth A, sroce device A (the peer: real requester QPs, and the
#            injector's raw packet socket, sending from A's address)
#   netns B: veth B, sroce device B (the target)
#
#  1. local_udp_rc, local_udp_uc: real RC and UC pairs A <-> B; an
#     unprivileged user in netns B (nobody, no capabilities) sends
#     ICRC-correct WRITE_ONLY/SEND_ONLY packets to B's own address, UDP 4791,
#     from an ordinary UDP socket, with the victim's QPN, expected PSN, R_Key
#     and VA. The source address is not the QP's peer: nothing may land
#     (memory byte for byte the same, no receive completion), rcvd_bad_addr
#     counts every packet, and the pair still passes a verified WRITE + SEND.
#  2. dup_read_amplification: from A's address (raw frames), a 1 MiB READ to
#     a victim QP on B, then duplicates of it: genuine resumes (from a PSN not
#     before the last resume) are answered once each; resumes going
#     backwards, the first PSN again (8 times), and resumes of a stream from
#     PSNs it has not sent yet (8 at a time) are not answered and counted in
#     dup_read_drop. Every response is sniffed; the bytes are reported.
#  3. oversize: veth MTU 9000; datagrams to 4791 longer than the longest RoCE
#     packet (4147 bytes: 4148, 8000 in one frame, 60000 in fragments), bad
#     ICRC: counted in rcvd_oversize, not rcvd_icrc_err; a 4147-byte one still
#     counts as an ICRC error.
#  4. backlog_flood: while B streams a 128 MiB READ to a real requester on A
#     (a SEND posted behind it waits in B's backlog), 2000 WRITE requests with
#     PSNs 2^22 ahead of the expected one, then 2000 with PSNs 2^22 behind it
#     (4000-byte payloads, MTU 9000), from A's address: resp_backlog_drop
#     counts every one, slab memory grows by less than 6 MB during each half,
#     the READ completes with the right data and the SEND is received.
#  5. newlink_race: for 20 s (and at least 3 race rounds after 3
#     calibration rounds), in a namespace: a veth pair, "rdma link add" on
#     one end and the pair deleted during it, with netlink from python
#     (sroce_inject.py newlink-race: the delay swept over the kernel's link
#     add) and, concurrently, with the rdma and ip commands: no call hangs
#     (15 s, or 3 x the slowest calibration round if longer), no sroce
#     device outlives its netdev's unlisting by more than 700 ms (the core's
#     1 s NETDEV_UNREGISTER rebroadcast, which ends such a wait, must not be
#     needed) or is left at the end, and the kernel never logs
#     "unregister_netdevice: waiting" unless the hang limit is over its 10 s
#     (a debug kernel: then a lost reference is a deletion that never
#     returns).
#
# Cases 1-4 run in one tools/inject/sroce_inject.py sec-wire process (python
# starts slowly in a TCG guest); their table is tools/inject/roceinj/secwire.py.
# Knobs: SROCE_SECWIRE_CASES="a b" (a subset), SROCE_SECWIRE_READ_MB (the
# flooded READ, 128), SROCE_SECWIRE_FLOOD (4000), SROCE_SECWIRE_DUP_KB (1024),
# SROCE_SECWIRE_RACE_SECONDS (20), SROCE_SECWIRE_ORPHAN_MS (700),
# SROCE_SECWIRE_ARGS (appended to the injector's sec-wire arguments, e.g.
# "--mem-limit-kb 0" where freed memory is not returned at once: KASAN).
export SR_TAG=sw # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

inj=$SROCE_ROOT/tools/inject/sroce_inject.py
nsa=${SR_ID}a nsb=${SR_ID}b
va=${SR_ID}va vb=${SR_ID}vb
da=${SR_ID}0 db=${SR_ID}1
ipa=10.93.0.1 ipb=10.93.0.2
all_cases=(local_udp_rc local_udp_uc dup_read_amplification oversize backlog_flood newlink_race)
read -ra cases <<<"${SROCE_SECWIRE_CASES:-${all_cases[*]}}"
read -ra extra <<<"${SROCE_SECWIRE_ARGS:-}"

sr_setup
require_cmd setpriv
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
"$PYTHON" -c 'import pyverbs' 2>/dev/null || skip "$PYTHON cannot import pyverbs (python3-pyverbs)"
tmp=$(mktemp -d)
defer rm -rf "$tmp"
SROCE_T0=$(($(date +%s) - SECONDS))
export SROCE_T0

declare -A result=() why=()
want() { [[ " ${cases[*]} " == *" $1 "* ]]; }

# --- cases 1-4: the injector ----------------------------------------------------------
py_cases=()
for c in "${cases[@]}"; do
	[[ $c == newlink_race ]] || py_cases+=("$c")
done
if ((${#py_cases[@]})); then
	sr_veth_topology "$ipa" "$ipb"
	ga=$(sr_gid_of "$da" "$ipa")
	gb=$(sr_gid_of "$db" "$ipb")
	wait_for "sr_ping $nsa $ipb" 10 || fail "no ping from $nsa to $ipb"
	wait_for "sr_ping $nsb $ipa" 10 || fail "no ping from $nsb to $ipa"
	mac_a=$(sr_mac "$nsa" "$va")
	mac_b=$(sr_mac "$nsb" "$vb")
	args=(--ns "$nsa" --ifname "$va" --src-mac "$mac_a" --dst-mac "$mac_b" --src-ip "$ipa"
		--dst-ip "$ipb" --dev "$db" --peer-dev "$da" --gid-index "$gb" --peer-gid-index "$ga"
		--peer-ns "$nsb" --peer-ifname "$vb" --cases "$(IFS=,; echo "${py_cases[*]}")"
		--flood-read-mb "${SROCE_SECWIRE_READ_MB:-128}" --backlog-flood "${SROCE_SECWIRE_FLOOD:-4000}"
		--dup-read-kb "${SROCE_SECWIRE_DUP_KB:-1024}" "${extra[@]}")
	log "### [t=${SECONDS}s] sroce_inject.py sec-wire ${py_cases[*]}"
	rc=0
	"$PYTHON" "$inj" sec-wire "${args[@]}" 2>&1 | tee "$tmp/inj.log" || rc=$?
	log "injector: exit $rc at t=${SECONDS}s"
	for c in "${py_cases[@]}"; do
		line=$(grep -E "^RESULT $c " "$tmp/inj.log" | tail -n1) || true
		if [[ -z $line ]]; then
			result[$c]=fail why[$c]="no result from the injector (exit $rc)"
		elif [[ $line == "RESULT $c ok"* ]]; then
			result[$c]=ok
		else
			result[$c]=fail why[$c]=${line#*: }
		fi
	done
fi

# --- case 5: rdma link add racing with the removal of its netdev -----------------------

# A link command that has not returned after $hang seconds hangs: 15 s, a
# debug kernel's (SROCE_TIMEOUT_SCALE=2) 30 s, where a deletion queued
# behind a registration has taken 10-15 s (2026-12-02). The injector's racer
# gets the same (--hang-seconds), or three times its slowest calibration
# round if that is longer.
hang=$((15 * ${SROCE_TIMEOUT_SCALE:-1}))

# bounded SECS CMD...: run CMD, but give up waiting after SECS (returns 124;
# a task stuck in the kernel cannot be killed, so it is left to finish).
bounded() {
	local secs=$1
	shift
	"$@" &
	bounded_wait "$secs" $! "$*"
}

# bounded_wait SECS PID WHAT: wait for background job PID for up to SECS;
# its exit status, or 124 (and PID noted in $tmp/hung). By the clock: its
# polls were sleep(1) runs, 0.4 s each on the debug kernel, which made 15 s
# about two minutes there.
bounded_wait() {
	local end=$((${EPOCHREALTIME//[.,]/} + $1 * 1000000))
	# Looked at once more after the bound's last nap.
	# (sr_running, not "kill -0": in CI, 2026-12-07, the injector's racer
	# made its last device about 35 s in, bounded_wait still saw the
	# process 500 s later, and it was gone within 15 s once the shell ran
	# other commands. A zombie not yet reaped is one explanation, not
	# proven: the HANG lines below show its state if it happens again.)
	while sr_running "$2"; do
		((${EPOCHREALTIME//[.,]/} < end)) || break
		sr_nap 0.05
	done
	if ! sr_running "$2"; then
		wait "$2"
		return
	fi
	log "  HANG: '$3' still running after $1s [t=${SECONDS}s]"
	# What it is doing: its state and each thread's kernel stack.
	log "    $(ps -o pid=,stat=,wchan:32=,etimes=,args= -p "$2" 2>&1 | cut -c1-200)"
	local t
	for t in /proc/"$2"/task/*; do
		log "    thread ${t##*/} ($(<"$t/comm")): $(tr '\n' ' ' <"$t/stack" | cut -c1-400)"
	done 2>/dev/null
	echo "$2" >>"$tmp/hung"
	return 124
}

race_devices() { # the devices newlink_race made that still exist
	local d
	for d in "$SR_SYS/${SR_ID}L"* "$SR_SYS/${SR_ID}xK"*; do
		[[ ! -e $d ]] || echo "${d##*/}"
	done
}
race_cleanup() { # every device of newlink_race still there
	local dev
	for dev in $(race_devices); do rdma link delete "$dev" || true; done
}

# race_loop ID NS END: until $SECONDS reaches END, make a veth pair in NS,
# start "rdma link add" on one end and delete the pair after a random delay
# (none a quarter of the time, else up to 1.2 s: over the whole of link
# add, from the start of the command to the end of the registration).
# Writes "rounds added refused" to $tmp/race.ID and what went wrong to
# $tmp/race.ID.probs.
race_loop() {
	local id=$1 ns=$2 end=$3 i=0 added=0 refused=0 n d pid rc t0 tl=0
	trap - EXIT ERR
	set +eE
	: >"$tmp/race.$id.probs"
	while ((SECONDS < end)); do
		i=$((i + 1))
		n=${SR_ID}$id$i
		if ! bounded "$hang" ip -n "$ns" link add "$n" type veth peer name "${n}p"; then
			echo "'ip link add $n' failed or hung" >>"$tmp/race.$id.probs"
			break
		fi
		t0=${EPOCHREALTIME//[.,]/}
		ip netns exec "$ns" rdma link add "${SR_ID}L$id$i" type sroce netdev "$n" \
			>"$tmp/nl.$id" 2>&1 &
		pid=$!
		d=$((RANDOM % 4 ? RANDOM % 1200 : 0))
		((d == 0)) || sr_nap_ms "$d"
		rc=0
		bounded "$hang" ip -n "$ns" link del "$n" || rc=$?
		if [[ $rc == 124 ]]; then
			echo "'ip link del $n' hung (delay ${d} ms)" >>"$tmp/race.$id.probs"
			break
		fi
		rc=0
		bounded_wait "$hang" "$pid" "rdma link add ${SR_ID}L$id$i" || rc=$?
		if [[ $rc == 124 ]]; then
			echo "'rdma link add ${SR_ID}L$id$i' hung (delay ${d} ms)" >>"$tmp/race.$id.probs"
			break
		fi
		tl=$((tl + (${EPOCHREALTIME//[.,]/} - t0) / 1000))
		if [[ $rc == 0 ]]; then added=$((added + 1)); else refused=$((refused + 1)); fi
		echo "$i $added $refused $((tl / i))" >"$tmp/race.$id"
	done
}

newlink_race() {
	local ns=${SR_ID}r secs=${SROCE_SECWIRE_RACE_SECONDS:-20} racers=${SROCE_SECWIRE_RACERS:-1}
	local probs=() left=() pids=() r rounds=0 added=0 refused=0 a b c ms dev nd pid py rc=0
	ns_create "$ns"
	defer_quiet race_cleanup
	: >"$tmp/hung"
	sr_dmesg_mark
	# The injector's racer: netlink from python, the deletion swept over
	# the kernel's link add (a command's start-up takes longer than link
	# add itself in a TCG guest) ...
	"$PYTHON" "$inj" newlink-race --ns "$ns" --seconds "$secs" --prefix "${SR_ID}x" \
		--orphan-ms "${SROCE_SECWIRE_ORPHAN_MS:-700}" --hang-seconds "$hang" \
		>"$tmp/pyrace.log" 2>&1 &
	py=$!
	# ... and the commands themselves, concurrently.
	for ((r = 0; r < racers; r++)); do
		echo "0 0 0 0" >"$tmp/race.$r"
		race_loop "$r" "$ns" $((SECONDS + secs)) &
		pids+=($!)
	done
	for r in "${!pids[@]}"; do
		# A racer ends by its clock, or after 3 x $hang s stuck in a command.
		bounded_wait $((secs + 3 * hang + 15)) "${pids[r]}" "racer $r" || probs+=("racer $r did not end")
		read -r a b c ms <"$tmp/race.$r"
		rounds=$((rounds + a)) added=$((added + b)) refused=$((refused + c))
		log "  racer $r: $a rounds, rdma link add succeeded $b time(s), failed $c, ${ms} ms each"
		while read -r p; do probs+=("racer $r: $p"); done <"$tmp/race.$r.probs"
	done
	log "  $rounds rounds in ${secs}s: rdma link add succeeded $added time(s), failed $refused time(s)"
	# Its rounds past --seconds (--min-rounds) take up to 60 s each on a
	# debug kernel; it reports a hung call itself.
	bounded_wait $((secs + 240 * ${SROCE_TIMEOUT_SCALE:-1})) "$py" "sroce_inject.py newlink-race" || rc=$?
	sed 's/^/  /' "$tmp/pyrace.log"
	case $rc in
	0) ;;
	124) probs+=("sroce_inject.py newlink-race did not end") ;;
	*) probs+=("$(grep -m1 'NOT OK' "$tmp/pyrace.log" | sed 's/.*NOT OK: //' ||
		echo "sroce_inject.py newlink-race exited $rc")") ;;
	esac
	# Every netdev is gone: so must every device made on one be, shortly.
	# shellcheck disable=SC2016  # wait_for evals it
	wait_for '[[ -z $(race_devices) ]]' 10 || true
	for dev in $(race_devices); do
		nd=$(ip netns exec "$ns" rdma link show "$dev/1" -j 2>/dev/null | jq -r '.[0].netdev // "none"')
		left+=("$dev (netdev: $nd)")
	done
	if ((${#left[@]})); then
		probs+=("${#left[@]} sroce device(s) left after their netdev was deleted: ${left[*]}")
		log "  rdma link show:"
		rdma link show | sed 's/^/    /'
		# Deleting them releases the netdevs (and any stuck unregistration).
		for dev in "${left[@]}"; do
			bounded "$hang" rdma link delete "${dev%% *}" || true
		done
	fi
	# The kernel logs "waiting for X to become free" when a netdev's
	# deletion has waited 10 s for its references. Where a deletion may
	# take longer than that without anything being lost (the injector's
	# hang limit, derived from its calibration rounds: a debug kernel's
	# link add takes seconds), a lost reference shows as a deletion that
	# never returns instead; otherwise the notice fails the case. There the
	# strict check stays visible as its own sub-case, skipped as a known
	# failure (see the verdicts below).
	local notice pyhang
	notice=$(sr_dmesg_since | grep "unregister_netdevice: waiting" | head -n1 | sed 's/^\[[^]]*\] //')
	pyhang=$(sed -nE 's/.*hang-limit-s ([0-9]+).*/\1/p' "$tmp/pyrace.log" | head -n1)
	if [[ -n $notice ]]; then
		if ((${pyhang:-0} > 10)); then
			log "  info: kernel: $notice (deletions may take up to ${pyhang} s here, and each returned)"
			notice_known="$notice (hang limit ${pyhang} s: the RDMA core unregisters a device only after the registration in flight, seconds each on this kernel)"
		else
			probs+=("kernel: $notice")
		fi
	fi
	if [[ -s $tmp/hung ]]; then
		log "  waiting up to 30 s for the hung commands to end"
		while read -r pid; do
			bounded_wait 30 "$pid" "pid $pid" || true
		done <"$tmp/hung"
	fi
	if ((${#probs[@]})); then
		why[newlink_race]=${probs[0]}
		for p in "${probs[@]}"; do log "  NOT OK: $p"; done
		return 1
	fi
	log "  ok: no device left on a deleted netdev, nothing hung, no unregister_netdevice wait"
}

if want newlink_race; then
	log "### [t=${SECONDS}s] newlink_race"
	if newlink_race; then result[newlink_race]=ok; else result[newlink_race]=fail; fi
	log "RESULT newlink_race ${result[newlink_race]} (t=${SECONDS}s)"
fi

# --- verdicts -------------------------------------------------------------------------
# newlink_race's strict check, where its hang limit let the kernel's 10 s
# notice pass: a known failure, reported as a skipped sub-case.
if [[ -n ${notice_known:-} ]]; then
	subtest_skip "newlink_race: no unregister_netdevice notice" "known failure: $notice_known"
fi
n=0 failed=0
for c in "${all_cases[@]}"; do
	if [[ " ${cases[*]} " != *" $c "* ]]; then
		subtest_skip "$c" "not in SROCE_SECWIRE_CASES"
		continue
	fi
	n=$((n + 1))
	if [[ ${result[$c]:-} == ok ]]; then
		subtest_ok "$c"
	else
		subtest_fail "$c" "${why[$c]:-no verdict}"
		failed=$((failed + 1))
	fi
done
((failed == 0)) || fail "$failed of ${#cases[@]} case(s) failed"
log "all ${#cases[@]} cases passed"
