#!/bin/bash
# timeout: 1200
#
# Wire compatibility with the kernel's own RoCE v2 implementation: rdma_rxe in
# the initial namespace on one end of a veth pair, sroce in namespace S on the
# other end, talking RC to each other. In both directions (rxe server / sroce
# client, then swapped):
#  - ibv_rc_pingpong -c at 1 B, 4 KiB, 64 KiB and 1 MiB (multi-packet
#    messages at path MTU 1024), and once with -m 4096 on a 9000-byte veth;
#  - perftest ib_send_bw, ib_write_bw, ib_read_bw (4 KiB and 64 KiB),
#    ib_atomic_bw (fetch-and-add and compare-and-swap), ib_send_lat.
# Every run must exit 0 on both sides with a sane report, and sroce must count
# no ICRC errors or malformed packets from rxe (its ICRC matches sroce's).
# Then the payload of every RC opcode, checked: tools/verbs-tests/rc_integrity
# with one QP on the sroce device and one on the rxe device, once per opcode
# (SEND, SEND_IMM, SEND_INV - SEND_WITH_INV of an rxe or sroce type 2 memory
# window -, WRITE, WRITE_IMM, READ, CMP_SWAP, FETCH_ADD) and address family
# (IPv4, IPv6): random sizes, SGE lists, inline and unsignaled WRs in both
# directions, every byte and guard byte of both buffers, every completion
# (immediate, invalidated R_Key) and every atomic's returned original value
# and target checked. Each opcode x family x direction (sroce requester ->
# rxe responder, rxe requester -> sroce responder) is a sub-case, as is each
# pingpong and perftest run (a perftest run whose figures went unchecked,
# its clock never calibrated, is a skipped one).
# rdma_rxe bug: 6.1's rxe writes the kernel's ib_wc_flags into its user
# CQEs, so a SEND_WITH_INV it received is flagged with IB_WC_WITH_INVALIDATE
# (1 << 2), which libibverbs reads as IBV_WC_IP_CSUM_OK, and never with
# IBV_WC_WITH_INV (1 << 3). rc_integrity --rxe-side b accepts that bit for
# the flag on the rxe side (and says so); the invalidated R_Key and the
# window's state are checked as on sroce.
# When a run fails it is repeated under dumpcap on the veth, and the pcap and
# the dissector's view of it are kept (in the VM's output directory when
# there is one: build/vm/runs/<run>/rc_rxe_interop-<tag>.pcap).
SR_TAG=ix
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_setup
require_cmd ibv_rc_pingpong ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat timeout
sr_have_provider || skip "the provider build/user/libsroce-rdmav<N>.so is not built"
sr_rxe_use || skip "rdma_rxe cannot be loaded (is UDP 4791 of the initial namespace taken?)"


tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
next_port=18800
ipr=10.77.0.1 ips=10.77.0.2 ip6r=fd77::1 ip6s=fd77::2
integrity=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_integrity
# Where a failing exchange's pcap goes: the VM's output share if mounted.
pcap_dir=${SROCE_PCAP_DIR:-/run/sroce-out}
[[ -d "$pcap_dir" && -w "$pcap_dir" ]] || pcap_dir=$tmp

sr_rxe_veth_topology "$ipr" "$ips" "$ip6r" "$ip6s"
gr=$(sr_gid_index "$rxe" "$ipr") gs=$(sr_gid_index "$dev" "$ips")
log "rxe $rxe on $vr ($ipr, GID #$gr) <-> sroce $dev on $vs in $ns ($ips, GID #$gs)"
sr_dmesg_mark

stat_of() { # stat_of COUNTER: sroce device's counter
	ns_exec "$ns" rdma statistic show link "$dev/1" -j | jq -r ".[0].$1"
}

# counters: both devices' non-zero counters, one line (a failed run's report)
counters() {
	local j
	j='.[0] | to_entries | map(select((.value | type) == "number" and .value != 0 and .key != "port" and .key != "ifindex") |
		"\(.key) \(.value)") | join(" ")'
	echo "sroce: $(ns_exec "$ns" rdma statistic show link "$dev/1" -j | jq -r "$j");" \
		"rxe: $(rdma statistic show link "$rxe/1" -j | jq -r "$j")"
}

