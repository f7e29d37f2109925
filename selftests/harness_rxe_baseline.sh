#!/bin/bash
# timeout: 180
#
# Harness/environment check, not a sroce test: proves the guest can run a
# real RoCE v2 workload with the kernel's own rdma_rxe, so that when a sroce
# test fails, the environment (modules, /dev/infiniband, rdma tool, libibverbs,
# veth, namespaces) is not the suspect.
#
# Topology: veth pair, one end in a namespace (just to keep the peer's carrier
# up), rxe on the init-namespace end - 6.1's rxe only works in the initial
# namespace. Client and server share the one rxe device (rxe loops packets
# with equal source and destination IP back in software).
# shellcheck source=selftests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_cmd rdma ibv_devices ibv_devinfo ibv_rc_pingpong
require_module rdma_rxe ib_uverbs

dev=rxe_t0 ns=rxe_peer addr=10.99.0.1 port=18599

ns_create "$ns"
veth_pair - rxe_v0 "$ns" rxe_v1
check ip addr add "$addr/24" dev rxe_v0
ns_exec "$ns" ip addr add 10.99.0.2/24 dev rxe_v1

subtest_begin "rdma_rxe device up, with a RoCE v2 GID"
check rdma link add "$dev" type rxe netdev rxe_v0
defer_quiet rdma link delete "$dev"

wait_for "ibv_devices | grep -qw $dev" 10 || fail "ibv_devices does not list $dev"
log "ibv_devices lists $dev"
ibv_devinfo -d "$dev" | grep -q 'link_layer:[[:space:]]*Ethernet' ||
	fail "$dev is not an Ethernet (RoCE) device: $(ibv_devinfo -d "$dev")"
wait_for "ibv_devinfo -d $dev | grep -q 'state:[[:space:]]*PORT_ACTIVE'" 10 ||
	fail "port 1 of $dev never became active"
# The GID for an address appears a moment after the address does.
wait_for "rdma_gid_index $dev $addr" 10 || fail "no RoCE v2 GID for $addr on $dev"
gid=$(rdma_gid_index "$dev" "$addr")
log "$dev is active; RoCE v2 GID index for $addr is $gid"

subtest_begin "ibv_rc_pingpong over rdma_rxe"
log "ibv_rc_pingpong over $dev (server and client on the same device)"
ibv_rc_pingpong -d "$dev" -g "$gid" -p "$port" -n 100 >/tmp/pp-server.log 2>&1 &
server=$!
defer_quiet kill "$server"
wait_for "ss -Hltn 'sport = :$port' | grep -q ." 10 || fail "pingpong server did not listen"
timeout 60 ibv_rc_pingpong -d "$dev" -g "$gid" -p "$port" -n 100 127.0.0.1 >/tmp/pp-client.log 2>&1 ||
	fail "pingpong client failed: $(cat /tmp/pp-client.log)"
wait "$server" || fail "pingpong server failed: $(cat /tmp/pp-server.log)"
sed 's/^/client: /' /tmp/pp-client.log
grep -q '100 iters' /tmp/pp-client.log || fail "client did not complete 100 iterations"

subtest_begin "rdma link delete of the rxe device"
check rdma link delete "$dev"
expect_fail rdma link show "$dev/1"
ibv_devices | grep -qw "$dev" && fail "$dev still listed after rdma link delete"
log "$dev is gone"
