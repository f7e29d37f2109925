#!/bin/bash
# timeout: 900
#
# The port counters ("rdma statistic show link DEV/1") follow real traffic.
# Two sroce devices A and B in two namespaces on a veth pair (IPv4 GIDs, path
# MTU 1024), and one device L on a dummy netdev looping back to itself:
#  1. ibv_rc_pingpong -s 512 -n 200, A server, B client: 200 one-packet SENDs
#     each way. Per direction: sent_pkts(A) = rcvd_pkts(B) and the other way
#     round (nothing is lost on a veth); >= 200 packets, and at most two per
#     message (the SEND and its ACK) plus retransmissions and a small slack;
#     rcvd_bytes >= 200 * (512 + BTH + ICRC); sent_bytes(A) - rcvd_bytes(B) is
#     the same whole header per packet (0, 8, 20 or 28 bytes: whether each
#     side counts from the IP, UDP or BTH header is a convention, but the two
#     ends must be consistent).
#  2. ib_write_bw -s 65536 -n 20 (B writes to A): B sends >= 20 * 64 packets,
#     A receives them all, rcvd_bytes(A) >= 20 * 64 KiB.
#  3. ib_read_bw -s 65536 -n 20 (B reads from A): A sends >= 20 * 64 response
#     packets, rcvd_bytes(B) >= 20 * 64 KiB.
#  4. On L, ibv_rc_pingpong -s 512 -n 100: sent_pkts = rcvd_pkts >= 200.
# Throughout, rcvd_icrc_err and rcvd_malformed stay 0 (clean traffic).
#
# SROCE_RC_BACKEND=rxe runs only step 4 on an rdma_rxe device, packet counts
# only (rxe has no byte or ICRC counters): a check of this script.
SR_TAG=ct
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

