#!/bin/bash
# The two-guest lane: sroce in two kernels joined by a virtio-net link.
# Runs in guest A under tools/vm/two-guests (make test-2vm); guest B runs
# tools/vm/peer-agent.sh, and every step there goes through tools/vm/peer.sh.
#
# The link: eth0 of each guest (virtio_net; QEMU stream netdev, one cable
# between the two QEMUs), MTU 9000, 10.99.0.1 + fd99::1 (A) and 10.99.0.2 +
# fd99::2 (B). Path MTU 4096, so every full RoCE packet is a frame of more
# than a page, received in page fragments (mergeable receive buffers).
#
# Sub-cases (TAP lines "ok N - name", "not ok N - name # why", a SKIP for
# what could not run), each server on one guest and client on the other:
#  - ibv_rc_pingpong, ibv_uc_pingpong (64 KiB messages), ibv_ud_pingpong
#    (4 KiB), all with -c (the receiver checks the data), IPv4 and IPv6
#    GIDs, server in A and server in B; rping -V (RDMA CM, data verified)
#    IPv4 and IPv6, both ways;
#  - perftest ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat,
#    ib_send_lat: must run and report; the figures go to perf.txt (not
#    judged: benchmarks are separate from tests);
#  - tools/verbs-tests/rc_remote: every RC opcode in both directions at
#    once, every byte and completion checked, on a clean link (IPv4
#    polling, IPv6 events) and under tc netem on both guests' eth0 (loss
#    with corruption over IPv4, reordering with duplication, corruption
#    over IPv6), with the counters required to show what netem did;
#  - the virtio path: eth0's counters carried at least every RoCE packet and
#    byte sroce counted, on both guests, with no UDP checksum error; frames
#    came in through GRO
#    (napi_gro_receive) in page fragments, frames of more than one page
#    among them;
#  - sroce against rdma_rxe: rxe in B, then in A (on eth0, in the initial
#    namespace), RC pingpong each way, UD pingpong, rc_remote.
# tools/vm/two-guests adds the harness's verdict on each guest (exit status,
# kernel splat, crash). Exit 0 iff no sub-case failed.
#
# SROCE_SEED=N replays rc_remote's operations; SROCE_2VM_ONLY=REGEX runs
# only the sub-cases whose name matches the extended regular expression
# (setup always runs; a debugging aid: the virtio path cases count the
# traffic of the cases before them).
set -uo pipefail
SROCE_ROOT=${SROCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export SROCE_ROOT SROCE_TEST_NAME=two_guests
# shellcheck source=selftests/two_guests/common.sh
source "$SROCE_ROOT/selftests/two_guests/common.sh"
# shellcheck source=tools/vm/peer.sh
source "$SROCE_ROOT/tools/vm/peer.sh"
# shellcheck disable=SC2016 # expanded in guest B
PEER_PREAMBLE='source "$SROCE_ROOT/selftests/two_guests/common.sh"'

A4=10.99.0.1 B4=10.99.0.2 A6=fd99::1 B6=fd99::2
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}
tmp=$(mktemp -d)
perf=/run/sroce-out/perf.txt
[[ -d /run/sroce-out && -w /run/sroce-out ]] || perf=$tmp/perf.txt
: >"$perf"
port=18500

echo "TAP version 13"
echo "# two-guest lane: guest A $(</proc/sys/kernel/osrelease), seed $seed (SROCE_SEED=$seed replays rc_remote)"