# One side: "rxe" (initial namespace) or "sroce" (namespace S).
side_ns() { if [[ $1 == rxe ]]; then echo -; else echo "$ns"; fi; }
side_dev() { if [[ $1 == rxe ]]; then echo "$rxe"; else echo "$dev"; fi; }
side_ip() { if [[ $1 == rxe ]]; then echo "$ipr"; else echo "$ips"; fi; }

# exchange TAG SERVER CLIENT GIDFLAG VERIFY CMD...: CMD (-d/GIDFLAG/-p added)
# as server on side SERVER and client on side CLIENT; VERIFY FILE checks the
# client's output (prints what is wrong). Sets $why ("" if all went well).
exchange() {
	local tag=$1 sside=$2 cside=$3 gflag=$4 verify=$5
	shift 5
	local port=$((next_port++)) spid src=0 crc=0 sns cns sdev cdev sgid cgid
	sns=$(side_ns "$sside") cns=$(side_ns "$cside")
	sdev=$(side_dev "$sside") cdev=$(side_dev "$cside")
	sgid=$(sr_gid_index "$sdev" "$(side_ip "$sside")")
	cgid=$(sr_gid_index "$cdev" "$(side_ip "$cside")")
	why=''
	log "+ [$sside] $* -d $sdev $gflag $sgid -p $port"
	log "+ [$cside] $* -d $cdev $gflag $cgid -p $port $(side_ip "$sside")"
	sr_untrapped ns_exec "$sns" timeout 150 "$@" -d "$sdev" "$gflag" "$sgid" -p "$port" >"$tmp/$tag.srv" 2>&1 &
	spid=$!
	sr_server_listens "$spid" "$sns" "$port" || return 0
	ns_exec "$cns" timeout 120 "$@" -d "$cdev" "$gflag" "$cgid" -p "$port" "$(side_ip "$sside")" \
		>"$tmp/$tag.cli" 2>&1 || crc=$?
	[[ $crc == 0 ]] || wait_for "! kill -0 $spid" 5 || kill "$spid" 2>/dev/null || true
	wait "$spid" || src=$?
	[[ $crc == 0 ]] || why="client exited with $crc"
	[[ $src == 0 ]] || why="${why:+$why, }server exited with $src"
	[[ -n "$why" ]] || why=$("$verify" "$tmp/$tag.srv" "$tmp/$tag.cli")
}

# run TAG SERVER CLIENT GIDFLAG VERIFY CMD...: exchange, and on failure show
# everything and repeat it once under tshark.
run() {
	local tag=$1 t0=$SECONDS first_why pcap attempt
	log "--- $tag"
	# perftest converts cycles to time with a clock rate it samples at
	# start-up; under TCG on a busy host that can fail ("Correlation
	# coefficient r^2 < 0.9") and every figure prints as 0 although the
	# transfer completed. That is perftest's clock, not the wire: repeat
	# (up to 3 times) and if it never calibrates leave the figures
	# unchecked (both sides still had to exit 0 with no error).
	for attempt in 1 2 3; do
		exchange "$@"
		if [[ $why != "bad row"* ]] ||
			! grep -q 'Correlation coefficient' "$tmp/$tag.cli"; then
			break
		fi
		log "note: $tag: perftest could not calibrate its clock (attempt $attempt)"
		why="CLOCK"
	done
	if [[ $why == CLOCK ]]; then
		log "$tag ($((SECONDS - t0))s): both sides exited 0, but perftest's clock never calibrated"
		subtest_skip "$tag" "figures unchecked: perftest's clock never calibrated"
		return 0
	fi
	if [[ -z "$why" ]]; then
		log "ok: $tag ($((SECONDS - t0))s): $(summary "$tmp/$tag.cli")"
		subtest_ok "$tag"
		return 0
	fi
	first_why=$why
	sr_case_failed "$tag" "$why" "$tmp/$tag"
	log "  counters: $(counters)"
	sr_capture_tools || return 0
	pcap=$pcap_dir/rc_rxe_interop-$tag.pcap
	log "  repeating $tag under dumpcap -i $vr -> $pcap"
	sr_capture_start - "$vr" "$pcap" || true
	exchange "$@"
	sleep 1
	sr_capture_stop
	log "  repeat: ${why:-passed this time (first failure: $first_why)}"
	log "  counters: $(counters)"
	sr_pcap_dissect "$pcap"
	log "  first RoCE packet from sroce ($ips), in full:"
	tshark -r "$pcap" -d udp.port==4791,infiniband -V -c 1 -Y "ip.src == $ips" 2>&1 |
		head -n 120 | sed 's/^/  pcap| /'
	return 0
}

