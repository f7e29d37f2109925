#!/bin/bash
# `make demo`, run inside the guest by tools/vm/run: load sroce, put two
# network namespaces on a veth pair, create one sroce device in each, and
# show what an RDMA user sees. Traffic between them is added as the data
# path lands.
set -euo pipefail
ROOT=${SROCE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
export RDMAV_DRIVERS=$ROOT/build/user/libsroce

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
in_ns() { local ns=$1; shift; printf '\n\033[1m[%s]$ %s\033[0m\n' "$ns" "$*"; ip netns exec "$ns" "$@"; }

modprobe -a ib_uverbs udp_tunnel ip6_udp_tunnel
step insmod "$ROOT/kernel/sroce.ko"

ip netns add demo-a
ip netns add demo-b
trap 'ip netns del demo-a 2>/dev/null; ip netns del demo-b 2>/dev/null; rmmod sroce 2>/dev/null' EXIT
ip link add veth-a netns demo-a type veth peer name veth-b netns demo-b
ip -n demo-a addr add 192.0.2.1/24 dev veth-a
ip -n demo-b addr add 192.0.2.2/24 dev veth-b
ip -n demo-a addr add 2001:db8::1/64 dev veth-a nodad
ip -n demo-b addr add 2001:db8::2/64 dev veth-b nodad
ip -n demo-a link set veth-a up
ip -n demo-b link set veth-b up

in_ns demo-a rdma link add sroce0 type sroce netdev veth-a
in_ns demo-b rdma link add sroce1 type sroce netdev veth-b
step rdma link show
step ibv_devices
in_ns demo-a ibv_devinfo -v -d sroce0
in_ns demo-a ss -uln
echo
echo "sroce: two RoCEv2 devices up on a veth pair between namespaces demo-a and demo-b."
echo "Now real traffic between them:"
"$ROOT/tools/demo-traffic.sh"