# --- TAP ----------------------------------------------------------------------------
ncase=0 nfail=0
why='' case_rc=''
# subcase NAME FUNC ARGS...: FUNC's output (as "# " lines), then the TAP
# line. FUNC returns 0 (pass), 4 (skip) or anything else (fail), with the
# reason in $why.
subcase() {
	local name=$1 rc=0 t0=$SECONDS
	shift
	case_rc=''
	filtered_out "$name" && return 0
	why=''
	ncase=$((ncase + 1))
	echo "# --- $ncase: $name"
	"$@" >"$tmp/case" 2>&1 </dev/null || rc=$?
	sed 's/^/# /' "$tmp/case"
	case_rc=$rc
	if [[ $rc == 0 ]]; then
		echo "ok $ncase - $name ($((SECONDS - t0))s)"
	elif [[ $rc == 4 ]]; then
		echo "ok $ncase - $name # SKIP ${why:-no reason given}"
	else
		nfail=$((nfail + 1))
		echo "not ok $ncase - $name # ${why:-exit $rc}"
	fi
	return 0
}
filtered_out() { # SROCE_2VM_ONLY leaves NAME out
	[[ -n ${SROCE_2VM_ONLY:-} && $1 != setup* && ! $1 =~ $SROCE_2VM_ONLY ]]
}
bail() {
	echo "Bail out! $*"
	peer_quit
	exit 1
}

# --- one exchange ---------------------------------------------------------------------
# exchange SIDE READY 'SERVER' 'CLIENT' [LIMIT]: SERVER (a shell command
# line) in guest SIDE (A or B), CLIENT in the other; READY is how to know
# the server listens (tcp PORT, cm, none: see tg_wait_ready). Outputs in
# $tmp/srv and $tmp/cli, exit statuses in $src and $crc.
exchange() {
	local side=$1 ready=$2 scmd=$3 ccmd=$4 limit=${5:-120} kind rport spid job
	read -r kind rport <<<"$ready"
	src=0 crc=0
	local t0=$EPOCHREALTIME
	echo "[$side] $scmd"
	echo "[$([[ $side == A ]] && echo B || echo A)] $ccmd"
	if [[ $side == A ]]; then
		# shellcheck disable=SC2086 # a command line
		timeout "$limit" $scmd >"$tmp/srv" 2>&1 &
		spid=$!
		tg_wait_ready "$kind" "${rport:-0}" "$spid" 30 || echo "(the server is not listening after 30 s)"
		echo "($(dt "$t0")s: the server listens)"
		peer_run "timeout $limit $ccmd" $((limit + 30)) >"$tmp/cli" 2>&1 || crc=$?
		echo "($(dt "$t0")s: the client ended)"
		if [[ $crc != 0 ]]; then
			sleep 1
			kill "$spid" 2>/dev/null
		fi
		wait "$spid" || src=$?
	else
		peer_start "timeout $limit $scmd & p=\$!
			tg_wait_ready $kind ${rport:-0} \$p 30 && peer_mark ready
			wait \$p"
		job=$PEER_JOB
		peer_wait_mark "$job" ready 40 || echo "(the server is not listening after 40 s)"
		echo "($(dt "$t0")s: the server listens)"
		# shellcheck disable=SC2086 # a command line
		timeout "$limit" $ccmd >"$tmp/cli" 2>&1 || crc=$?
		echo "($(dt "$t0")s: the client ended)"
		if [[ $crc != 0 ]]; then
			sleep 1
			peer_kill "$job"
		fi
		peer_wait "$job" $((limit + 30)) || src=$?
		peer_out "$job" >"$tmp/srv"
	fi
}

dt() { # seconds since $1 (an $EPOCHREALTIME)
	local from=${1/./} now=${EPOCHREALTIME/./}
	printf '%d.%01d' $(((now - from) / 1000000)) $(((now - from) / 100000 % 10))
}

# show: both outputs, for a failing case.
show() {
	sed 's/^/  server| /' "$tmp/srv"
	sed 's/^/  client| /' "$tmp/cli"
}

both_ok() { # both exited 0, or $why says which did not
	[[ $src == 0 && $crc == 0 ]] && return 0
	why="server exited with $src, client with $crc"
	show
	return 1
}