backend=${SROCE_RC_BACKEND:-sroce}
[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss jq timeout ibv_rc_pingpong ib_write_bw ib_read_bw


tmp=$(mktemp -d)
defer rm -rf "$tmp"
next_port=18900
v4a=192.0.2.1 v4b=192.0.2.2 v4l=198.51.100.1
bth_icrc=16 # BTH (12) + ICRC (4): the least a RoCE v2 packet carries

if [[ $backend == sroce ]]; then
	sr_module_use
	sr_have_provider || skip "the provider build/user/libsroce-rdmav<N>.so is not built"
	sr_veth_topology "$v4a" "$v4b"
	deva=$da devb=$db
	nsl=${SR_ID}l dl=${SR_ID}dl devl=${SR_ID}sl
	ns_create "$nsl"
	sr_dummy "$nsl" "$dl"
	check ip -n "$nsl" addr add "$v4l/24" dev "$dl"
	sr_link_add "$nsl" "$devl" "$dl"
elif [[ $backend == rxe ]]; then
	sr_rxe_use || skip "rdma_rxe cannot be loaded"
	nsl=- rd=${SR_ID}rd devl=${SR_ID}rxe
	sr_rxe_dummy "$devl" "$rd" "$v4l/24"
else
	fail "SROCE_RC_BACKEND must be sroce or rxe, not '$backend'"
fi

# --- counters ---------------------------------------------------------------------

# snap NS DEV FILE: DEV's port counters, as one JSON object.
snap() {
	ns_exec "$1" rdma statistic show link "$2/1" -j | jq '.[0]' >"$3"
}

# settle NS DEV FILE: snap once the counters stopped moving (the last ACKs
# may still be on their way when the programs exit): the same over three
# reads 0.5 s apart (one unchanged read was the rule; a guest stalled for
# half a second would pass it with an ACK still on its way).
settle() {
	local i stable=0
	snap "$1" "$2" "$3"
	for ((i = 0; i < 40 && stable < 3; i++)); do
		sleep 0.5
		snap "$1" "$2" "$3.new"
		if cmp -s "$3" "$3.new"; then
			stable=$((stable + 1))
		else
			stable=0
		fi
		mv "$3.new" "$3"
	done
	((stable >= 3)) || fail "the counters of $2 were still moving after 20 s"
}

# d BEFORE AFTER NAME: how much counter NAME moved ("" if there is no such counter).
d() {
	jq -rn --slurpfile a "$1" --slurpfile b "$2" --arg n "$3" \
		'if ($b[0] | has($n)) then ($b[0][$n] - $a[0][$n]) else "" end'
}

expect() { # expect DESCRIPTION ARITHMETIC-CONDITION
	if (($2)); then
		log "ok: $1"
	else
		fail "$1: does not hold ($2)"
	fi
}

# clean BEFORE AFTER DEV: the error counters did not move.
clean() {
	local c v
	for c in rcvd_icrc_err rcvd_malformed; do
		v=$(d "$1" "$2" "$c")
		[[ -n "$v" ]] || continue
		expect "$3: $c +$v" "$v == 0"
	done
	# Not errors as such on a veth, but worth seeing.
	for c in rcvd_no_qp rcvd_bad_qp_state rcvd_seq_err seq_nak_sent duplicate_request \
		out_of_seq_request retransmitted_pkts retry_timeouts rnr_nak_sent rcvd_rnr_err send_err; do
		v=$(d "$1" "$2" "$c")
		[[ -z "$v" || "$v" == 0 ]] || log "note: $3: $c +$v"
	done
}

show() { # show BEFORE AFTER DEV
	log "$3: sent_pkts +$(d "$1" "$2" sent_pkts) rcvd_pkts +$(d "$1" "$2" rcvd_pkts)" \
		"sent_bytes +$(d "$1" "$2" sent_bytes) rcvd_bytes +$(d "$1" "$2" rcvd_bytes)"
}

# --- traffic ------------------------------------------------------------------------

# traffic SNS SDEV SGID CNS CDEV CGID ADDR CMD...: CMD as server and client.
traffic() {
	local sns=$1 sdev=$2 sgid=$3 cns=$4 cdev=$5 cgid=$6 addr=$7 gflag=-x spid crc=0 src=0
	shift 7
	local port=$((next_port++))
	[[ $1 != ibv_rc_pingpong ]] || gflag=-g
	log "+ [$sns] $* -d $sdev $gflag $sgid -p $port"
	log "+ [$cns] $* -d $cdev $gflag $cgid -p $port $addr"
	sr_untrapped ns_exec "$sns" timeout 150 "$@" -d "$sdev" "$gflag" "$sgid" -p "$port" >"$tmp/srv" 2>&1 &
	spid=$!
	wait_for "sr_listening $sns $port" 20 || fail "$1 server did not listen: $(cat "$tmp/srv")"
	ns_exec "$cns" timeout 120 "$@" -d "$cdev" "$gflag" "$cgid" -p "$port" "$addr" >"$tmp/cli" 2>&1 || crc=$?
	[[ $crc == 0 ]] || wait_for "! kill -0 $spid" 5 || kill "$spid" 2>/dev/null || true
	wait "$spid" || src=$?
	if [[ $crc != 0 || $src != 0 ]]; then
		sed 's/^/  server| /' "$tmp/srv"
		sed 's/^/  client| /' "$tmp/cli"
		sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
		fail "$1: client exited with $crc, server with $src"
	fi
}

# header_diff TXBYTES RXBYTES PKTS WHAT: the per-packet difference between what
# one end sent and the other received is one whole header size.
header_diff() {
	local diff=$(($1 - $2)) per
	(($3 > 0)) || fail "$4: no packets"
	((diff % $3 == 0)) || fail "$4: sent_bytes - rcvd_bytes = $diff is not a whole number per packet ($3 packets)"
	per=$((diff / $3))
	case $per in
	0 | 8 | 20 | 28) log "ok: $4: sent_bytes - rcvd_bytes = $per bytes per packet" ;;
	*) fail "$4: sent_bytes - rcvd_bytes = $per bytes per packet: not 0, 8 (UDP), 20 (IPv4) or 28 (both)" ;;
	esac
}

sr_dmesg_mark

# --- 4 (and the rxe check): the loopback device -----------------------------------------
gl=$(sr_gid_of "$devl" "$v4l")
subtest_begin "loopback device: ibv_rc_pingpong -s 512 -n 100"
settle "$nsl" "$devl" "$tmp/l0"
traffic "$nsl" "$devl" "$gl" "$nsl" "$devl" "$gl" 127.0.0.1 ibv_rc_pingpong -s 512 -n 100
settle "$nsl" "$devl" "$tmp/l1"
show "$tmp/l0" "$tmp/l1" "$devl"
tx=$(d "$tmp/l0" "$tmp/l1" sent_pkts) rx=$(d "$tmp/l0" "$tmp/l1" rcvd_pkts)
expect "$devl: sent_pkts +$tx = rcvd_pkts +$rx" "tx == rx"
expect "$devl: sent_pkts +$tx >= 200 messages" "tx >= 200"
retx=$(d "$tmp/l0" "$tmp/l1" retransmitted_pkts)
expect "$devl: sent_pkts +$tx <= 2 per message + ${retx:-0} retransmitted + 16" "tx <= 400 + ${retx:-0} + 16"
txb=$(d "$tmp/l0" "$tmp/l1" sent_bytes) rxb=$(d "$tmp/l0" "$tmp/l1" rcvd_bytes)
if [[ -n "$txb" && -n "$rxb" ]]; then
	expect "$devl: rcvd_bytes +$rxb >= 200 * (512 + $bth_icrc)" "rxb >= 200 * (512 + bth_icrc)"
	header_diff "$txb" "$rxb" "$tx" "$devl"
