#!/bin/bash
# The guest half of `make bench-lossy` (tools/bench/run.sh --lossy boots the
# VM and runs this in it; it is not meant to be run anywhere else).
#
# usage: tools/bench/lossy.sh [--out DIR] [--quick] [--settings "A;B;..."]
#   --out DIR       where lossy-raw.jsonl goes (default /run/sroce-out)
#   --quick         3 s runs instead of 8 s (for trying the script out)
#   --settings S    netem settings, ';'-separated (default: the list below)
#
# Goodput under impairment (issue 25): the same netem setting on both ends
# of a veth pair (so requests and responses both suffer it), and for each
# setting, one after the other in this one guest boot:
#   sroce-gbn   sroce -> sroce, two namespaces over the veth pair, go-back-N
#               (with requests and READ responses placed ahead, tail loss
#               probes): ib_write_bw 64 KiB, one QP, -D secs
#   rxe-gbn     rdma_rxe (initial namespace: 6.1's rxe only works there) as
#               the requester -> sroce as the responder, over a second veth
#               pair with the same netem: rxe's go-back-N requester
#   tcp         iperf3, one TCP stream over the sroce-gbn veth pair
# Every run is a timed one (perftest -D, iperf3 -t): goodput is what the
# receiver got per second. A run that fails (perftest's "retry exceeded",
# a hang killed by the time limit) is recorded with ok=false and no
# goodput: go-back-N must never stop making progress, and this shows it.
# For sroce the requester's retransmitted_pkts, retry_timeouts and
# tail_loss_probes and the responder's out_of_seq_placed are recorded.
#
# One JSON object per run in DIR/lossy-raw.jsonl:
#   {"stack", "setting", "ok", "goodput_MiBps", "secs", "counters": {...}}
# tools/bench/lossy_report.py turns them into the table (each stack's
# goodput as a share of its own goodput with no netem, and of its own with
# the same jitter and no loss).
#
# TCG (QEMU without KVM) makes every figure slow and noisy: only the shares
# and the ratios between stacks measured in the same boot mean anything.

# shellcheck disable=SC2016  # jq programs: the $names are jq's
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SROCE_TEST_NAME=bench-lossy
# shellcheck source=selftests/lib_sroce.sh
source "$here/../../selftests/lib_sroce.sh"
# shellcheck source=tools/bench/lib_bench.sh
source "$here/lib_bench.sh"

outdir=/run/sroce-out quick=0
settings="none;loss 0.1%;loss 1%;loss 5%;delay 1ms 1ms;delay 1ms 1ms loss 0.1%"
settings+=";delay 1ms 1ms loss 1%;delay 1ms 1ms loss 5%;duplicate 1%"
while [[ $# -gt 0 ]]; do
	case "$1" in
	--out) outdir=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--settings) settings=$2; shift 2 ;;
	*) fail "unknown argument $1" ;;
	esac
done
secs=8 size=65536
[[ $quick == 0 ]] || secs=3

next_port=19500
bench_start "$outdir" lossy-raw.jsonl "tools/bench/run.sh --lossy" ib_write_bw iperf3 jq tc

# sroce <-> sroce: A (responder, perftest server) and B (requester).
nsa=lossy-a nsb=lossy-b nsr=lossy-r
ns_create "$nsa"
ns_create "$nsb"
ns_create "$nsr"
veth_pair "$nsa" lveth-a "$nsb" lveth-b
check ip -n "$nsa" addr add 192.0.2.1/24 dev lveth-a
check ip -n "$nsb" addr add 192.0.2.2/24 dev lveth-b
sr_link_add "$nsa" lsroce-a lveth-a
sr_link_add "$nsb" lsroce-b lveth-b
# rxe (initial namespace, requester) <-> sroce in R (responder).
veth_pair - lveth-x "$nsr" lveth-r
check ip addr add 203.0.113.1/24 dev lveth-x
check ip -n "$nsr" addr add 203.0.113.2/24 dev lveth-r
sr_link_add "$nsr" lsroce-r lveth-r
check rdma link add lrxe0 type rxe netdev lveth-x
defer_quiet rdma link delete lrxe0

gid_a=$(sr_gid_of lsroce-a 192.0.2.1)
gid_b=$(sr_gid_of lsroce-b 192.0.2.2)
gid_r=$(sr_gid_of lsroce-r 203.0.113.2)
gid_x=$(sr_gid_of lrxe0 203.0.113.1)

# netem SETTING: the same qdisc on every veth end of both pairs.
netem() {
	local ns dev ns_dev
	for ns_dev in "$nsa lveth-a" "$nsb lveth-b" "- lveth-x" "$nsr lveth-r"; do
		read -r ns dev <<<"$ns_dev"
		if [[ $1 == none ]]; then
			ns_exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
		else
			# shellcheck disable=SC2086 # netem takes its words apart
			check ns_exec "$ns" tc qdisc replace dev "$dev" root netem $1 limit 10000
		fi
	done
}