# --- setup ----------------------------------------------------------------------------
declare -A gid=()
DEV_A=sroce0 DEV_B=sroce0
# devs_up TYPE_A TYPE_B: TYPE_A's device in A and TYPE_B's in B (at once),
# their GID indexes in gid[A4] gid[A6] gid[B4] gid[B6].
devs_up() {
	local job last
	peer_start "tg_dev_up $2 $B4 $B6"
	job=$PEER_JOB
	tg_dev_up "$1" "$A4" "$A6" >"$tmp/devup" || { cat "$tmp/devup"; why="guest A: no $1 device"; return 1; }
	sed '$d' "$tmp/devup"
	read -r 'gid[A4]' 'gid[A6]' < <(tail -n 1 "$tmp/devup")
	peer_wait "$job" 60 || { peer_out "$job"; why="guest B: no $2 device"; return 1; }
	peer_out "$job" | sed '$d'
	last=$(peer_out "$job" | tail -n 1)
	read -r 'gid[B4]' 'gid[B6]' <<<"$last"
	DEV_A=${1}0 DEV_B=${2}0
	echo "GIDs: A $DEV_A v4 #${gid[A4]} v6 #${gid[A6]}; B $DEV_B v4 #${gid[B4]} v6 #${gid[B6]}"
}

setup() {
	local t0=$EPOCHREALTIME job mac_a mac_b
	peer_ready 120 || { why="guest B's agent did not start"; return 1; }
	echo "($(dt "$t0")s: guest B's agent is ready)"
	peer_start "tg_net $B4 $B6 && tg_hist_on"
	job=$PEER_JOB
	tg_net "$A4" "$A6" || { why="guest A: network setup failed"; return 1; }
	tg_hist_on || echo "(no GRO histogram: the virtio path case will skip)"
	peer_wait "$job" 60 || { peer_out "$job"; why="guest B: network setup failed"; return 1; }
	peer_out "$job"
	echo "($(dt "$t0")s: eth0 up)"
	# Static neighbours: nothing for netem to drop, no modify_qp waiting
	# for neighbour discovery.
	mac_a=$(</sys/class/net/eth0/address)
	mac_b=$(peer_run 'cat /sys/class/net/eth0/address')
	echo "MACs: A $mac_a, B $mac_b"
	tg_neigh "$B4" "$B6" "$mac_b" || { why="guest A: ip neigh failed"; return 1; }
	peer_run "tg_neigh $A4 $A6 $mac_a" || { why="guest B: ip neigh failed"; return 1; }
	devs_up sroce sroce || return 1
	echo "($(dt "$t0")s: sroce0 up)"
	return 0
}

# --- counters -------------------------------------------------------------------------
# shellcheck disable=SC2034 # c2: only to read the counters while removing netem
declare -A c0 c1 c2
# snap ARRAY ['CMD']: both guests' tg_counters (at once; after CMD, a
# command line run first on both) into ARRAY[A.name] / ARRAY[B.name].
snap() {
	# shellcheck disable=SC2034 # a nameref
	local -n arr=$1
	local k v job
	peer_start "${2:+$2 && }tg_counters"
	job=$PEER_JOB
	{ [[ -z ${2:-} ]] || eval "$2"; } && tg_counters >"$tmp/snap" || return 1
	while read -r k v; do arr[A.$k]=$v; done <"$tmp/snap"
	peer_wait "$job" 60 || return 1
	# shellcheck disable=SC2034 # a nameref
	while read -r k v; do arr[B.$k]=$v; done < <(peer_out "$job")
}
dc() { echo $((${c1[$1]:-0} - ${c0[$1]:-0})); } # how much A.x / B.x moved

# --- pingpongs ------------------------------------------------------------------------
pp_check() { # SIZE ITERS: both outputs have the right "bytes in" line, no bad data
	local f want=$((2 * $1 * $2)) got
	both_ok || return 1
	for f in srv cli; do
		if grep -qiE 'invalid data|mismatch|failed' "$tmp/$f"; then
			why="$f: $(grep -iE 'invalid data|mismatch|failed' "$tmp/$f" | head -n 2 | xargs)"
			show
			return 1
		fi
		got=$(awk '/ bytes in / { print $1; exit }' "$tmp/$f")
		if [[ $got != "$want" ]]; then
			why="$f: '${got:-no} bytes in' line, want $want bytes"
			show
			return 1
		fi
	done
	grep -hE ' bytes in | iters in ' "$tmp/cli"
}

