#!/bin/bash
# RDMA traffic for `make demo`: run inside the guest by tools/demo.sh once it
# has created sroce0 (netns demo-a, veth-a 192.0.2.1) and sroce1 (netns
# demo-b, veth-b 192.0.2.2). Runs, between the two namespaces:
#   ibv_rc_pingpong -c   (RC SEND/RECV ping-pong, received data checked)
#   ib_write_bw          (RDMA WRITE bandwidth)
#   ib_send_lat          (SEND latency)
# and shows their results and the devices' packet counters. Servers run in
# demo-a, clients in demo-b and reach them over TCP at 192.0.2.1.
# The guest is QEMU TCG: the figures show that it works, not how fast.
set -euo pipefail
ROOT=${SROCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
export RDMAV_DRIVERS=${RDMAV_DRIVERS:-$ROOT/build/user/libsroce}

NS_A=demo-a NS_B=demo-b DEV_A=sroce0 DEV_B=sroce1 IP_A=192.0.2.1 IP_B=192.0.2.2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
die() { printf '\033[1;31mdemo-traffic: %s\033[0m\n' "$*" >&2; exit 1; }

# gid_index DEV IPV4: DEV port 1's RoCE v2 GID index for IPV4.
gid_index() {
	local want f idx i
	local -a o
	IFS=. read -ra o <<<"$2"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}")
	for ((i = 0; i < 50; i++)); do # the GID shows up a moment after the address
		for f in "/sys/class/infiniband/$1"/ports/1/gids/*; do
			[[ "$(cat "$f" 2>/dev/null)" == "$want" ]] || continue
			idx=${f##*/}
			[[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$idx" 2>/dev/null)" == "RoCE v2" ]] || continue
			echo "$idx"
			return 0
		done
		sleep 0.2
	done
	die "$1 has no RoCE v2 GID for $2"
}

# pair TITLE GIDFLAG FILTER CMD...: CMD as the server in demo-a and as the
# client in demo-b (GIDFLAG: the tool's GID index option); shows both command
# lines and the client's output lines that match the ERE FILTER.
pair() {
	local title=$1 gflag=$2 filter=$3 port i spid rc=0 src=0
	shift 3
	port=$((18515 + RANDOM % 1000))
	bold "== $title"
	printf '\033[1m[%s]$ %s\033[0m   (server)\n' "$NS_A" "$* -d $DEV_A $gflag $GID_A -p $port"
	printf '\033[1m[%s]$ %s\033[0m   (client)\n' "$NS_B" "$* -d $DEV_B $gflag $GID_B -p $port $IP_A"
	ip netns exec "$NS_A" timeout 120 "$@" -d "$DEV_A" "$gflag" "$GID_A" -p "$port" >"$tmp/srv" 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do
		ip netns exec "$NS_A" ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.2
	done
	ip netns exec "$NS_B" timeout 100 "$@" -d "$DEV_B" "$gflag" "$GID_B" -p "$port" "$IP_A" >"$tmp/cli" 2>&1 || rc=$?
	[[ $rc == 0 ]] || kill "$spid" 2>/dev/null || true
	wait "$spid" || src=$?
	[[ $rc != 0 ]] || rc=$src
	if [[ $rc != 0 ]]; then
		sed 's/^/  server| /' "$tmp/srv"
		sed 's/^/  client| /' "$tmp/cli"
		die "$title failed (exit $rc)"
	fi
	grep -E "$filter" "$tmp/cli" | sed 's/^/  /' || true
	if grep -qi 'invalid data' "$tmp/srv"; then
		die "the server found invalid data: $(grep -i 'invalid data' "$tmp/srv" | head -n 3)"
	fi
}

counters() { # counters NS DEV: its packet and byte counters, one line
	ip netns exec "$1" rdma statistic show link "$2/1" -j |
		jq -r '.[0] | "sent_pkts \(.sent_pkts)  rcvd_pkts \(.rcvd_pkts)  sent_bytes \(.sent_bytes)  rcvd_bytes \(.rcvd_bytes)  rcvd_icrc_err \(.rcvd_icrc_err)"'
}

GID_A=$(gid_index "$DEV_A" "$IP_A")
GID_B=$(gid_index "$DEV_B" "$IP_B")
bold "RC traffic between $DEV_A ($NS_A, $IP_A, GID index $GID_A) and $DEV_B ($NS_B, $IP_B, GID index $GID_B)"
printf '(QEMU TCG guest: the numbers only show that it works, not how fast it is.)\n'

pp='address|bytes in|iters in' perf='#bytes|^ *[0-9]+ +[0-9]+ '
pair "ibv_rc_pingpong: 100 round trips of 4 KiB, data checked (-c)" -g "$pp" \
	ibv_rc_pingpong -c -s 4096 -n 100
pair "ibv_rc_pingpong: 20 round trips of 64 KiB (64 packets each way)" -g "$pp" \
	ibv_rc_pingpong -c -s 65536 -n 20
pair "ib_write_bw: 200 RDMA WRITEs of 64 KiB" -x "$perf" ib_write_bw -F -s 65536 -n 200
pair "ib_read_bw: 200 RDMA READs of 64 KiB" -x "$perf" ib_read_bw -F -s 65536 -n 200
pair "ib_send_lat: 200 SENDs of 2 bytes, ping-pong" -x "$perf" ib_send_lat -F -s 2 -n 200

bold "== port counters (rdma statistic show link)"
printf '  %s: %s\n' "$DEV_A" "$(counters "$NS_A" "$DEV_A")"
printf '  %s: %s\n' "$DEV_B" "$(counters "$NS_B" "$DEV_B")"
echo
echo "sroce: RC SEND/RECV, RDMA WRITE and RDMA READ between two namespaces."
