#!/bin/bash
# timeout: 600
#
# DCQCN under incast. Two or four sender namespaces -> a bridge namespace ->
# one receiver namespace; every sender is a sroce device running perftest
# (ib_send_bw -e: completion events, no busy polling; one RC QP, 64 KB
# messages, 16 in flight) against its own server (own TCP port) in the
# receiver namespace. The bridge's port towards the receiver is the
# bottleneck: htb shapes RoCE (UDP 4791) to SROCE_DCQCN_RATE Mbit/s (70:
# well below the ~900 Mbit/s two unpaced senders get out of the 2-vCPU TCG
# guest, and below the ~90 Mbit/s that four paced ones manage) under a
# "red ... ecn" child that CE-marks the ECT(0) RoCE packets by its average
# queue (min 5 ms, max 20 ms of the link; the buffer, 2.5 MB, mostly holds
# an incast's start, not what the flows keep in flight without congestion
# control). Everything else (perftest's TCP set-up, ARP) has its
# own small class: RED drops what it cannot mark. The receiver (notification
# point) answers CE with CNPs, the senders (reaction points) cut and pace.
# The links are veths with jumbo frames (IB MTU 4096), receive packet
# steering (so that veth cannot reorder a flow: see rps()) and a big enough
# net.core.netdev_max_backlog (so that only the bottleneck can drop).
#
# Every SROCE_DCQCN_INTERVAL (0.5 s) the test samples each sender's rate on
# the wire (its bridge port's receive counter), the bottleneck's rate (what
# RED dequeued), RED's backlog, marks and drops, and each sender QP's DCQCN
# state ("rdma res show qp -dd": dcqcn_rate_mbps, target, alpha, limited,
# tx_bytes). The samples become one CSV (see tools/dcqcn/plot.py for the
# columns); its path is printed, and it is dumped to stdout at the end
# between "BEGIN/END dcqcn_incast CSV" markers, so that
#   tools/dcqcn/plot.py LOG -o dcqcn.svg      (or --summary)
# works on the host from the captured output of tools/vm/run.
#
# Runs (SROCE_DCQCN_FULL=1: 40 s each instead of 14-18 s, and also the
# 2-flow runs with both flows starting together):
#   on-2-late / off-2-late  flow 2 starts 5 s (full: 10 s) after flow 1
#   on-4      / off-4       four flows at once
# DCQCN on, over each run's steady window (its last 6-7 s; full: 15-20 s):
#  - Jain's fairness index of the per-flow rates >= 0.95;
#  - the bottleneck carries >= 80 % of the shaped rate;
#  - RED's backlog stays below its max threshold: every sample in the
#    window (the mean and 90th percentile are reported too);
#  - nothing dropped at the bottleneck, nothing retransmitted (the whole
#    run's figures are reported: an incast's start, when every QP sends
#    unpaced until its first CNP, can overflow the buffer - what PFC is for
#    in a RoCE fabric);
#  - the late flow is within 20 % of the mean rate (1 s moving average, for
#    3 s) at most SROCE_DCQCN_CONVERGE_MAX (8) s after it started sending;
#  - counters: the receiver's np_ecn_marked_roce_packets equals RED's
#    "marked" (RED counts a mark at enqueue, sroce at receipt: the same
#    packets, since nothing else on the path drops - minus any marked packet
#    RED then dropped for a full queue; tolerance 2 + RED's drops);
#    0 < np_cnp_sent <= marked packets received; the senders' rcvd_cnp and
#    rp_cnp_handled both sum to np_cnp_sent (the way back is not shaped and
#    loses nothing), each sender got CNPs, and none is ignored.
# DCQCN off (rp_enable = np_enable = 0 on every device) is the contrast:
# its Jain/utilisation/backlog/drops/retransmissions are logged next to
# the DCQCN-on ones in a summary table, not judged; only the marks must
# still be counted exactly, and no CNP sent or acted on.
# A capture on the receiver's port during on-4 (its first 2000 CNPs and
# CE-marked packets), dissected by tshark: no malformed packet or expert
# info; the CE-marked packets are RoCE SENDs; the CNPs as the RoCEv2 annex
# spells them - Wireshark 4.0 has no name for opcode 0x81 ("Unknown (129)",
# the rest "Vendor Specific or Unknown Header Sequence"), so the fields are
# checked: from the receiver, opcode 129, BECN, P_Key 0xffff, PSN 0, 16 zero
# bytes then the ICRC (UDP length 40), DSCP cnp_dscp, DestQP a sender's QP.
# The DCQCN knobs reject out-of-range and non-numeric values with EINVAL
# and keep their values; a good value sticks, on that device only.
#
# Without the kernel's DCQCN interface (/sys/class/infiniband/DEV/dcqcn) only
# the DCQCN-off runs are made (and logged), and the test is skipped.
#
# Environment: SROCE_DCQCN_RATE (Mbit/s), SROCE_DCQCN_INTERVAL (s),
# SROCE_DCQCN_KNOBS ("name=value ...", applied to every device after the
# test's tuning), SROCE_DCQCN_RED ("min max limit probability", bytes),
# SROCE_DCQCN_MTU, SROCE_DCQCN_CONVERGE_MAX (s), SROCE_DCQCN_ONLY ("on-4
# off-4": only these runs), SROCE_DCQCN_DEBUG=1 (top in mid-run),
# SROCE_DCQCN_RPS=0 (no receive packet steering: shows veth's reordering),
# SROCE_DCQCN_FULL=1. Run time ~125 s in the guest.
export SR_TAG=di # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

full=${SROCE_DCQCN_FULL:-${SROCE_FULL:-0}}
cap=${SROCE_DCQCN_RATE:-70}
iv=${SROCE_DCQCN_INTERVAL:-0.5}
conv_max=${SROCE_DCQCN_CONVERGE_MAX:-8}
plot=$SROCE_ROOT/tools/dcqcn/plot.py
knobs_file=$SROCE_ROOT/selftests/dcqcn_incast.knobs
nflows_max=4

sr_setup
require_cmd tc ib_send_bw jq awk
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
[[ -f "$plot" ]] || fail "$plot is missing"
[[ -f "$knobs_file" ]] || fail "$knobs_file is missing"
require_module bridge sch_htb sch_red

# --- topology ------------------------------------------------------------------------
# s1..s4 --veth--> [bridge ns: br, ports p1..p4 and pr] --veth--> receiver
# Only the bridge's port pr (towards the receiver) is shaped.
nsr=${SR_ID}r nsb=${SR_ID}b
rv=${SR_ID}rv br=${SR_ID}br pr=${SR_ID}pr
devr=${SR_ID}R
addr_r=10.84.0.1
declare -a nss devs ports addrs gids
for ((i = 1; i <= nflows_max; i++)); do
	nss[i]=${SR_ID}$i devs[i]=${SR_ID}S$i ports[i]=${SR_ID}p$i addrs[i]=10.84.0.$((10 + i))