# pp TOOL FAMILY SERVER_SIDE SIZE ITERS ARGS...
pp() {
	local tool=$1 fam=$2 side=$3 size=$4 iters=$5 srvaddr sg cg
	shift 5
	port=$((port + 1))
	if [[ $side == A ]]; then
		srvaddr=$A4 sg=${gid[A$fam]} cg=${gid[B$fam]}
		exchange A "tcp $port" "$tool -d $DEV_A -g $sg -p $port -s $size -n $iters $*" \
			"$tool -d $DEV_B -g $cg -p $port -s $size -n $iters $* $srvaddr" 90
	else
		srvaddr=$B4 sg=${gid[B$fam]} cg=${gid[A$fam]}
		exchange B "tcp $port" "$tool -d $DEV_B -g $sg -p $port -s $size -n $iters $*" \
			"$tool -d $DEV_A -g $cg -p $port -s $size -n $iters $* $srvaddr" 90
	fi
	pp_check "$size" "$iters"
}

rping_case() { # FAMILY SERVER_SIDE
	local fam=$1 side=$2 addr
	if [[ $side == A ]]; then addr=$A4; else addr=$B4; fi
	[[ $fam == 4 ]] || { if [[ $side == A ]]; then addr=$A6; else addr=$B6; fi; }
	port=$((port + 1))
	exchange "$side" cm "rping -s -a $addr -p $port -V -C 50 -S 16384" \
		"rping -c -a $addr -p $port -V -C 50 -S 16384" 90
	both_ok
}

# --- perftest -------------------------------------------------------------------------
# perf TOOL ARGS...: server in A, client in B; the client's result row goes
# to perf.txt.
perf() {
	local tool=$1 row hdr
	shift
	port=$((port + 1))
	exchange A "tcp $port" "$tool -d $DEV_A -x ${gid[A4]} -p $port -F $*" \
		"$tool -d $DEV_B -x ${gid[B4]} -p $port -F $* $A4" 120
	both_ok || return 1
	hdr=$(grep -m1 '#bytes' "$tmp/cli" | sed 's/^ *//')
	row=$(awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print; exit }' "$tmp/cli" | xargs)
	if [[ -z $row ]]; then
		why="no result row"
		show
		return 1
	fi
	echo "$hdr"
	echo "$row"
	local -a f
	read -ra f <<<"$row"
	if [[ $tool == *_bw ]]; then
		printf '%-12s %-26s %8s B x %-6s average %8s MB/s  peak %8s MB/s  %s Mpps\n' \
			"$tool" "$*" "${f[0]}" "${f[1]}" "${f[3]}" "${f[2]}" "${f[4]}" >>"$perf"
	else
		printf '%-12s %-26s %8s B x %-6s typical %8s us  average %8s us  min %s us  99%% %s us  max %s us\n' \
			"$tool" "$*" "${f[0]}" "${f[1]}" "${f[4]}" "${f[5]}" "${f[2]}" "${f[7]}" "${f[3]}" >>"$perf"
	fi
	if grep -q 'Correlation coefficient' "$tmp/cli"; then
		why="perftest could not calibrate its clock under TCG: figures unchecked"
		return 4
	fi
}