else
	log "note: $devl has no sent_bytes/rcvd_bytes counters"
fi
clean "$tmp/l0" "$tmp/l1" "$devl"

if [[ $backend == rxe ]]; then
	subtest_end
	log "rxe: loopback counter checks passed (pair checks need sroce)"
	exit 0
fi

# --- 1-3: the pair ----------------------------------------------------------------------
ga=$(sr_gid_of "$deva" "$v4a") gb=$(sr_gid_of "$devb" "$v4b")

# pair_snap N: snapshots of A and B, before (N=0) or after (N=1).
# pair_show: compare them (and set atx/arx/btx/brx, atxb/arxb/btxb/brxb).
pair_snap() {
	settle "$nsa" "$deva" "$tmp/a$1"
	settle "$nsb" "$devb" "$tmp/b$1"
}
pair_show() {
	show "$tmp/a0" "$tmp/a1" "$deva"
	show "$tmp/b0" "$tmp/b1" "$devb"
	atx=$(d "$tmp/a0" "$tmp/a1" sent_pkts) arx=$(d "$tmp/a0" "$tmp/a1" rcvd_pkts)
	btx=$(d "$tmp/b0" "$tmp/b1" sent_pkts) brx=$(d "$tmp/b0" "$tmp/b1" rcvd_pkts)
	atxb=$(d "$tmp/a0" "$tmp/a1" sent_bytes) arxb=$(d "$tmp/a0" "$tmp/a1" rcvd_bytes)
	btxb=$(d "$tmp/b0" "$tmp/b1" sent_bytes) brxb=$(d "$tmp/b0" "$tmp/b1" rcvd_bytes)
	expect "$deva sent_pkts +$atx = $devb rcvd_pkts +$brx" "atx == brx"
	expect "$devb sent_pkts +$btx = $deva rcvd_pkts +$arx" "btx == arx"
	clean "$tmp/a0" "$tmp/a1" "$deva"
	clean "$tmp/b0" "$tmp/b1" "$devb"
}
subtest_begin "two devices: ibv_rc_pingpong -s 512 -n 200"
pair_snap 0
traffic "$nsa" "$deva" "$ga" "$nsb" "$devb" "$gb" "$v4a" ibv_rc_pingpong -s 512 -n 200
pair_snap 1
pair_show
for side in a b; do
	if [[ $side == a ]]; then tx=$atx rx=$brx; else tx=$btx rx=$arx; fi
	retx=$(d "$tmp/${side}0" "$tmp/${side}1" retransmitted_pkts)
	expect "$side: sent_pkts +$tx >= 200 messages" "tx >= 200"
	expect "$side: sent_pkts +$tx <= 2 per message + ${retx:-0} retransmitted + 16" "tx <= 400 + ${retx:-0} + 16"
done
expect "$devb rcvd_bytes +$brxb >= 200 * (512 + $bth_icrc)" "brxb >= 200 * (512 + bth_icrc)"
expect "$deva rcvd_bytes +$arxb >= 200 * (512 + $bth_icrc)" "arxb >= 200 * (512 + bth_icrc)"
header_diff "$atxb" "$brxb" "$atx" "A->B"
header_diff "$btxb" "$arxb" "$btx" "B->A"

subtest_begin "two devices: ib_write_bw -s 65536 -n 20 (64 packets a message)"
pair_snap 0
traffic "$nsa" "$deva" "$ga" "$nsb" "$devb" "$gb" "$v4a" ib_write_bw -F -s 65536 -n 20 -m 1024
pair_snap 1
pair_show
expect "$devb sent_pkts +$btx >= 20 * 64" "btx >= 20 * 64"
expect "$deva rcvd_bytes +$arxb >= 20 * 65536" "arxb >= 20 * 65536"
header_diff "$btxb" "$arxb" "$btx" "B->A"

subtest_begin "two devices: ib_read_bw -s 65536 -n 20"
pair_snap 0
traffic "$nsa" "$deva" "$ga" "$nsb" "$devb" "$gb" "$v4a" ib_read_bw -F -s 65536 -n 20 -m 1024
pair_snap 1
pair_show
expect "$deva sent_pkts +$atx >= 20 * 64" "atx >= 20 * 64"
expect "$devb rcvd_bytes +$brxb >= 20 * 65536" "brxb >= 20 * 65536"
header_diff "$atxb" "$brxb" "$atx" "A->B"
subtest_end

if sr_dmesg_since | grep -qi sroce; then
	log "kernel log lines about sroce during the test:"
	sr_dmesg_since | grep -i sroce | tail -n 20 | sed 's/^/  dmesg| /'
fi
log "sroce counters follow the traffic"