done
sv=${SR_ID}sv # each sender's netdev (one per namespace, so one name)
# Jumbo frames, as RoCE fabrics run: IB MTU 4096 needs 4096 + 84. Four times
# fewer packets than at 1500 also means four times fewer pacer wake-ups and
# ACKs for the guest's two CPUs.
mtu=${SROCE_DCQCN_MTU:-4200}
# Every ip(8) run costs ~0.6 s in the TCG guest: one batch per namespace.
batch=$(mktemp)
defer rm -f "$batch"
ipb() { # NS: run the ip commands in $batch there, one process
	ip -force -n "$1" -batch "$batch" || fail "ip -n $1 -batch failed: $(tr '\n' ';' <"$batch")"
}
for ns in "$nsr" "$nsb" "${nss[@]}"; do
	defer_quiet ip netns del "$ns"
done
{
	for ns in "$nsr" "$nsb" "${nss[@]}"; do echo "netns add $ns"; done
	echo "link add $br netns $nsb type bridge"
	echo "link add $rv netns $nsr mtu $mtu type veth peer name $pr netns $nsb mtu $mtu"
	for ((i = 1; i <= nflows_max; i++)); do
		echo "link add $sv netns ${nss[i]} mtu $mtu type veth peer name ${ports[i]} netns $nsb mtu $mtu"
	done
} >"$batch"
ip -batch "$batch" || fail "creating the namespaces and links failed: $(tr '\n' ';' <"$batch")"
printf '%s\n' "link set lo up" "link set $rv up" "addr add $addr_r/24 dev $rv" >"$batch"
ipb "$nsr"
{
	echo "link set lo up"
	echo "link set $br up"
	for p in "$pr" "${ports[@]}"; do
		echo "link set $p master $br"
		echo "link set $p up"
	done
} >"$batch"
ipb "$nsb"
for ((i = 1; i <= nflows_max; i++)); do
	printf '%s\n' "link set lo up" "link set $sv up" "addr add ${addrs[i]}/24 dev $sv" >"$batch"
	ipb "${nss[i]}"
done
# A wire does not reorder; veth can: it queues each packet on the input
# backlog of the CPU that sent it, and a QP's packets are sent from whatever
# CPU runs its requester (post_send, ACK, pacer timer), so two of them can
# overtake each other - and RC's go-back-N turns that into a NAK and
# retransmissions. Receive packet steering on every veth keeps each flow on
# one CPU's backlog, in order.
ncpu=$(getconf _NPROCESSORS_ONLN)
rps_mask=$(printf '%x' $(((1 << (ncpu > 31 ? 31 : ncpu)) - 1)))
rps() { # NS NETDEV...
	local ns=$1
	shift
	# shellcheck disable=SC2016 # sh expands them
	ip netns exec "$ns" sh -c 'm=$1; shift; for d; do echo "$m" >"/sys/class/net/$d/queues/rx-0/rps_cpus" || exit 1; done' \
		rps "$rps_mask" "$@" || fail "setting rps_cpus in $ns failed"
}
if [[ ${SROCE_DCQCN_RPS:-1} == 1 ]]; then
	rps "$nsr" "$rv"
	rps "$nsb" "$pr" "${ports[@]}"
	for ((i = 1; i <= nflows_max; i++)); do rps "${nss[i]}" "$sv"; done
fi
sr_link_add "$nsr" "$devr" "$rv"
for ((i = 1; i <= nflows_max; i++)); do
	sr_link_add "${nss[i]}" "${devs[i]}" "$sv"
done
# A process that lives in the bridge namespace: its /proc/PID/net/dev has the
# bridge ports' counters, readable without a fork.
ip netns exec "$nsb" sleep infinity >/dev/null 2>&1 &
brpid=$!
defer_quiet kill "$brpid"
gid_r=''
wait_for "sr_gid_index -v gid_r $devr $addr_r" 10 || fail "$devr has no RoCE v2 GID for $addr_r"
# (No ping first: perftest's own TCP connection resolves the neighbours
# before it connects the QPs.)
for ((i = 1; i <= nflows_max; i++)); do
	wait_for "sr_gid_index -v 'gids[$i]' ${devs[i]} ${addrs[i]}" 10 || fail "${devs[i]} has no RoCE v2 GID for ${addrs[i]}"
done
all_devs=("$devr" "${devs[@]}")
# The bridge and veths stand for a switch that loses nothing but at the
# bottleneck queue. veth hands every packet to a CPU's input backlog
# (net.core.netdev_max_backlog, 1000 packets, global), which a
# sender's burst (up to 1 MB in flight: 16 x 64 KB) overflows in the guest:
# make it big enough for the test, and put it back at the end.
backlog0=$(</proc/sys/net/core/netdev_max_backlog)
if ((backlog0 < 20000)); then
	defer sysctl -qw "net.core.netdev_max_backlog=$backlog0"
	check sysctl -qw net.core.netdev_max_backlog=20000
fi

tmp=$(mktemp -d /var/tmp/dcqcn_incast.XXXXXX)
csv=$tmp/dcqcn_incast.csv
echo "run,t,flow,mbps,qp_mbps,dcqcn_rate_mbps,dcqcn_target_mbps,dcqcn_alpha,dcqcn_limited,backlog_bytes,qlen_pkts,marked,dropped,cap_mbps,red_min,red_max" >"$csv"
failed=()
bad() {
	log "NOT OK: $*"
	failed+=("$*")
}

# --- the DCQCN interface -----------------------------------------------------------------
knobs=(rp_enable np_enable rpg_time_reset rpg_byte_reset rpg_threshold rpg_ai_rate
	rpg_hai_rate rpg_max_rate rpg_gd rpg_min_dec_fac rpg_min_rate rate_to_set_on_first_cnp
	dce_tcp_g dce_tcp_rtt initial_alpha_value rate_reduce_monitor_period clamp_tgt_rate
	clamp_tgt_rate_after_time_inc min_time_between_cnps cnp_dscp cnp_802p_prio)
have_dcqcn=1
for d in "${all_devs[@]}"; do
	[[ -d $SR_SYS/$d/dcqcn ]] || have_dcqcn=0