# --- checks of the outputs ---------------------------------------------------------
pp_ok() { # ibv_rc_pingpong: both sides' "bytes in" line; no invalid data
	local f
	for f in "$@"; do
		grep -qi 'invalid data' "$f" && { echo "${f##*.}: $(grep -i 'invalid data' "$f" | head -n 2 | xargs)"; return; }
		grep -qE '^[0-9]+ bytes in [0-9.]+ seconds' "$f" || { echo "${f##*.}: no 'bytes in' line"; return; }
	done
	local want=$((2 * pp_size * pp_iters)) got
	got=$(awk '/ bytes in / { print $1 }' "$2")
	[[ $got == "$want" ]] || echo "client: $got bytes, want $want"
	return 0
}
bw_ok() { # perftest bw: a result row with positive average BW
	awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ && NF >= 5 { n++; if (!($4 > 0)) bad = $0 }
		END { if (!n) print "no result row"; else if (bad != "") print "bad row: " bad }' "$2"
}
lat_ok() { # perftest lat: a result row with positive t_avg
	awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ && NF >= 6 { n++; if (!($6 > 0)) bad = $0 }
		END { if (!n) print "no result row"; else if (bad != "") print "bad row: " bad }' "$2"
}
summary() {
	local l
	l=$({ grep -E ' bytes in |iters in' "$1" || true; } | sed 's/.*= //' | xargs)
	[[ -n "$l" ]] || l=$(awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/' "$1" | xargs)
	echo "$l"
}

pp_size=0 pp_iters=0
for dir in "rxe sroce" "sroce rxe"; do
	read -r s c <<<"$dir"
	log "=== $s server, $c client"
	for sz in 1 4096 65536 1048576; do
		pp_size=$sz pp_iters=100
		((sz < 65536)) || pp_iters=10
		run "pp-$s-$sz" "$s" "$c" -g pp_ok ibv_rc_pingpong -c -s "$sz" -n "$pp_iters"
	done
	pp_size=4096 pp_iters=100
	run "pp-events-$s" "$s" "$c" -g pp_ok ibv_rc_pingpong -c -e -s 4096 -n 100
	for sz in 4096 65536; do
		n=100
		((sz < 65536)) || n=20
		run "send_bw-$s-$sz" "$s" "$c" -x bw_ok ib_send_bw -F -s "$sz" -n "$n"
		run "write_bw-$s-$sz" "$s" "$c" -x bw_ok ib_write_bw -F -s "$sz" -n "$n"
		run "read_bw-$s-$sz" "$s" "$c" -x bw_ok ib_read_bw -F -s "$sz" -n "$n"
	done
	run "atomic_bw-fadd-$s" "$s" "$c" -x bw_ok ib_atomic_bw -F -A FETCH_AND_ADD -n 100
	run "atomic_bw-cswap-$s" "$s" "$c" -x bw_ok ib_atomic_bw -F -A CMP_AND_SWAP -n 100
	run "send_lat-$s" "$s" "$c" -x lat_ok ib_send_lat -F -s 64 -n 100
done

log "=== path MTU 4096 (veth MTU 9000)"
check ip link set "$vr" mtu 9000
check ip -n "$ns" link set "$vs" mtu 9000
for dir in "rxe sroce" "sroce rxe"; do
	read -r s c <<<"$dir"
	pp_size=65536 pp_iters=10
	run "pp-mtu4096-$s" "$s" "$c" -g pp_ok ibv_rc_pingpong -c -m 4096 -s 65536 -n 10
done

check ip link set "$vr" mtu 1500
check ip -n "$ns" link set "$vs" mtu 1500

# --- every RC opcode, the payload checked -------------------------------------------
# One rc_integrity run per opcode and family: A is the sroce device, B the
# rxe one; its TAP lines "OP sroce->rxe" (sroce requests, rxe responds) and
# "OP rxe->sroce" are the sub-cases.
ops=(SEND SEND_IMM SEND_INV WRITE WRITE_IMM READ CMP_SWAP FETCH_ADD)
if [[ ! -x $integrity ]]; then
	for fam in 4 6; do
		for op in "${ops[@]}"; do
			for d in "sroce->rxe" "rxe->sroce"; do
				subtest_skip "$op $d, IPv$fam" "$integrity is not built (make verbs-tests)"
			done
		done
	done
else
	sr_wait_gid "$rxe" "$ip6r"
	sr_wait_gid "$dev" "$ip6s"
	# Neighbours resolved before the QPs need them.
	for a in "$ips" "$ip6s"; do wait_for "sr_ping - $a" 10 || fail "no ping from $rxe's side to $a"; done
	for a in "$ipr" "$ip6r"; do wait_for "sr_ping $ns $a" 10 || fail "no ping from $ns to $a"; done
	seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}
	log "=== every RC opcode between sroce ($dev) and rdma_rxe ($rxe), payload checked (seed base $seed)"
	k=0
	for fam in 4 6; do
		famarg=()
		[[ $fam == 4 ]] || famarg=(--ipv6)
		for op in "${ops[@]}"; do
			k=$((k + 1))
			log "--- $op, IPv$fam"
			log "+ rc_integrity --dev-a $dev --dev-b $rxe ${famarg[*]} --ops $op --seed $((seed + k))"
			rc=0
			timeout 200 "$integrity" --dev-a "$dev" --dev-b "$rxe" "${famarg[@]}" --ops "$op" \
				--seed $((seed + k)) --iters 40 --depth 8 --max-size 64K --timeout 60 \
				--tap --tap-names sroce,rxe --rxe-side b >"$tmp/ri.$op.$fam" 2>&1 || rc=$?
			sed 's/^/  | /' "$tmp/ri.$op.$fam"
			sed -nE "s/^((not )?ok - [A-Z_]+ [a-z]+->[a-z]+)( # .*)?\$/\1, IPv$fam\3/p" "$tmp/ri.$op.$fam" \
				>"$tmp/ri.tap"
			grep -E '^not ok - rc_integrity' "$tmp/ri.$op.$fam" | sed "s/^not ok - rc_integrity/not ok - $op, IPv$fam/" \
				>>"$tmp/ri.tap" || true
			[[ $rc == 0 ]] || failures=$((failures + 1))
			subtests_from_tap "$tmp/ri.tap" rc_integrity "$rc"
		done
	done
fi

icrc=$(stat_of rcvd_icrc_err) malformed=$(stat_of rcvd_malformed)
rx=$(stat_of rcvd_pkts) tx=$(stat_of sent_pkts)
log "sroce $dev counters: sent_pkts $tx rcvd_pkts $rx rcvd_icrc_err $icrc rcvd_malformed $malformed"
if [[ $icrc != 0 || $malformed != 0 ]]; then
	failures=$((failures + 1))
	subtest_fail "no ICRC error or malformed packet from rxe" "sroce counted $icrc ICRC errors and $malformed malformed packets"
else
	subtest_ok "no ICRC error or malformed packet from rxe"
fi
if sr_dmesg_since | grep -qiE 'sroce|rxe'; then
	log "kernel log lines about sroce/rxe during the test:"
	sr_dmesg_since | grep -iE 'sroce|rxe' | tail -n 20 | sed 's/^/  dmesg| /'
fi
[[ $failures == 0 ]] || fail "$failures rxe<->sroce check(s) failed (see NOT OK above)"
log "sroce and rdma_rxe interoperate"