# --- rc_remote ------------------------------------------------------------------------
# remote TAG SERVER_SIDE 'NETEM' EXPECT CLIENT_ARGS...: rc_remote (TAG names
# the run in the log), with netem
# on both eth0s; EXPECT (comma-separated: clean, loss, reorder, dup,
# corrupt) says what the sroce counters must show.
rr_n=0
remote() {
	local side=$2 spec=$3 expect=$4 saddr sdev cdev g k retx=0 oos=0 dup=0 icrc=0 csum=0 tmo=0 tlp=0 malf=0
	shift 4
	rr_n=$((rr_n + 1))
	port=$((port + 1))
	if [[ $side == A ]]; then saddr=$A4 sdev=$DEV_A cdev=$DEV_B; else saddr=$B4 sdev=$DEV_B cdev=$DEV_A; fi
	# The counters count only between two sroce devices.
	local counted=0
	[[ $DEV_A != sroce0 || $DEV_B != sroce0 ]] || counted=1
	if ((counted)); then
		snap c0 "${spec:+tg_netem \"$spec\"}" || { why="tc netem or the counters failed"; return 1; }
	elif [[ -n $spec ]]; then
		if ! tg_netem "$spec" || ! peer_run "tg_netem '$spec'"; then
			why="tc netem failed"
			return 1
		fi
	fi
	exchange "$side" none "$TG_BIN/rc_remote --listen $port --dev $sdev --timeout 60 ${RR_SERVER_ARGS:-}" \
		"$TG_BIN/rc_remote --connect $saddr --port $port --dev $cdev --seed $((seed + rr_n)) --timeout 60 $*" 400
	if ((counted)); then
		sleep 1 # the last ACKs
		snap c1
	fi
	[[ -z $spec ]] || snap c2 "tg_netem ''" >/dev/null
	grep -h 'rc_remote: PASS' "$tmp/srv" "$tmp/cli"
	both_ok || return 1
	if ! grep -q 'rc_remote: PASS' "$tmp/cli" || ! grep -q 'rc_remote: PASS' "$tmp/srv"; then
		why="no PASS line"
		show
		return 1
	fi
	((counted)) || return 0
	for g in A B; do
		echo "$g: qdisc dropped $(dc "$g.qdisc.dropped");" \
			"$(for k in sent_pkts rcvd_pkts retransmitted_pkts retry_timeouts tail_loss_probes out_of_seq_request duplicate_request seq_nak_sent rcvd_icrc_err rcvd_malformed; do
				printf '%s +%s ' "$k" "$(dc "$g.sroce.$k")"
			done)udp csum errors +$(($(dc "$g.udp.InCsumErrors") + $(dc "$g.udp6.InCsumErrors")))"
		retx=$((retx + $(dc "$g.sroce.retransmitted_pkts")))
		tmo=$((tmo + $(dc "$g.sroce.retry_timeouts")))
		tlp=$((tlp + $(dc "$g.sroce.tail_loss_probes")))
		malf=$((malf + $(dc "$g.sroce.rcvd_malformed")))
		oos=$((oos + $(dc "$g.sroce.out_of_seq_request")))
		dup=$((dup + $(dc "$g.sroce.duplicate_request")))
		icrc=$((icrc + $(dc "$g.sroce.rcvd_icrc_err")))
		csum=$((csum + $(dc "$g.udp.InCsumErrors") + $(dc "$g.udp6.InCsumErrors")))
		for k in retry_exceeded_err rcvd_fatal_nak; do
			(($(dc "$g.sroce.$k") == 0)) || { why="$g: $k +$(dc "$g.sroce.$k")"; return 1; }
		done
	done
	# A malformed packet is one netem corrupted (below), or a bug.
	case ",$expect," in *,corrupt,*) ;; *)
		((malf == 0)) || { why="$malf malformed packets received, and netem corrupted nothing"; return 1; } ;;
	esac
	case ",$expect," in *,clean,*)
		# Nothing lost or reordered on the way: no qdisc drop, no
		# out-of-sequence request, no ICRC error. Retransmissions only
		# after a timer: a guest that TCG starves of CPU for longer
		# than a tail loss probe's wait (from 10 ms) or the ACK timeout
		# (67 ms) makes its peer resend.
		(($(dc A.qdisc.dropped) + $(dc B.qdisc.dropped) == 0)) ||
			{ why="clean link, yet the qdisc dropped packets"; return 1; }
		((oos == 0 && icrc == 0 && csum == 0)) ||
			{ why="clean link, yet $oos out-of-sequence requests, $icrc ICRC errors, $csum UDP checksum errors"; return 1; }
		if ((retx > 0)); then
			((tmo + tlp > 0)) ||
				{ why="clean link, $retx retransmissions without an ACK timeout or a tail loss probe"; return 1; }
			echo "note: $retx packets retransmitted after $tmo ACK timeouts and $tlp tail loss probes (a starved guest), no loss"
		fi ;;
	esac
	case ",$expect," in *,loss,*)
		(($(dc A.qdisc.dropped) + $(dc B.qdisc.dropped) > 0)) || { why="netem dropped nothing"; return 1; }
		((retx > 0)) || { why="packets were lost, nothing was retransmitted"; return 1; } ;;
	esac
	case ",$expect," in *,reorder,*)
		((oos > 0)) || { why="netem reordered, no out-of-sequence request counted"; return 1; } ;;
	esac
	case ",$expect," in *,dup,*)
		((dup > 0)) || { why="netem duplicated, no duplicate request counted"; return 1; } ;;
	esac
	case ",$expect," in *,corrupt,*)
		# RoCE v2 sends a zero UDP checksum (IPv6 too: sroce's socket
		# accepts zero-checksum datagrams), so sroce's ICRC is what
		# catches a flipped bit. (A bit flipped in the zero checksum
		# itself makes the kernel check it: a UDP checksum error. One
		# in the UDP length makes the kernel cut the datagram there:
		# too short for RoCE, it is malformed; else the ICRC fails.)
		((icrc > 0)) || { why="netem corrupted packets, but no ICRC error was counted"; return 1; }
		((retx > 0)) || { why="corrupted packets were never retransmitted"; return 1; } ;;
	esac
	return 0
}