done
if ((have_dcqcn)); then
	missing=()
	for k in "${knobs[@]}"; do
		[[ -f $SR_SYS/$devr/dcqcn/$k ]] || missing+=("$k")
	done
	((${#missing[@]} == 0)) || fail "$SR_SYS/$devr/dcqcn lacks knobs: ${missing[*]}"
	kfiles=("$SR_SYS/$devr"/dcqcn/*)
	log "DCQCN interface present: $SR_SYS/$devr/dcqcn (${#kfiles[@]} files)"
else
	log "NOTE: the kernel has no DCQCN interface ($SR_SYS/$devr/dcqcn is missing):"
	log "NOTE: only the DCQCN-off runs are made, and the test is skipped at the end"
fi

knob_file() { echo "$SR_SYS/$1/dcqcn/$2"; }
knob_get() { # DEV KNOB (a builtin read: forks are slow in the guest)
	local v
	read -r v <"$SR_SYS/$1/dcqcn/$2" && echo "$v"
}
# knob_set DEV KNOB VALUE: write (fails the test if the kernel refuses).
knob_set() {
	local err
	err=$( (printf '%s\n' "$3" >"$(knob_file "$1" "$2")") 2>&1) ||
		fail "$1: writing $3 to dcqcn/$2 failed: $err"
}
# dcqcn_mode on|off: the reaction and notification points of every device.
dcqcn_mode() {
	local d v=0
	[[ $1 == on ]] && v=1
	((have_dcqcn)) || return 0
	for d in "${all_devs[@]}"; do
		knob_set "$d" rp_enable "$v"
		knob_set "$d" np_enable "$v"
	done
}

if ((have_dcqcn)); then
	log "### knob validation"
	nf=${#failed[@]}
	# Values before any change; all decimal.
	for k in "${knobs[@]}"; do
		v=$(knob_get "$devr" "$k")
		[[ $v =~ ^[0-9]+$ ]] || bad "dcqcn/$k reads '$v', not a decimal number"
	done
	# KNOB VALUE: must fail with EINVAL and leave the knob as it was.
	for kv in "rpg_gd 0" "rpg_gd 99" "min_time_between_cnps -1" "rp_enable 2" "np_enable 2" \
		"rpg_min_dec_fac 0" "rpg_min_dec_fac 101" "dce_tcp_g 1024" "cnp_dscp 64" \
		"cnp_802p_prio 8" "rpg_time_reset 0" "rpg_threshold 0" "initial_alpha_value 4096" \
		"rpg_ai_rate abc" "rpg_time_reset 12abc" "rpg_byte_reset 4294967296" "cnp_dscp -" \
		"rpg_hai_rate 1.5" "rp_enable ''"; do
		read -r k val <<<"$kv"
		[[ $val == "''" ]] && val=''
		kf=$(knob_file "$devr" "$k")
		before=$(<"$kf")
		rc=0
		err=$( (printf '%s\n' "$val" >"$kf") 2>&1) || rc=$?
		after=$(<"$kf")
		if [[ $rc == 0 ]]; then
			bad "writing '$val' to dcqcn/$k succeeded (now '$after')"
		elif [[ $err != *"Invalid argument"* && ! ($val == 4294967296 && $err == *"out of range"*) ]]; then
			bad "writing '$val' to dcqcn/$k failed, but not with EINVAL: $err"
		elif [[ $after != "$before" ]]; then
			bad "a refused write of '$val' changed dcqcn/$k from $before to $after"
		else
			log "ok: dcqcn/$k rejects '$val' (EINVAL), stays $before"
		fi
	done
	# A good value sticks and reads back; per device, not global.
	g=$(knob_get "$devr" rpg_gd) g1=$(knob_get "${devs[1]}" rpg_gd)
	knob_set "$devr" rpg_gd 7
	sr_expect_eq "dcqcn/rpg_gd after writing 7" "$(knob_get "$devr" rpg_gd)" 7
	sr_expect_eq "${devs[1]} dcqcn/rpg_gd after writing $devr's" "$(knob_get "${devs[1]}" rpg_gd)" "$g1"
	knob_set "$devr" rpg_gd "$g"
	subtest_verdict "knobs: decimal, bad values refused (EINVAL), good ones per device" "${failed[*]:nf}"

	# Tuning for this link: see the knobs file (the host simulator, ctest
	# proto.dcqcn_sim_*, reads it too).
	tuning=()
	while read -r kv; do
		kv=${kv%%#*}
		[[ -z $kv ]] || tuning+=("$kv")
	done <"$knobs_file"
	tuning+=("rate_to_set_on_first_cnp=$((cap / 2))")
	# shellcheck disable=SC2206 # words on purpose
	tuning+=(${SROCE_DCQCN_KNOBS:-})
	for d in "${all_devs[@]}"; do
		for kv in "${tuning[@]}"; do
			knob_set "$d" "${kv%%=*}" "${kv#*=}"
		done
	done
	log "DCQCN knobs (every device): $(for k in "${knobs[@]}"; do printf '%s=%s ' "$k" "$(knob_get "$devr" "$k")"; done)"
fi

# --- the bottleneck ---------------------------------------------------------------------
# htb on the bridge's port towards the receiver: class 1:10, shaped to $cap
# Mbit/s with the RED child, carries RoCE v2 (UDP 4791); class 1:20, with
# its own few Mbit/s, everything else - perftest's TCP connection set-up,
# ARP: RED in ecn mode drops what it cannot mark, and would starve a late
# flow's (non-ECT) TCP handshake while the queue is above min. A switch
# would keep RoCE in its own traffic class too.
# RED thresholds: min must leave enough queue for the link to stay busy
# while the senders react (the guest's RTT is milliseconds): 5 ms of the
# link; max 20 ms, with a steep marking probability (30 % at max). RED
# marks by its average queue: burst is the smallest tc accepts (min /
# avpkt + 1, an average weight of 1/2), so that it marks by about the
# queue of the moment, as the switches DCQCN was made for do; the default
# weight (1/16 here) lags the queue by ~8 ms, which the loop pays for in
# overshoot. The limit (the buffer) holds a 4-flow incast's start, when
# every QP sends unpaced until its first CNP, but not what two or four
# flows keep in flight without congestion control (perftest: 1 MB per QP):
# 2.5 MB. At 70 Mbit/s: min 44 KB, max 175 KB.
read -r red_min red_max red_limit red_p <<<"${SROCE_DCQCN_RED:-$((cap * 625)) $((cap * 2500)) 2500000 0.3}"
avpkt=$((mtu < 4200 ? 1100 : 4200))
red_burst=$((red_min / avpkt + 1))
# htb's token bucket: TCG delivers the shaper's timer late, by milliseconds;
# a bucket of 8 ms at the shaped rate keeps the average rate exact anyway.
htb_burst=$((cap * 1000))
((htb_burst >= 16000)) || htb_burst=16000
bottleneck() { # (re)create the shaper, which zeroes its counters
	tc -n "$nsb" qdisc del dev "$pr" root 2>/dev/null || true
	cat >"$batch" <<-EOF
		qdisc add dev $pr root handle 1: htb default 20
		class add dev $pr parent 1: classid 1:10 htb rate ${cap}mbit ceil ${cap}mbit burst $htb_burst cburst $htb_burst quantum 1514
		qdisc add dev $pr parent 1:10 handle 10: red limit $red_limit min $red_min max $red_max avpkt $avpkt burst $red_burst probability $red_p bandwidth ${cap}mbit ecn
		class add dev $pr parent 1: classid 1:20 htb rate 5mbit ceil 5mbit quantum 1514 prio 0
		filter add dev $pr parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport $SR_PORT 0xffff flowid 1:10
	EOF
	tc -n "$nsb" -batch "$batch" || fail "setting up the bottleneck failed: $(cat "$batch")"
}
# red_counters: "MARKED DROPPED EARLY PDROP OTHER" of the bottleneck's RED
# qdisc, now (early: RED's own drops of what it could not mark; pdrop: its
# queue was full).
red_counters() {
	tc -n "$nsb" -s -j qdisc show dev "$pr" | jq -r '[.[] | select(.kind == "red")][0]
		| "\(.marked // 0) \(.drops // 0) \(.early // 0) \(.pdrop // 0) \(.other // 0)"'
}

# --- counters -------------------------------------------------------------------------
cnames=(np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled rp_cnp_ignored rcvd_cnp
	retransmitted_pkts retry_timeouts tail_loss_probes sent_pkts rcvd_pkts rnr_nak_sent
	rcvd_seq_err seq_nak_sent duplicate_request out_of_seq_request)
snap() { # ARRAY: hw counters of every device into ARRAY[dev.name] ("" if absent)
	local -n arr=$1
	local d n v
	for d in "${all_devs[@]}"; do
		for n in "${cnames[@]}"; do
			# (read, not $(<...): no fork per counter)
			v=''
			read -r v <"$SR_SYS/$d/ports/1/hw_counters/$n" 2>/dev/null || v=''
			# shellcheck disable=SC2034 # arr is a nameref
			arr[$d.$n]=$v
		done
	done
}
# softnet_drops: packets the kernel dropped because a CPU's input backlog
# (net.core.netdev_max_backlog) was full - veth delivers through it - summed
# over CPUs (column 2 of /proc/net/softnet_stat, hex).
softnet_drops() {
	local -a f
	local s=0
	while read -ra f; do s=$((s + 16#${f[1]})); done </proc/net/softnet_stat
	echo "$s"
}
# shellcheck disable=SC2034 # used through namerefs
declare -A c0 cw c1 # at the run's start, its steady window's start, its end
dc() { # DEV NAME [FROM=c0]: how much NAME moved since FROM ("" if absent)
	local -n from=${3:-c0}
	[[ -n ${c1[$1.$2]} && -n ${from[$1.$2]} ]] || return 0
	echo $((c1[$1.$2] - from[$1.$2]))
}
sum_senders() { # NAME [N [FROM]]: the sum over senders 1..N of dc
	local i s=0 v
	for ((i = 1; i <= ${2:-$nflows_max}; i++)); do
		v=$(dc "${devs[i]}" "$1" "${3:-c0}")
		[[ -n $v ]] || return 0
		s=$((s + v))
	done
	echo "$s"
}

# --- the sampler ------------------------------------------------------------------------
# sampler RAW: every $iv s, a line in each of RAW.t (the time, epoch
# seconds), RAW.ip ("ip -s -j link" in the bridge namespace), RAW.tc ("tc
# -s -j qdisc" of the bottleneck) and RAW.qp ("rdma res show qp -dd -j", all
# devices; only with DCQCN). Forks are slow in the TCG guest (an ip or tc
# run costs ~0.25 s there) and bash reads pipes a byte at a time, so ip, tc
# and rdma run once each, in batch mode, fed one command per sample through
# FIFOs and writing straight to their files; "read -t" on a FIFO is the sleep.
iv_us=$(awk -v s="$iv" 'BEGIN { printf "%d", s * 1000000 }')
sampler() {
	local next now d cmd fi=$tmp/fifo.$BASHPID sfd ipw tcw rdw
	set +eE
	trap - ERR
	trap 'kill $(jobs -p) 2>/dev/null; exit 0' TERM
	mkfifo "$fi.sleep" "$fi.ip" "$fi.tc" "$fi.rd"
	# Opened read-write, none of these opens blocks.
	exec {sfd}<>"$fi.sleep" {ipw}<>"$fi.ip" {tcw}<>"$fi.tc" {rdw}<>"$fi.rd"
	: >"$1.t"
	: >"$1.qp"
	ip -force -n "$nsb" -s -j -batch - <"$fi.ip" >"$1.ip" 2>/dev/null &
	tc -force -n "$nsb" -s -j -batch - <"$fi.tc" >"$1.tc" 2>/dev/null &
	if ((have_dcqcn)); then rdma -j -d -d -b - <"$fi.rd" >"$1.qp" 2>/dev/null & fi
	next=${EPOCHREALTIME/./}
	while :; do
		echo "$EPOCHREALTIME" >>"$1.t"
		echo "link show" >&"$ipw"
		echo "qdisc show dev $pr" >&"$tcw"
		((have_dcqcn)) && echo "res show qp" >&"$rdw"
		next=$((next + iv_us))
		now=${EPOCHREALTIME/./}
		((next > now)) || next=$now
		d=$((next - now))
		printf -v d '%d.%06d' $((d / 1000000)) $((d % 1000000))
		# The sleep, which a line from sampler_stop ends. What ends the
		# sampler is the file sampler_stop makes first: "read -t" checks
		# its time limit between the bytes it reads, and one that ran out
		# after "st" of "stop" left "op" for the next read (seen in CI: a
		# sampler that went on sampling after it was told to stop).
		read -r -t "$d" -u "$sfd" cmd
		if [[ -e $fi.stop ]]; then
			# shellcheck disable=SC2046 # PIDs, one word each
			kill $(jobs -p) 2>/dev/null
			exit 0
		fi
	done
}

# sampler_stop PID: end the sampler: the file it looks for after each nap,
# then a line in its FIFO to end the nap (a signal can arrive while bash is
# in a builtin that does not run the trap at once: seen as a sampler still
# in select() 10 s after SIGTERM).
sampler_stop() {
	if : >"$tmp/fifo.$1.stop" 2>/dev/null; then
		# Opened read-write: an open for writing alone would wait for a
		# reader if the sampler were gone.
		[[ ! -p $tmp/fifo.$1.sleep ]] || echo stop 2>/dev/null 1<>"$tmp/fifo.$1.sleep" || true
	else
		kill "$1" 2>/dev/null || true
	fi
}

# to_csv RAW RUN T0 N: the CSV rows of a run's samples (see plot.py).
to_csv() {
	local flows='[' i
	for ((i = 1; i <= $4; i++)); do
		flows+="{\"name\":\"f$i\",\"port\":\"${ports[i]}\",\"dev\":\"${devs[i]}\"}"
		((i == $4)) || flows+=,
	done
	flows+=']'
	jq -n -r --rawfile tt "$1.t" --slurpfile L "$1.ip" --slurpfile Q "$1.tc" --slurpfile P "$1.qp" \
		--argjson withqp "$have_dcqcn" --arg run "$2" --argjson t0 "$3" --argjson flows "$flows" \
		--argjson cap "$cap" --argjson rmin "$red_min" --argjson rmax "$red_max" '
		def r3: if . == null then null else (. * 1000 | round) / 1000 end;
		def cell: if . == null then "" else tostring end;
		# A driver attribute, wherever "rdma -dd -j" puts it (iproute2 6.1:
		# top level, prefixed "drv_").
		def attr($k): [.. | objects | to_entries[]
			| select(.key == $k or .key == "drv_" + $k) | .value] | first;
		def qp($s; $dev): [($s.qp // [])[]? | select(type == "object" and .ifname == $dev
			and .type == "RC")] | max_by(attr("tx_bytes") // 0) // {};
		def st($s; $n): [($s.link // [])[]? | select(.ifname == $n)][0].stats64;
		def rate($a; $b; $dt): if $a == null or $b == null or $b < $a then null
			else ($b - $a) * 8 / $dt / 1000000 | r3 end;
		($tt | split("\n") | map(select(length > 0) | tonumber)) as $T
		# Line k of each file is sample k.
		| ([$T, $L, $Q] + (if $withqp == 1 then [$P] else [] end) | map(length) | min) as $n
		| [range(0; $n) as $k | {t: $T[$k], link: $L[$k], q: $Q[$k], qp: $P[$k]}] as $s
		| range(1; $s | length) as $i
		| $s[$i - 1] as $a | $s[$i] as $b
		| ($b.t - $a.t) as $dt
		| select($dt > 0)
		| (($b.t - $t0) | r3) as $t
		| (($flows[]
			| . as $f
			| qp($b; $f.dev) as $qb | qp($a; $f.dev) as $qa
			| [$run, $t, $f.name, rate(st($a; $f.port).rx.bytes; st($b; $f.port).rx.bytes; $dt),
			   (if ($qa | attr("lqpn")) == ($qb | attr("lqpn")) then
				rate($qa | attr("tx_bytes"); $qb | attr("tx_bytes"); $dt) else null end),
			   ($qb | attr("dcqcn_rate_mbps")), ($qb | attr("dcqcn_target_mbps")),
			   ($qb | attr("dcqcn_alpha")), ($qb | attr("dcqcn_limited")),
			   null, null, null, null, null, null, null]),
		   ([($b.q // [])[]? | select(.kind == "red")][0] as $red
			| [($a.q // [])[]? | select(.kind == "red")][0] as $red0
			# What RED handed to the link: RoCE only, exact.
			| [$run, $t, "link", rate($red0.bytes; $red.bytes; $dt),
			   null, null, null, null, null,
			   $red.backlog, $red.qlen, $red.marked, $red.drops,
			   $cap, $rmin, $rmax]))
		| map(cell) | join(",")'
}

# reap_pid PID SECS WHAT: wait for child PID to end, at most SECS. One that
# does not is reported, with its state and kernel stack (a process that
# SIGKILL cannot end is stuck in the kernel), and left to the cleanup.
reap_pid() {
	local pid=$1 t=$2 what=$3 i
	for ((i = 0; i < t * 10; i++)); do
		if ! sr_running "$pid"; then
			wait "$pid" 2>/dev/null || true
			return 0
		fi
		sr_nap 0.1
	done
	bad "$what did not end within ${t}s: $(ps -o pid=,stat=,wchan:32=,args= -p "$pid" | cut -c1-160)"
	sed 's/^/  stack| /' "/proc/$pid/stack" 2>/dev/null || true
	for i in /proc/"$pid"/task/*/stack; do sed "s|^|  ${i#/proc/}| |" "$i" 2>/dev/null; done | head -n 60 || true
	return 1
}

# sleep_until EPOCH_US: sleep until that time (microseconds since the epoch).
sleep_until() {
	local d=$(($1 - ${EPOCHREALTIME/./}))
	((d > 0)) || return 0
	sleep "$((d / 1000000)).$(printf '%06d' $((d % 1000000)))"
}

# --- one run ------------------------------------------------------------------------------
# listening NS PORT...: all of them are listening TCP ports in NS.
listening() {
	local ns=$1 l p
	shift
	l=" $(ip netns exec "$ns" ss -Hltn | awk '{ sub(/.*:/, "", $4); printf "%s ", $4 }')"
	for p in "$@"; do [[ $l == *" $p "* ]] || return 1; done
}
# port_tx_bytes NETDEV: its transmit counter, from the bridge namespace.
port_tx_bytes() {
	local name rest
	local -a f
	while read -r name rest; do
		[[ $name == "$1:" ]] || continue
		read -ra f <<<"$rest"
		echo "${f[8]}"
		return 0
	done <"/proc/$brpid/net/dev"
	return 1
}
iters=1000000 # more than any run can send: the runs are stopped by the test
pt_args=(-F -e -s 65536 -t 16 -Q 4 -u 16 -N -n "$iters")
next_port=18800
declare -A S # the last run's summary (plot.py --summary --format kv)
declare -a summary_rows
row() { printf '%-11s %-5s %5s %6s %6s %8s %8s %8s %7s %11s %13s %6s %6s %6s  %s' "$@"; }
capture='' capture_in=on-4 ncap=2000 # the pcap, the run it is taken in, its size

# run_incast TAG MODE DURATION WINDOW START... : one incast, flow i starting
# START[i] seconds into the run; MODE on|off. WINDOW: the steady window is
# the last WINDOW seconds. Fills S, c0/c1 and appends to the CSV.
run_incast() {
	local tag=$1 mode=$2 dur=$3 win=$4
	shift 4
	local -a start=("$@") spids=() cpids=() cport=()
	local n=${#start[@]} i t0 t0us raw=$tmp/$tag.raw port tx0 tx1 stable conv=()
	local deadline
	log "### $tag: $n flows, DCQCN $mode, ${dur}s, flows start at ${start[*]} s [test time ${SECONDS}s]"
	dcqcn_mode "$mode"
	bottleneck
	snap c0
	local sn0
	sn0=$(softnet_drops)
	for ((i = 1; i <= n; i++)); do
		port=$((next_port++))
		# ip netns exec execs perftest: $! is perftest's PID.
		ip netns exec "$nsr" ib_send_bw -d "$devr" -x "$gid_r" -p "$port" "${pt_args[@]}" \
			>"$tmp/$tag.srv$i" 2>&1 &
		spids[i]=$!
		defer_quiet kill -KILL "${spids[i]}"
		cport[i]=$port
	done
	wait_for "listening $nsr ${cport[*]}" 20 || fail "$tag: the servers did not all listen on TCP ${cport[*]}"
	local dpid=''
	if [[ -n $capture && $tag == "$capture_in" ]]; then
		# The receiver's port, from the start (dumpcap takes seconds to
		# start in the guest): the CNPs it sends and the CE-marked requests
		# they answer, the first $ncap of them.
		ip netns exec "$nsr" timeout $((dur + 60)) dumpcap -q -i "$rv" -c "$ncap" -w "$capture" \
			-f "udp port $SR_PORT and (udp[8] = 0x81 or ip[1] & 3 = 3)" >"$tmp/dumpcap.log" 2>&1 &
		dpid=$!
		defer_quiet kill "$dpid"
		wait_for "grep -q 'Capturing on' $tmp/dumpcap.log" 30 ||
			bad "$tag: dumpcap did not start: $(tail -n 3 "$tmp/dumpcap.log")"
	fi
	sampler "$raw" >/dev/null &
	local sampler_pid=$!
	defer_quiet kill "$sampler_pid"
	t0=$EPOCHREALTIME
	t0us=${t0/./}
	for ((i = 1; i <= n; i++)); do
		sleep_until $((t0us + ${start[i - 1]} * 1000000))
		# Its own session: the test stops the clients (SIGSTOP) at the end,
		# and stopped processes in the test's own process group would get
		# SIGHUP from the kernel (POSIX orphaned process group rule) - and the
		# test with them - when another member of the group exits.
		setsid ip netns exec "${nss[i]}" ib_send_bw -d "${devs[i]}" -x "${gids[i]}" -p "${cport[i]}" \
			"${pt_args[@]}" "$addr_r" >"$tmp/$tag.cli$i" 2>&1 &
		cpids[i]=$!
		defer_quiet kill -KILL "${cpids[i]}"
	done
	if [[ -n ${SROCE_DCQCN_DEBUG:-} ]]; then
		sleep_until $((t0us + dur * 500000))
		top -b -n 1 | head -n 16 | sed 's/^/  top| /'
	fi
	sleep_until $((t0us + (dur - win) * 1000000))
	snap cw
	sleep_until $((t0us + dur * 1000000))
	# Stop posting, let the QPs finish what they have posted (the QPs stay,
	# so every CNP still finds its QP), then take the counters.
	for ((i = 1; i <= n; i++)); do
		if ! kill -0 "${cpids[i]}" 2>/dev/null; then
			bad "$tag: client $i exited early: $(tail -n 3 "$tmp/$tag.cli$i" | tr '\n' ' ')"
		fi
		kill -STOP "${cpids[i]}" 2>/dev/null || true
	done
	stable=0 tx0=-1
	deadline=$((SECONDS + 15))
	while ((stable < 3 && SECONDS < deadline)); do
		sleep 0.2
		tx1=$(port_tx_bytes "$pr")
		if [[ $tx1 == "$tx0" ]]; then stable=$((stable + 1)); else stable=0; fi
		tx0=$tx1
	done
	((stable >= 3)) || bad "$tag: the bottleneck was still sending 15 s after the clients stopped posting"
	sleep 0.3
	sampler_stop "$sampler_pid"
	reap_pid "$sampler_pid" 10 "$tag: the sampler" 2>/dev/null || kill -KILL "$sampler_pid" 2>/dev/null || true
	# Its files go: a later run's sampler could get the same PID.
	rm -f "$tmp/fifo.$sampler_pid".*
	log "$tag: stopped at $(((${EPOCHREALTIME/./} - t0us) / 1000)) ms [test time ${SECONDS}s]; reaping"
	snap c1
	S=()
	read -r "S[q_marked]" "S[q_dropped]" "S[q_early]" "S[q_pdrop]" "S[q_other]" < <(red_counters)
	S[softnet]=$(($(softnet_drops) - sn0))
	# (bash reports killed jobs on stderr: not news here)
	for ((i = 1; i <= n; i++)); do
		kill -KILL "${cpids[i]}" 2>/dev/null || true
		kill -TERM "${spids[i]}" 2>/dev/null || true
	done
	for ((i = 1; i <= n; i++)); do
		reap_pid "${cpids[i]}" 20 "$tag: client $i, killed," 2>/dev/null
		reap_pid "${spids[i]}" 20 "$tag: server $i, terminated," 2>/dev/null
	done
	if [[ -n $dpid ]]; then
		# Stopped by its packet count, or now.
		kill -INT "$dpid" 2>/dev/null || true
		reap_pid "$dpid" 20 "$tag: dumpcap" 2>/dev/null
		if ! grep -q 'Packets captured' "$tmp/dumpcap.log"; then
			bad "$tag: dumpcap failed: $(tail -n 3 "$tmp/dumpcap.log")"
			capture=''
		fi
	fi
	for ((i = 1; i <= n; i++)); do
		if grep -qiE 'completion with error|failed status|couldn.t|unable to' "$tmp/$tag.cli$i" "$tmp/$tag.srv$i"; then
			bad "$tag: flow $i reported an error: $(grep -hiE 'completion with error|failed status|couldn.t|unable to' "$tmp/$tag.cli$i" "$tmp/$tag.srv$i" | head -n 2 | xargs)"
		fi
	done

	to_csv "$raw" "$tag" "$t0" "$n" >>"$csv" || fail "$tag: converting the samples failed"
	# The steady window, for plot.py (its default window for this run).
	echo "$tag,$((dur - win)),window,$dur,,,,,,,,,,,," >>"$csv"
	rm -f "$raw".*
	local last_start=0
	for ((i = 0; i < n; i++)); do ((start[i] <= last_start)) || last_start=${start[i]}; done
	((n > 1 && last_start > 0)) && conv=(--converge "f$n")
	local kv
	for kv in $("$PYTHON" "$plot" --summary --format kv --run "$tag" --from "$((dur - win))" --to "$dur" \
		"${conv[@]}" "$csv"); do
		S[${kv%%=*}]=${kv#*=}
	done
	[[ -n ${S[jain]:-} ]] || fail "$tag: plot.py --summary gave nothing"

	# The run's own figures, for the table.
	S[mode]=$mode
	S[retx]=$(sum_senders retransmitted_pkts "$n")
	S[timeouts]=$(sum_senders retry_timeouts "$n")
	S[retx_w]=$(sum_senders retransmitted_pkts "$n" cw)
	S[timeouts_w]=$(sum_senders retry_timeouts "$n" cw)
	S[probes]=$(sum_senders tail_loss_probes "$n")
	S[probes_w]=$(sum_senders tail_loss_probes "$n" cw)
	S[ecn_rx]=$(dc "$devr" np_ecn_marked_roce_packets)
	S[cnp_sent]=$(dc "$devr" np_cnp_sent)
	S[cnp_rcvd]=$(sum_senders rcvd_cnp "$n")
	S[cnp_handled]=$(sum_senders rp_cnp_handled "$n")
	S[cnp_ignored]=$(sum_senders rp_cnp_ignored "$n")
	S[conv]=${S[converge_f$n]:--}
	log "$tag: window ${S[from]}..${S[to]} s: flows ${S[flow_mbps]} Mbit/s, Jain ${S[jain]}," \
		"link ${S[link_mbps]} of ${S[cap_mbps]} Mbit/s (util ${S[util]}), backlog mean ${S[backlog_mean]} B," \
		"p90 ${S[backlog_p90]} B, max ${S[backlog_max]} B (whole run: ${S[run_backlog_max]} B; RED max $red_max B);" \
		"marked ${S[q_marked]}, dropped ${S[q_dropped]} (early ${S[q_early]}, queue full ${S[q_pdrop]}," \
		"other ${S[q_other]}; in the window: ${S[dropped]})"
	log "$tag: senders retransmitted ${S[retx]:-?} (timeouts ${S[timeouts]:-?}, tail loss probes" \
		"${S[probes]:-?}; in the window: ${S[retx_w]:-?}, ${S[timeouts_w]:-?}, ${S[probes_w]:-?}), receiver ECN-marked" \
		"${S[ecn_rx]:-?}, CNPs sent ${S[cnp_sent]:-?}, senders rcvd_cnp ${S[cnp_rcvd]:-?}" \
		"handled ${S[cnp_handled]:-?} ignored ${S[cnp_ignored]:-?}${conv[*]:+, f$n converged after ${S[conv]} s};" \
		"input backlog drops ${S[softnet]}${S[pace_eff]:+; paced QPs sent ${S[pace_eff]} of their DCQCN rate}"
	for i in "${all_devs[@]}"; do
		local line="  $i:" x v
		for x in "${cnames[@]}"; do
			v=$(dc "$i" "$x")
			[[ -z $v || $v == 0 ]] || line+=" $x +$v"
		done
		log "$line"
	done
	summary_rows+=("$(row \
		"$tag" "$mode" "$n" "${S[jain]}" "${S[util]}" "${S[backlog_mean]%.*}" "${S[backlog_p90]}" \
		"${S[run_backlog_max]}" "${S[q_marked]}" "${S[dropped]}/${S[q_dropped]}" \
		"${S[retx_w]:--}/${S[retx]:--}" "${S[cnp_sent]:--}" "${S[conv]}" \
		"$(awk -v r="${S[link_mbps]}" 'BEGIN { printf "%.1f", r }')" "${S[flow_mbps]}")")
}

# check_marks TAG: the receiver saw every CE mark RED made. RED counts a
# mark when it enqueues the packet, sroce when it receives it: the same
# packets, as nothing between them drops or marks anything (the bridge's
# input backlogs are big enough: "input backlog drops" is 0). A marked
# packet that RED then drops (queue full) never arrives: with drops the
# receiver may count up to that many fewer. 2 more for luck.
check_marks() {
	local tag=$1 marks=${S[q_marked]} ecn=${S[ecn_rx]} tol
	[[ -n $ecn ]] || { bad "$tag: the receiver has no np_ecn_marked_roce_packets counter"; return 0; }
	tol=$((2 + S[q_dropped]))
	((ecn <= marks && marks - ecn <= tol)) ||
		bad "$tag: receiver's np_ecn_marked_roce_packets $ecn vs RED marked $marks (tolerance: up to $tol fewer, drops included)"
	[[ ${S[softnet]} == 0 ]] ||
		bad "$tag: the kernel dropped ${S[softnet]} packets at a full input backlog: the path is not loss-free"
}

# check_on TAG: the DCQCN-on assertions on the last run. The thresholds
# have margins over what the guest measured (Documentation/dcqcn.rst, three
# runs: Jain 0.995-0.998, utilisation 0.945-0.986, backlog max 46-108 kB of
# RED's 175 kB, the late flow within 20 % after 2-3 s): Jain >= 0.95,
# utilisation >= 0.80, backlog below RED's max, convergence within 8 s.
check_on() {
	local tag=$1 marks=${S[q_marked]} sent=${S[cnp_sent]} i d r h g
	# (Each failure says how the flows' DCQCN rates and the pacer did.)
	local why="DCQCN rates ${S[flow_dcqcn]:-?}, paced QPs sent ${S[pace_eff]:-?} of theirs"
	awk -v j="${S[jain]}" 'BEGIN { exit !(j >= 0.95) }' ||
		bad "$tag: Jain index ${S[jain]} < 0.95 (${S[flow_mbps]}; $why)"
	awk -v u="${S[util]}" 'BEGIN { exit !(u >= 0.80) }' ||
		bad "$tag: utilisation ${S[util]} < 0.80 of $cap Mbit/s ($why)"
	if [[ -z ${S[backlog_max]} ]] || ((S[backlog_max] >= red_max)); then
		bad "$tag: the backlog reached ${S[backlog_max]:-?} B in the steady window, RED max is $red_max B ($why)"
	fi
	# Nothing lost and nothing resent once DCQCN has the flows in hand. An
	# incast's start - every QP sends unpaced until its first CNP - can
	# still overflow the buffer: that is what PFC is for in a RoCE fabric;
	# the whole run's drops and retransmissions are reported.
	[[ ${S[dropped]} == 0 ]] || bad "$tag: the bottleneck dropped ${S[dropped]} packets in the steady window"
	[[ ${S[retx_w]} == 0 ]] ||
		bad "$tag: the senders retransmitted ${S[retx_w]} packets (${S[timeouts_w]} timeouts," \
			"${S[probes_w]:-?} tail loss probes) in the steady window"
	((marks > 0)) || bad "$tag: RED marked nothing: no congestion?"
	check_marks "$tag"
	if [[ -z $sent || -z ${S[cnp_handled]} || -z ${S[cnp_rcvd]} ]]; then
		bad "$tag: DCQCN counters missing (np_cnp_sent '$sent', rp_cnp_handled '${S[cnp_handled]}'," \
			"rcvd_cnp '${S[cnp_rcvd]}')"
		return 0
	fi
	# At most one CNP per marked packet; every CNP reaches its sender (the
	# way back is not shaped) and is handled there.
	((sent > 0 && sent <= S[ecn_rx])) || bad "$tag: np_cnp_sent $sent, want 0 < it <= ${S[ecn_rx]} marked packets received"
	((S[cnp_rcvd] == sent)) || bad "$tag: senders received ${S[cnp_rcvd]} CNPs, receiver sent $sent"
	((S[cnp_handled] == sent)) || bad "$tag: senders handled ${S[cnp_handled]} CNPs, receiver sent $sent"
	[[ ${S[cnp_ignored]:-0} == 0 ]] || bad "$tag: senders ignored ${S[cnp_ignored]} CNPs"
	# Each sender: every flow was slowed, and counted each CNP it got once.
	for ((i = 1; i <= S[flows]; i++)); do
		d=${devs[i]} r=$(dc "${devs[i]}" rcvd_cnp) h=$(dc "${devs[i]}" rp_cnp_handled)
		g=$(dc "${devs[i]}" rp_cnp_ignored)
		((r > 0 && r == h + g)) || bad "$tag: $d: rcvd_cnp +$r, rp_cnp_handled +$h, rp_cnp_ignored +$g"
	done
	if [[ ${S[conv]} != - ]]; then
		local c=${S[conv]}
		if [[ $c == none ]]; then
			bad "$tag: the late flow never converged to within 20 % of the mean"
		else
			awk -v c="$c" -v m="$conv_max" 'BEGIN { exit !(c <= m) }' ||
				bad "$tag: the late flow took $c s to converge (bound $conv_max s)"
		fi
	fi
}

# check_off TAG: DCQCN off: the marks still arrive (and are counted), no
# CNP is sent or acted on.
check_off() {
	check_marks "$1"
	[[ ${S[cnp_sent]:-0} == 0 ]] || bad "$1: np_enable 0, yet np_cnp_sent +${S[cnp_sent]}"
	[[ ${S[cnp_handled]:-0} == 0 ]] || bad "$1: rp_enable 0, yet rp_cnp_handled +${S[cnp_handled]}"
}

want_run() { [[ -z ${SROCE_DCQCN_ONLY:-} || " $SROCE_DCQCN_ONLY " == *" $1 "* ]]; }

# --- the runs -----------------------------------------------------------------------------
# Durations (s): run, steady window (the run's end), flow 2's start.
if ((full)); then
	d2=40 w2=15 j2=10 d4=40 w4=20
else
	d2=18 w2=7 j2=5 d4=14 w4=6
fi
if command -v dumpcap >/dev/null && command -v tshark >/dev/null; then
	capture=$tmp/cnp.pcapng
else
	log "NOTE: no dumpcap/tshark: the CNPs are not dissected"
fi
qpns=()
# incast TAG MODE DUR WIN START...: one run and its checks, one sub-case
# (full-only and not-wanted runs are skipped ones); ran=1 if it ran.
# (Called as a plain command: "set -e" stays in force in the run.)
incast() {
	local tag=$1 mode=$2 nf=${#failed[@]}
	ran=0
	if [[ $tag == *-2 ]] && ((!full)); then
		subtest_skip "$tag" "long set only (SROCE_DCQCN_FULL=1 or SROCE_FULL=1)"
		return 0
	fi
	if ! want_run "$tag"; then
		subtest_skip "$tag" "not in SROCE_DCQCN_ONLY"
		return 0
	fi
	run_incast "$@"
	if [[ $mode == on ]]; then check_on "$tag"; else check_off "$tag"; fi
	subtest_verdict "$tag" "${failed[*]:nf}"
	ran=1
}
if ((have_dcqcn)); then
	incast on-2-late on "$d2" "$w2" 0 "$j2"
	incast on-2 on "$d2" "$w2" 0 0
	incast on-4 on "$d4" "$w4" 0 0 0 0
	if ((ran)); then
		# The senders' QPNs (as tshark prints them), for the CNPs' DestQP.
		for ((i = 1; i <= 4; i++)); do
			q=$(awk '/local address:/ { for (k = 1; k <= NF; k++) if ($k == "QPN") print $(k + 1) }' "$tmp/on-4.cli$i" | head -n1)
			[[ -z $q ]] || qpns+=("$(printf '0x%06x' "$((q))")")
		done
	else
		capture=''
	fi
else
	capture=''
	for t in on-2-late on-2 on-4; do
		subtest_skip "$t" "the kernel has no DCQCN interface"
	done
fi
incast off-2-late off "$d2" "$w2" 0 "$j2"
incast off-2 off "$d2" "$w2" 0 0
incast off-4 off "$d4" "$w4" 0 0 0 0

# --- the CNPs on the wire -------------------------------------------------------------------
if [[ -n $capture ]]; then
	log "### tshark: CNPs and CE-marked requests captured on $rv during on-4"
	nf=${#failed[@]}
	dscp=$(knob_get "$devr" cnp_dscp)
	fields=(-e frame.number -e ip.src -e ip.dst -e ip.dsfield.dscp -e ip.dsfield.ecn -e udp.length
		-e infiniband.bth.opcode -e infiniband.bth.p_key -e infiniband.bth.destqp -e infiniband.bth.psn
		-e infiniband.bth -e infiniband.vendor -e _ws.malformed -e _ws.expert.message -e frame.protocols)
	if ! tshark -r "$capture" -T fields -E separator='|' -E occurrence=a "${fields[@]}" \
		>"$tmp/tshark.txt" 2>"$tmp/tshark.err"; then
		bad "tshark could not read the capture: $(tail -n 3 "$tmp/tshark.err")"
	fi
	# Per packet: a CNP (opcode 129 from the receiver) or a CE-marked request.
	read -r ncnp nce nbad firstbad < <(awk -F'|' -v r="$addr_r" -v dscp="$dscp" -v qpns=" ${qpns[*]} " \
		-v zeros=00000000000000000000000000000000 '
		function badpkt(why) { nbad++; if (first == "") first = "frame " $1 ": " why }
		{
			if ($13 != "" || $14 != "") { badpkt("malformed/expert: " $13 $14); next }
			if ($15 !~ /:infiniband/) { badpkt("not dissected as InfiniBand: " $15); next }
			if ($7 == 129) {
				ncnp++
				bth = $11; gsub(/[^0-9a-f]/, "", bth)
				split($12, v, ",")
				if ($2 != r) badpkt("CNP not from the receiver")
				else if (substr(bth, 9, 2) !~ /^[4-7c-f]/) badpkt("CNP without BECN: BTH " bth)
				else if ($8 != 65535) badpkt("CNP P_Key " $8)
				else if ($10 != 0) badpkt("CNP PSN " $10)
				else if ($6 != 40) badpkt("CNP UDP length " $6 " (want 8 + 12 + 16 + 4)")
				else if (length(v[2]) != 40 || substr(v[2], 1, 32) != zeros) badpkt("CNP payload " v[2] " (want 16 zero bytes + ICRC)")
				else if ($4 != dscp) badpkt("CNP DSCP " $4 ", cnp_dscp is " dscp)
				else if (qpns != "  " && index(qpns, " " $9 " ") == 0) badpkt("CNP to QP " $9 ", not a sender QP (" qpns ")")
			} else if ($5 == 3 && $7 <= 5) {
				nce++
			} else {
				badpkt("neither a CNP nor a CE-marked SEND: opcode " $7 " ECN " $5)
			}
		}
		END { print ncnp + 0, nce + 0, nbad + 0, (first == "" ? "-" : first) }' "$tmp/tshark.txt")
	log "capture: $ncnp CNPs, $nce CE-marked SEND packets, $nbad bad packets"
	((ncnp > 0)) || bad "tshark: no CNP in 3 s of on-4 on $rv"
	((nce > 0)) || bad "tshark: no CE-marked request in 3 s of on-4 on $rv"
	((nbad == 0)) || bad "tshark: $nbad packets not as expected; first: $firstbad"
	grep -m1 '|129|' "$tmp/tshark.txt" | sed 's/^/  first CNP: /' || true
	subtest_verdict "the CNPs on the wire, as tshark dissects them" "${failed[*]:nf}"
else
	subtest_skip "the CNPs on the wire, as tshark dissects them" "no capture (no dumpcap/tshark, no DCQCN, or on-4 not run)"
fi

# --- report ----------------------------------------------------------------------------------
log "### summary [test time ${SECONDS}s] (steady window = the end of each run; _w: in it; backlog in bytes, mean and"
log "### 90th percentile in the window, max over the run; RED min $red_min max $red_max limit $red_limit; shaped $cap Mbit/s)"
log "$(row run dcqcn flows jain util bl_mean bl_p90 bl_runmx marked drop_w/all retx_w/all cnps \
	conv_s mbps flow_mbps)"
for r in "${summary_rows[@]}"; do log "$r"; done
log "CSV: $csv ($(($(wc -l <"$csv") - 1)) rows); plot it on the host with tools/dcqcn/plot.py LOG -o dcqcn.svg"
log "---- BEGIN dcqcn_incast CSV ----"
cat "$csv"
log "---- END dcqcn_incast CSV ----"

((${#failed[@]} == 0)) || fail "${#failed[@]} check(s) failed: $(printf '%s; ' "${failed[@]}")"
((have_dcqcn)) || skip "the kernel has no DCQCN interface ($SR_SYS/DEV/dcqcn): only the DCQCN-off runs were made"
log "DCQCN incast: all checks passed"
