#!/bin/bash
# The guest half of `make bench` (tools/bench/run.sh boots the VM and runs
# this in it; it is not meant to be run anywhere else).
#
# usage: tools/bench/guest.sh [--out DIR] [--quick]
#   --out DIR  where bench-raw.jsonl goes (default: /run/sroce-out, the
#              tools/vm/run output share, i.e. the host's --out directory)
#   --quick    shorter runs (for trying the script out)
#
# Runs one fixed perftest set on each topology below and iperf3 once, and
# writes one JSON object per measurement to DIR/bench-raw.jsonl:
#   {"topo", "stack", "test", "size", "qps", "bw_MiBps", "mpps"}   (bw tests)
#   {"topo", "stack", "test", "size", "t_avg_us", "t_typical_us"}  (lat tests)
#   {"topo", "stack", "test": "tcp_stream", "bw_MiBps"}            (iperf3)
#   {"topo", "stack", "test": "doorbells", "tool", "size", "msgs",
#    "doorbells"}                                           (sroce, -n runs)
# A figure is null when perftest could not produce it (see pt below).
#
# Topologies (the same names are used in the report):
#   sroce-veth   sroce0 in netns A <-> sroce1 in netns B over a veth pair
#   sroce-loop   one sroce device on a dummy netdev in netns L; client and
#                server both on it (packets go through the IP stack's
#                loopback to the device's own UDP socket)
#   rxe-loop     one rdma_rxe device on a veth end in the initial netns
#                (6.1's rxe only works there, so it cannot have a peer of its
#                own); client and server both on it (rxe short-cuts packets
#                to itself inside the driver)
#   tcp-veth     iperf3 TCP, netns A -> B over the same veth pair as sroce-veth
#
# TCG (QEMU without KVM) makes every figure slow and noisy: only ratios
# between stacks measured in the same boot mean anything.

# shellcheck disable=SC2016  # jq programs: the $names are jq's
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# lib_sroce.sh brings lib.sh: set -eE, cleanups (defer), namespaces, devices.
SROCE_TEST_NAME=bench
# shellcheck source=selftests/lib_sroce.sh
source "$here/../../selftests/lib_sroce.sh"
# shellcheck source=tools/bench/lib_bench.sh
source "$here/lib_bench.sh"

out=/run/sroce-out quick=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--out) out=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	*) fail "unknown argument $1" ;;
	esac
done

# Duration-mode bandwidth runs: -D secs with -f secs of margin at either end
# not measured. Latency runs: a fixed count.
dur=6 margin=1 lat_iters=1000 iperf_secs=8
[[ $quick == 0 ]] || dur=3 lat_iters=200 iperf_secs=3

next_port=19000
bench_start "$out" bench-raw.jsonl tools/bench/run.sh \
	ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_write_lat iperf3 jq

# --- topologies ---------------------------------------------------------------------
nsa=bench-a nsb=bench-b
ns_create "$nsa"
ns_create "$nsb"
veth_pair "$nsa" bveth-a "$nsb" bveth-b
check ip -n "$nsa" addr add 192.0.2.1/24 dev bveth-a
check ip -n "$nsb" addr add 192.0.2.2/24 dev bveth-b
sr_link_add "$nsa" bsroce0 bveth-a
sr_link_add "$nsb" bsroce1 bveth-b
bench_loop_topologies bench b

# topo NAME: set the server/client namespaces, devices, GIDs and address.
topo() {
	case "$1" in
	sroce-veth)
		sns=$nsa sdev=bsroce0 sgid=$(sr_gid_of bsroce0 192.0.2.1)
		cns=$nsb cdev=bsroce1 cgid=$(sr_gid_of bsroce1 192.0.2.2) addr=192.0.2.1 ;;
	sroce-loop)
		sns=$nsl sdev=bsroce-l sgid=$(sr_gid_of bsroce-l 198.51.100.1)
		cns=$sns cdev=$sdev cgid=$sgid addr=127.0.0.1 ;;
	rxe-loop)
		sns=- sdev=brxe0 sgid=$(sr_gid_of brxe0 203.0.113.1)
		cns=- cdev=$sdev cgid=$sgid addr=127.0.0.1 ;;
	esac
}

# untrapped CMD...: for servers started with &: a failing server is
# reported by whoever waits for it, not by lib.sh's ERR trap in its subshell.
untrapped() {
	trap - ERR
	"$@"
}