# --- the virtio path ------------------------------------------------------------------
nic_counters() { # eth0 carried what sroce counted, both ways, on both guests
	local g q bad=0
	for g in A B; do
		q=''
		[[ -z ${c1[$g.ethtool.rx_queue_0_packets]:-} ]] ||
			q="virtio rx_queue_0 +$(dc "$g.ethtool.rx_queue_0_packets") packets, tx_queue_0 +$(dc "$g.ethtool.tx_queue_0_packets");"
		echo "$g: eth0 rx +$(dc "$g.eth0.rx_packets") packets +$(dc "$g.eth0.rx_bytes") B," \
			"tx +$(dc "$g.eth0.tx_packets") packets +$(dc "$g.eth0.tx_bytes") B;" ${q:+"$q"} \
			"sroce0 rcvd +$(dc "$g.sroce.rcvd_pkts") packets +$(dc "$g.sroce.rcvd_bytes") B," \
			"sent +$(dc "$g.sroce.sent_pkts") packets +$(dc "$g.sroce.sent_bytes") B"
		(($(dc "$g.sroce.rcvd_pkts") > 1000)) || { why="$g: sroce0 received only $(dc "$g.sroce.rcvd_pkts") packets"; bad=1; }
		(($(dc "$g.eth0.rx_packets") >= $(dc "$g.sroce.rcvd_pkts"))) || { why="$g: eth0 received fewer packets than sroce0"; bad=1; }
		(($(dc "$g.eth0.tx_packets") >= $(dc "$g.sroce.sent_pkts"))) || { why="$g: eth0 sent fewer packets than sroce0"; bad=1; }
		(($(dc "$g.eth0.rx_bytes") >= $(dc "$g.sroce.rcvd_bytes"))) || { why="$g: eth0 received fewer bytes than sroce0"; bad=1; }
		(($(dc "$g.eth0.tx_bytes") >= $(dc "$g.sroce.sent_bytes"))) || { why="$g: eth0 sent fewer bytes than sroce0"; bad=1; }
		if [[ -n ${c1[$g.ethtool.rx_queue_0_packets]:-} ]]; then
			(($(dc "$g.ethtool.rx_queue_0_packets") >= $(dc "$g.sroce.rcvd_pkts"))) ||
				{ why="$g: virtio rx_queue_0 saw fewer packets than sroce0"; bad=1; }
		elif [[ -n ${c1[$g.ethtool.rx0_kicks]:-} ]]; then
			# virtio_net of 6.10 and later reports per-queue packets
			# only as netlink queue stats, not in ethtool -S: that
			# queue 0 was kicked both ways is what shows it was used.
			echo "$g: this kernel's ethtool -S has no per-queue packet counts;" \
				"virtio queue 0 kicks: rx +$(dc "$g.ethtool.rx0_kicks"), tx +$(dc "$g.ethtool.tx0_kicks")"
			(($(dc "$g.ethtool.rx0_kicks") > 0 && $(dc "$g.ethtool.tx0_kicks") > 0)) ||
				{ why="$g: virtio queue 0 was not kicked both ways"; bad=1; }
		else
			why="$g: ethtool -S eth0 shows neither rx_queue_0_packets nor rx0_kicks"
			bad=1
		fi
		# No checksum offload on this NIC: whatever UDP checksum there is
		# (RoCE v2's is zero) the receiving kernel checks in software.
		(($(dc "$g.udp.InCsumErrors") + $(dc "$g.udp6.InCsumErrors") == 0)) ||
			{ why="$g: UDP checksum errors on a clean link"; bad=1; }
		echo "$g: UDP checksum errors +$(($(dc "$g.udp.InCsumErrors") + $(dc "$g.udp6.InCsumErrors")));" \
			"qdisc drops +$(dc "$g.qdisc.dropped"); sroce0 retransmitted +$(dc "$g.sroce.retransmitted_pkts")" \
			"after +$(dc "$g.sroce.retry_timeouts") ACK timeouts, out-of-sequence +$(dc "$g.sroce.out_of_seq_request")," \
			"send_err +$(dc "$g.sroce.send_err"), ICRC errors +$(dc "$g.sroce.rcvd_icrc_err")"
	done
	return "$bad"
}