untrapped() {
	trap - ERR
	"$@"
}
listening() { ns_exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# Counters of the sroce requester and responder (absent ones: null).
cnt() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null || echo null; }
counters() { # REQ RESP: one JSON object
	jq -cn --argjson r "$(cnt "$1" retransmitted_pkts)" --argjson t "$(cnt "$1" retry_timeouts)" \
		--argjson p "$(cnt "$1" tail_loss_probes)" --argjson x "$(cnt "$1" retry_exceeded_err)" \
		--argjson o "$(cnt "$2" out_of_seq_placed)" --argjson s "$(cnt "$1" sent_pkts)" \
		'{sent_pkts: $s, retransmitted_pkts: $r, retry_timeouts: $t, tail_loss_probes: $p,
		  retry_exceeded_err: $x, out_of_seq_placed: $o}'
}
delta() { # BEFORE AFTER: AFTER - BEFORE, key by key
	jq -cn --argjson a "$1" --argjson b "$2" \
		'$b | with_entries(.value = (if .value == null or $a[.key] == null then null
		                              else .value - $a[.key] end))'
}

emit() { # STACK SETTING OK GOODPUT SECS COUNTERS
	jq -cn --arg k "$1" --arg s "$2" --argjson ok "$3" --argjson g "$4" --argjson t "$5" \
		--argjson c "$6" '{stack: $k, setting: $s, ok: $ok, goodput_MiBps: $g, secs: $t, counters: $c}' >>"$raw"
	log "$(printf '%-9s %-26s %-5s %10s MiB/s  %s' "$1" "$2" "$3" "$4" "$6")"
}

# rdma_run STACK SETTING SNS SDEV SGID CNS CDEV CGID ADDR REQDEV RESPDEV
rdma_run() {
	local stack=$1 setting=$2 sns=$3 sdev=$4 sgid=$5 cns=$6 cdev=$7 cgid=$8 addr=$9
	local reqdev=${10} respdev=${11} port=$((next_port++)) spid crc=0 src=0 c0 c1 t0 g=null ok=false
	c0=$(counters "$reqdev" "$respdev")
	t0=$SECONDS
	untrapped ns_exec "$sns" timeout $((secs + 90)) ib_write_bw -d "$sdev" -x "$sgid" -F -p "$port" \
		-s "$size" -D "$secs" >"$tmp/srv" 2>&1 &
	spid=$!
	if wait_for "listening $sns $port" 30; then
		ns_exec "$cns" timeout $((secs + 60)) ib_write_bw -d "$cdev" -x "$cgid" -F -p "$port" \
			-s "$size" -D "$secs" "$addr" >"$tmp/cli" 2>&1 || crc=$?
	else
		crc=99
	fi
	[[ $crc == 0 ]] || { sleep 1; kill "$spid" 2>/dev/null || true; }
	wait "$spid" || src=$?
	c1=$(counters "$reqdev" "$respdev")
	if [[ $crc == 0 && $src == 0 ]]; then
		# bytes iterations BW-peak BW-average MsgRate: the average, MB/s = MiB/s here (-F ... perftest
		# prints MB/sec as 2^20 bytes per second).
		g=$(awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { r = $4 } END { print r }' "$tmp/cli")
		[[ $g =~ ^[0-9]+(\.[0-9]+)?$ ]] && ok=true || g=null
	else
		log "  $stack '$setting': client $crc, server $src: $(grep -m2 -iE 'error|fail|exceed' "$tmp/cli" "$tmp/srv" | xargs)"
	fi
	emit "$stack" "$setting" "$ok" "$g" $((SECONDS - t0)) "$(delta "$c0" "$c1")"
}

tcp_run() {
	local setting=$1 port=$((next_port++)) ipid g=null ok=false t0=$SECONDS
	untrapped ns_exec "$nsa" timeout $((secs + 60)) iperf3 -s -1 -p "$port" >"$tmp/iperf-srv" 2>&1 &
	ipid=$!
	if wait_for "listening $nsa $port" 30 &&
		ns_exec "$nsb" timeout $((secs + 60)) iperf3 -c 192.0.2.1 -p "$port" -t "$secs" -J >"$tmp/iperf.json" 2>&1; then
		g=$(jq '.end.sum_received.bits_per_second / 8 / 1048576 | . * 100 | round / 100' "$tmp/iperf.json")
		ok=true
	else
		log "  tcp '$setting': iperf3 failed: $(tail -n 3 "$tmp/iperf.json" 2>/dev/null | xargs)"
	fi
	kill "$ipid" 2>/dev/null || true
	wait "$ipid" 2>/dev/null || true
	emit tcp "$setting" "$ok" "$g" $((SECONDS - t0)) '{}'
}

log "lossy bench: $(uname -r), $(nproc) CPUs, QEMU TCG; ib_write_bw $size B x 1 QP -D $secs, iperf3 -t $secs"
IFS=';' read -ra list <<<"$settings"
for setting in "${list[@]}"; do
	log "=== netem on both ends: $setting"
	netem "$setting"
	rdma_run sroce-gbn "$setting" "$nsa" lsroce-a "$gid_a" "$nsb" lsroce-b "$gid_b" 192.0.2.1 lsroce-b lsroce-a
	rdma_run rxe-gbn "$setting" "$nsr" lsroce-r "$gid_r" - lrxe0 "$gid_x" 203.0.113.2 lrxe0 lsroce-r
	tcp_run "$setting"
done
netem none
log "raw results: $(wc -l <"$raw") runs in $raw"
