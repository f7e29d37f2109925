# shellcheck shell=bash
# Helpers of the two-guest lane, sourced in both guests: by lane.sh in guest
# A, and in front of every job it runs in guest B (tools/vm/peer.sh's
# PEER_PREAMBLE). Functions only; no "set -e".

export SROCE_TEST_NAME=${SROCE_TEST_NAME:-two_guests}
# shellcheck source=selftests/lib_sroce.sh
source "$SROCE_ROOT/selftests/lib_sroce.sh"
# lib.sh ends a test at the first failing command; here every step is
# checked and reported by the lane.
set +eE
trap - ERR
export RDMAV_DRIVERS=$SROCE_ROOT/build/user/libsroce
export TG_BIN=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}

# tg_net ADDR4 ADDR6: eth0 (the virtio NIC on the link) up at MTU 9000 with
# the two addresses, sroce loaded; prints the NIC's driver and offloads.
tg_net() {
	modprobe -a ib_core ib_uverbs udp_tunnel ip6_udp_tunnel sch_netem || return 1
	[[ -d /sys/module/sroce ]] || insmod "$(sroce_module_path)" || return 1
	ip link set eth0 mtu 9000 up || return 1
	# A plain FIFO: fq_codel (the default) drops or marks packets that sit
	# in the queue for 5 ms, which a guest starved of CPU under TCG can
	# reach on a link nothing else impairs.
	tc qdisc replace dev eth0 root pfifo limit 10000 || return 1
	ip addr add "$1/24" dev eth0 || return 1
	ip addr add "$2/64" dev eth0 nodad || return 1
	echo "$(</proc/sys/kernel/hostname) eth0: driver $(basename "$(readlink /sys/class/net/eth0/device/driver)")," \
		"mtu $(</sys/class/net/eth0/mtu), $(ip -br link show eth0 | awk '{print $2, $3}')"
	ethtool -k eth0 | grep -E '^(rx-checksumming|tx-checksumming|scatter-gather|generic-receive-offload|generic-segmentation-offload|tcp-segmentation-offload):' |
		tr -s ' \t' ' ' | paste -sd ';'
	# Frames of more than a page need mergeable receive buffers: they arrive
	# in page fragments (non-linear skbs). No offload can be negotiated:
	# QEMU's stream netdev has no virtio-net header, so checksums are
	# computed and checked in software.
	local feat
	feat=$(</sys/class/net/eth0/device/features)
	echo "virtio-net features $feat: mergeable rx buffers (bit 15) ${feat:15:1}," \
		"guest csum (1) ${feat:1:1}, guest TSO4 (7) ${feat:7:1}, MTU (3) ${feat:3:1}"
	return 0
}

# tg_neigh ADDR4 ADDR6 MAC: the peer's addresses as permanent neighbours on
# eth0 (no ARP or neighbour discovery to lose under netem).
tg_neigh() {
	ip neigh replace "$1" lladdr "$3" dev eth0 nud permanent &&
		ip neigh replace "$2" lladdr "$3" dev eth0 nud permanent
}

# tg_dev_up TYPE ADDR4 ADDR6: an RDMA device of TYPE (sroce or rxe) named
# TYPE0 on eth0, with RoCE v2 GIDs for both addresses; the other type's
# device gone (rdma_rxe unloaded: on 6.1 it holds UDP 4791 of the initial
# namespace while loaded). Prints "INDEX4 INDEX6" last.
tg_dev_up() {
	local type=$1 i4='' i6='' t0=$SECONDS
	if [[ $type == sroce ]]; then
		rdma link delete rxe0 2>/dev/null
		if [[ -d /sys/module/rdma_rxe ]]; then
			modprobe -r rdma_rxe || return 1
		fi
		[[ -d /sys/module/sroce ]] || insmod "$(sroce_module_path)" || return 1
	else
		rdma link delete sroce0 2>/dev/null
		modprobe rdma_rxe || return 1
	fi
	[[ -d /sys/class/infiniband/${type}0 ]] || rdma link add "${type}0" type "$type" netdev eth0 || return 1
	[[ -p /run/sroce-tg-idle ]] || mkfifo /run/sroce-tg-idle
	until sr_gid_index -v i4 "${type}0" "$2" && sr_gid_index -v i6 "${type}0" "$3"; do
		((SECONDS - t0 < 20)) || { echo "${type}0: no RoCE v2 GIDs for $2 and $3"; return 1; }
		read -rt 0.1 <>/run/sroce-tg-idle
	done
	echo "$(</proc/sys/kernel/hostname): ${type}0 on eth0: GID $i4 = $2, GID $i6 = $3"
	echo "$i4 $i6"
}