gro_paged() { # frames came in through GRO in page fragments, some in several
	local g h paged multi total
	for g in A B; do
		if [[ $g == A ]]; then h=$(tg_hist); else h=$(peer_run tg_hist 60); fi
		[[ -n $h ]] || { why="no napi_gro_receive_entry histogram"; return 4; }
		echo "$g: frames through napi_gro_receive by nr_frags (nr_frags ip_summed frames bytes):"
		echo "    ${h//$'\n'/$'\n'    }"
		read -r total paged multi < <(awk '{ t += $3; if ($1 >= 1) p += $3; if ($1 >= 2) m += $3 }
			END { print t + 0, p + 0, m + 0 }' <<<"$h")
		echo "$g: $total frames, $paged with page fragments, $multi in two or more"
		((paged > 0)) || { why="$g: no frame arrived in page fragments"; return 1; }
		((multi > 0)) || { why="$g: no frame spanned two page fragments"; return 1; }
	done
}

# --- rxe ------------------------------------------------------------------------------
# rxe_in SIDE: rdma_rxe on SIDE's eth0, sroce on the other.
rxe_in() {
	if [[ $1 == B ]]; then devs_up sroce rxe; else devs_up rxe sroce; fi
}

# skipped NAME REASON: a sub-case that could not run.
skipped() {
	filtered_out "$1" && return 0
	ncase=$((ncase + 1))
	echo "ok $ncase - $1 # SKIP $2"
}

# === the lane ===========================================================================
t_lane=$SECONDS
subcase "setup: sroce0 on eth0 (virtio_net, MTU 9000) in both guests, IPv4 and IPv6 GIDs" setup
if [[ $nfail != 0 ]]; then
	bail "setup failed"
fi
snap c0
declare -A n0
for k in "${!c0[@]}"; do n0[$k]=${c0[$k]}; done

for fam in 4 6; do
	ev=''
	[[ $fam == 4 ]] || ev=-e
	for side in A B; do
		other=B
		[[ $side == A ]] || other=A
		subcase "RC ibv_rc_pingpong -c IPv$fam 64 KiB x 25${ev:+ events}, server $side, client $other" \
			pp ibv_rc_pingpong "$fam" "$side" 65536 25 -c -m 4096 $ev
		subcase "UC ibv_uc_pingpong -c IPv$fam 64 KiB x 25${ev:+ events}, server $side, client $other" \
			pp ibv_uc_pingpong "$fam" "$side" 65536 25 -c -m 4096 $ev
		subcase "UD ibv_ud_pingpong -c IPv$fam 4 KiB x 100${ev:+ events}, server $side, client $other" \
			pp ibv_ud_pingpong "$fam" "$side" 4096 100 -c $ev
	done
done
subcase "RDMA CM rping -V IPv4 16 KiB x 50, server A, client B" rping_case 4 A
subcase "RDMA CM rping -V IPv6 16 KiB x 50, server B, client A" rping_case 6 B

echo "# perftest between the guests (sroce0 in A serves, sroce0 in B is the client): figures at the end, not judged"
subcase "perftest ib_write_bw 64 KiB, A <- B" perf ib_write_bw -s 65536 -n 500
subcase "perftest ib_read_bw 64 KiB, A <- B" perf ib_read_bw -s 65536 -n 300
subcase "perftest ib_send_bw 64 KiB, A <- B" perf ib_send_bw -s 65536 -n 500
subcase "perftest ib_send_lat 64 B, A <- B" perf ib_send_lat -s 64 -n 500

subcase "rc_remote clean link, IPv4, polling, server A" remote clean A "" clean --iters 400
RR_SERVER_ARGS=--use-event subcase "rc_remote clean link, IPv6, events, up to 1 MiB, server B" \
	remote clean6 B "" clean --iters 150 --ipv6 --use-event --max-size 1M --window 8

# The counters of everything so far: eth0 against sroce0.
c0=()
for k in "${!n0[@]}"; do c0[$k]=${n0[$k]}; done
snap c1
subcase "virtio path: eth0 (rx/tx, virtio queues) carried every RoCE packet and byte sroce0 counted, no UDP checksum error, both guests" \
	nic_counters
subcase "virtio path: frames through GRO (napi_gro_receive) in page fragments, some in two or more" gro_paged

rr=(--iters 200 --max-size 64K)
subcase "rc_remote netem loss 2% corrupt 1% both ways, IPv4, server A" \
	remote loss A "loss 2% corrupt 1%" loss,corrupt "${rr[@]}"
subcase "rc_remote netem delay 2ms reorder 25% duplicate 3%, IPv4, server B" \
	remote reorder B "delay 2ms reorder 25% 50% duplicate 3%" reorder,dup "${rr[@]}"
subcase "rc_remote netem corrupt 1%, IPv6, events, server A" \
	remote corrupt6 A "corrupt 1%" corrupt "${rr[@]}" --ipv6 --use-event

for rxe in B A; do
	if [[ $rxe == B ]]; then s=A; else s=B; fi
	subcase "rxe interop: rdma_rxe in $rxe, sroce in $s, on eth0" rxe_in "$rxe"
	rxe_cases=(
		"rxe interop: RC pingpong -c IPv4 64 KiB, server sroce ($s), client rxe ($rxe)"
		"rxe interop: RC pingpong -c IPv6 64 KiB, server rxe ($rxe), client sroce ($s)"
		"rxe interop: UD pingpong -c IPv4 4 KiB, server rxe ($rxe), client sroce ($s)"
		"rxe interop: rc_remote every opcode both ways, IPv4, server sroce ($s), client rxe ($rxe)"
	)
	[[ -n $case_rc ]] || continue # left out by SROCE_2VM_ONLY
	if [[ $case_rc != 0 ]]; then
		for c in "${rxe_cases[@]}"; do skipped "$c" "rdma_rxe and sroce did not come up"; done
		continue
	fi
	subcase "${rxe_cases[0]}" pp ibv_rc_pingpong 4 "$s" 65536 20 -c -m 4096
	subcase "${rxe_cases[1]}" pp ibv_rc_pingpong 6 "$rxe" 65536 20 -c -m 4096
	subcase "${rxe_cases[2]}" pp ibv_ud_pingpong 4 "$rxe" 4096 100 -c
	subcase "${rxe_cases[3]}" remote "rxe-$rxe" "$s" "" "" --iters 200 --max-size 256K
done

peer_quit
echo "# two-guest lane: $ncase sub-cases, $nfail failed, $((SECONDS - t_lane))s"
((nfail == 0))