listening() { ns_exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# pt_run TOOL ARGS...: one perftest exchange on the current topology; the
# client's output in $tmp/cli. Returns non-zero if either side failed.
pt_run() {
	local tool=$1 port=$((next_port++)) spid crc=0 src=0
	shift
	untrapped ns_exec "$sns" timeout 300 "$tool" -d "$sdev" -x "$sgid" -F -p "$port" "$@" >"$tmp/srv" 2>&1 &
	spid=$!
	if ! wait_for "listening $sns $port" 30; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		log "  $tool: the server did not listen: $(tail -n 3 "$tmp/srv")"
		return 1
	fi
	ns_exec "$cns" timeout 240 "$tool" -d "$cdev" -x "$cgid" -F -p "$port" "$@" "$addr" >"$tmp/cli" 2>&1 || crc=$?
	[[ $crc == 0 ]] || { sleep 1; kill "$spid" 2>/dev/null || true; }
	wait "$spid" || src=$?
	[[ $crc == 0 && $src == 0 ]] && return 0
	log "  $tool $* failed: client $crc, server $src"
	sed 's/^/  client| /' "$tmp/cli" | tail -n 15
	sed 's/^/  server| /' "$tmp/srv" | tail -n 5
	return 1
}

# The last row of perftest's result table.
row() { awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { r = $0 } END { print r }' "$tmp/cli"; }

num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v x="$1" 'BEGIN { exit !(x > 0) }'; }

emit() { jq -cn "$@" >>"$raw"; }

# pt KIND NAME TOOL SIZE [ARGS...]: measure and record. perftest prints zeros
# when its start-up CPU clock calibration fails (common under TCG: "Correlation
# coefficient r^2 < 0.9"); such runs are repeated, up to 3 times, else null.
pt() {
	local kind=$1 name=$2 tool=$3 size=$4 attempt r a b qps=1 i
	shift 4
	local -a args=("$@")
	for ((i = 0; i < ${#args[@]}; i++)); do [[ ${args[i]} != -q ]] || qps=${args[i + 1]}; done
	for attempt in 1 2 3; do
		a='' b=''
		if [[ $kind == bw ]]; then
			pt_run "$tool" -s "$size" -D "$dur" -f "$margin" "${args[@]}" || break
			# bytes iterations BW-peak BW-average MsgRate
			read -r _ _ _ a b <<<"$(row)"
		else
			pt_run "$tool" -s "$size" -n "$lat_iters" "${args[@]}" || break
			# bytes iterations t_min t_max t_typical t_avg ...
			r=$(row)
			a=$(awk '{ print $6 }' <<<"$r") b=$(awk '{ print $5 }' <<<"$r")
		fi
		num "$a" && num "$b" && break
		log "  $name $size: no figures (attempt $attempt): $(grep -m1 'Correlation' "$tmp/cli" || echo "row '$(row)'")"
		a='' b=''
	done
	num "$a" || a=null
	num "$b" || b=null
	if [[ $kind == bw ]]; then
		log "$(printf '%-11s %-12s %8s B  q%-2s  %10s MiB/s  %10s Mpps' "$cur" "$name" "$size" "$qps" "$a" "$b")"
		emit --arg t "$cur" --arg n "$name" --argjson s "$size" --argjson q "$qps" \
			--argjson bw "$a" --argjson mr "$b" \
			'{topo: $t, stack: ($t | split("-")[0]), test: $n, size: $s, qps: $q, bw_MiBps: $bw, mpps: $mr}'
	else
		log "$(printf '%-11s %-12s %8s B       %10s us avg  %10s us typical' "$cur" "$name" "$size" "$a" "$b")"
		emit --arg t "$cur" --arg n "$name" --argjson s "$size" --argjson avg "$a" --argjson typ "$b" \
			'{topo: $t, stack: ($t | split("-")[0]), test: $n, size: $s, t_avg_us: $avg, t_typical_us: $typ}'
	fi
}

log "sroce bench: $(uname -r), $(nproc) CPUs, QEMU TCG; bw runs -D $dur -f $margin, lat runs -n $lat_iters"
for cur in sroce-veth sroce-loop rxe-loop; do
	topo "$cur"
	log "=== $cur: server $sdev (GID $sgid, ns $sns), client $cdev (GID $cgid, ns $cns)"
	for s in 64 4096 65536; do
		pt bw write_bw ib_write_bw "$s"
		pt bw read_bw ib_read_bw "$s"
		pt bw send_bw ib_send_bw "$s"
	done
	pt lat send_lat ib_send_lat 2
	pt lat write_lat ib_write_lat 2
	# Message rate: tiny writes from several QPs with deep send queues.
	pt bw msg_rate ib_write_bw 2 -q 4 -t 256
done

# Send doorbells that entered the kernel per message: the client device's
# sq_doorbells over a run of a known number of messages (-n). The provider
# leaves the doorbell out while the requester runs or is queued
# (architecture.rst, "Rings and trust"); without that, one per message.
cur=sroce-veth
topo "$cur"
log "=== doorbells: $cur, client $cdev, -n runs"
for r in "ib_write_bw 65536 2000" "ib_write_bw 64 20000" "ib_send_bw 4096 5000" "ib_read_bw 65536 1000"; do
	read -r tool s n <<<"$r"
	db0=$(sr_hwc "$cdev" sq_doorbells) db=null
	if pt_run "$tool" -s "$s" -n "$n"; then
		db=$(($(sr_hwc "$cdev" sq_doorbells) - db0))
	fi
	log "$(printf '%-11s %-12s %8s B  %6s messages  %6s doorbells' "$cur" "$tool" "$s" "$n" "$db")"
	emit --arg t "$cur" --arg tool "$tool" --argjson s "$s" --argjson n "$n" --argjson db "$db" \
		'{topo: $t, stack: "sroce", test: "doorbells", tool: $tool, size: $s, msgs: $n, doorbells: $db}'
done

log "=== tcp-veth: iperf3 TCP, $nsa -> $nsb over the sroce-veth veth pair"
cur=tcp-veth
untrapped ns_exec "$nsb" timeout $((iperf_secs + 60)) iperf3 -s -1 -p 5201 >"$tmp/iperf-srv" 2>&1 &
ipid=$!
wait_for "listening $nsb 5201" 30 || fail "iperf3 server did not start"
bw=null
if ns_exec "$nsa" timeout $((iperf_secs + 60)) iperf3 -c 192.0.2.2 -p 5201 -t "$iperf_secs" -J >"$tmp/iperf.json" 2>&1; then
	bw=$(jq '.end.sum_received.bits_per_second / 8 / 1048576 | . * 100 | round / 100' "$tmp/iperf.json")
else
	log "iperf3 failed: $(tail -n 5 "$tmp/iperf.json")"
fi
wait "$ipid" || true
log "$(printf '%-11s %-12s %8s    %10s MiB/s' tcp-veth tcp_stream - "$bw")"
emit --argjson bw "$bw" '{topo: "tcp-veth", stack: "tcp", test: "tcp_stream", size: null, bw_MiBps: $bw}'

log "raw results: $(wc -l <"$raw") measurements in $raw"