# tg_tcp_listening PORT: a TCP socket listens on PORT (bash builtins only:
# the wait loops below must not take the CPU the server needs to start).
tg_tcp_listening() {
	local hex f local_addr st rest
	printf -v hex ':%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		while read -r _ local_addr _ st rest; do
			[[ $st == 0A && $local_addr == *"$hex" ]] && return 0
		done <"$f"
	done
	return 1
}

# tg_wait_ready KIND PORT PID [SECS]: wait until the server PID listens:
# KIND tcp (perftest, pingpong: TCP PORT), cm (an RDMA CM listener) or none.
tg_wait_ready() {
	local kind=$1 port=$2 pid=$3 limit=${4:-30} t0=$SECONDS
	[[ -p /run/sroce-tg-idle ]] || mkfifo /run/sroce-tg-idle
	while kill -0 "$pid" 2>/dev/null; do
		case $kind in
		tcp) tg_tcp_listening "$port" && return 0 ;;
		cm) rdma resource show cm_id 2>/dev/null | grep -q LISTEN && return 0 ;;
		*) return 0 ;;
		esac
		((SECONDS - t0 < limit)) || return 1
		read -rt 0.1 <>/run/sroce-tg-idle
	done
	return 1
}

# tg_counters: "NAME VALUE" lines: the hw counters of this guest's RDMA
# device (sroce0, if any), eth0's statistics and virtio queue counters, the
# qdisc's drops on eth0, and UDP's checksum errors. (Mostly builtins: this
# runs before and after every rc_remote run.)
tg_counters() {
	local f v k rest
	local -a keys vals
	if [[ -d /sys/class/infiniband/sroce0 ]]; then
		for f in /sys/class/infiniband/sroce0/ports/1/hw_counters/*; do
			read -r v <"$f" && echo "sroce.${f##*/} $v"
		done
	fi
	for f in rx_packets tx_packets rx_bytes tx_bytes rx_dropped rx_errors; do
		read -r v <"/sys/class/net/eth0/statistics/$f" && echo "eth0.$f $v"
	done
	ethtool -S eth0 | while read -r k v rest; do
		[[ $k == [rt]x_queue_0_*: || $k == [rt]x0_kicks: ]] && echo "ethtool.${k%:} $v"
	done
	tc -s qdisc show dev eth0 | while read -r k v rest; do
		[[ $k == Sent ]] || continue
		read -ra f <<<"$rest"
		echo "qdisc.dropped ${f[4]%,}"
		break
	done
	while read -ra f; do
		[[ ${f[0]} == Udp: ]] || continue
		if [[ ${f[1]} == InDatagrams ]]; then
			keys=("${f[@]}")
		else
			vals=("${f[@]}")
		fi
	done </proc/net/snmp
	for k in "${!keys[@]}"; do
		[[ ${keys[k]} != InCsumErrors ]] || echo "udp.InCsumErrors ${vals[k]}"
	done
	while read -r k v; do
		[[ $k != Udp6InCsumErrors ]] || echo "udp6.InCsumErrors $v"
	done </proc/net/snmp6
}

# tg_netem 'NETEM ARGS' | '': impair eth0's egress (or back to pfifo).
tg_netem() {
	if [[ -z $1 ]]; then
		tc qdisc replace dev eth0 root pfifo limit 10000
		return
	fi
	# shellcheck disable=SC2086 # the netem arguments are words
	tc qdisc replace dev eth0 root netem limit 10000 $1
}

# Frames received through the NIC's GRO entry point, by number of page
# fragments: a histogram trigger on net:napi_gro_receive_entry (no ring
# buffer, nothing lost).
TG_HIST=/sys/kernel/tracing/events/net/napi_gro_receive_entry
tg_hist_on() {
	[[ -d /sys/kernel/tracing/events ]] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	[[ -d $TG_HIST ]] || { echo "no $TG_HIST"; return 1; }
	echo 'hist:keys=nr_frags,ip_summed:vals=hitcount,len:sort=nr_frags' >"$TG_HIST/trigger"
}
# tg_hist: "nr_frags ip_summed frames bytes" lines.
tg_hist() {
	awk '/^\{ nr_frags:/ { gsub(/[{},:]/, " "); print $2, $4, $6, $8 }' "$TG_HIST/hist"
}
