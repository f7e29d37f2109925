#!/bin/bash
# timeout: 720
#
# 1 GiB RC messages with tools/verbs-tests/rc_bigmsg: one RDMA WRITE, one
# RDMA READ and one SEND of 1 GiB each (SGE lists of 4 entries cut at
# unaligned places on the requester, and on the receiver for the SEND),
# every byte checked, the guard pages around both buffers too.
#
# Topologies:
#  - two sroce devices, one per namespace on the two ends of a veth pair,
#    IPv4, path MTU 1024, 256 MiB (262144 packets per message; 1 GiB, about
#    a million packets, with SROCE_BIGMSG_FULL=1: 2-3 more minutes);
#  - one sroce device on a dummy with MTU 9000, both QPs on it (loopback),
#    IPv6, path MTU 4096, 1 GiB.
# Then the same three operations with 64 MiB over the veth pair and a 4 ms
# ACK timeout, so that timeouts (TCG guests stall for milliseconds) force
# retransmissions in the middle of every message: go-back-N must resume
# a message (a READ too) and count only retries without progress.
#
# A's first PSN is just below the 24-bit wrap, so the WRITE crosses it. Each
# 1 GiB run takes 1-3 minutes in a TCG guest (20-90 MB/s per operation).
#
# rc_bigmsg registers two buffers of the message size: the guest needs about
# 2.5 GiB free (tools/vm/run --mem 4G; tools/test-all.sh does that); with
# less the test skips. SROCE_BIGMSG_SIZE=256M (K/M/G) sets the size of both
# topologies' messages,
# SROCE_SEED=N reproduces a run's patterns. Each operation of each run is a
# sub-case.
export SR_TAG=rl # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

bin=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}/rc_bigmsg
# (sr_veth_topology names A's and B's namespaces, veths and devices.)
nsl=${SR_ID}l vl=${SR_ID}vl dl=${SR_ID}2
size=${SROCE_BIGMSG_SIZE:-1G}
size_veth=$size
[[ -n "${SROCE_BIGMSG_SIZE:-}" || "${SROCE_BIGMSG_FULL:-${SROCE_FULL:-0}}" == 1 ]] || size_veth=256M
seed=${SROCE_SEED:-$((RANDOM * 32768 + RANDOM))}

[[ -x "$bin" ]] || skip "$bin is not built (make verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

# Memory: 2 x size registered (pinned), plus room for the rest of the guest.
case $size in
*G) bytes=$((${size%G} << 30)) ;;
*M) bytes=$((${size%M} << 20)) ;;
*K) bytes=$((${size%K} << 10)) ;;
*) bytes=$size ;;
esac
avail_kb=$(awk '$1 == "MemAvailable:" {print $2}' /proc/meminfo)
need_kb=$(((2 * bytes >> 10) + 262144))
log "message size $size ($bytes bytes); MemAvailable ${avail_kb} kB, need ${need_kb} kB"
((avail_kb >= need_kb)) ||
	skip "needs $((need_kb >> 10)) MiB of free memory for two $size buffers, the guest has $((avail_kb >> 10)) MiB (tools/vm/run --mem 4G)"

# --- topology ------------------------------------------------------------------

sr_veth_topology 10.81.0.1 10.81.0.2
ns_create "$nsl"
sr_dummy "$nsl" "$vl"
check ip -n "$nsl" link set "$vl" mtu 9000
check ip -n "$nsl" addr add fd82::1/64 dev "$vl" nodad
sr_link_add "$nsl" "$dl" "$vl"

sr_wait_gid "$da" 10.81.0.1
sr_wait_gid "$db" 10.81.0.2
sr_wait_gid "$dl" fd82::1

# --- runs ------------------------------------------------------------------------

# Every run runs; the test fails at the end if any did.
failed=()
bigmsg() { # DESCRIPTION ARGS...
	# One sub-case per operation ("WRITE: ok 1073741824 bytes in ...").
	sr_vt_case 330 240 \
		's/^(WRITE|READ|SEND): ok .*/ok - \1/p; s/^(WRITE|READ|SEND): FAILED .*/not ok - \1/p' \
		"$@"
}

log "seed base $seed (SROCE_SEED=$seed reproduces this run)"
bigmsg "two devices over veth, IPv4, path MTU 1024: WRITE, READ, SEND of $size_veth" \
	--dev-a "$da" --dev-b "$db" --mtu 1024 --size "$size_veth"
bigmsg "loopback on one device, IPv6, path MTU 4096: WRITE, READ, SEND of $size" \
	--dev-a "$dl" --dev-b "$dl" --ipv6 --mtu 4096 --size "$size"
# ACK timeouts of 4 ms and 1 ms (--ack-timeout 10 and 8) are below what a
# TCG guest's responder reliably answers in, so timeouts fire mid-message:
# the requester must back off (adaptive retransmission, slow restart) and
# skip what the responder already has, instead of resending the window
# faster than the peer drains it (before that, SEND ended in RETRY_EXC_ERR
# after 2.4 s at 4 ms). Each run reports how many timeouts fired.
timeouts_of() { # DEV
	cat "$SR_SYS/$1/ports/1/hw_counters/retry_timeouts"
}
for t in "10 4" "8 1"; do
	read -r exp ms <<<"$t"
	t0=$(timeouts_of "$da")
	bigmsg "two devices over veth, IPv4: WRITE, READ, SEND of 64M, ACK timeout $ms ms (retransmissions mid-message)" \
		--dev-a "$da" --dev-b "$db" --mtu 1024 --size 64M --ack-timeout "$exp"
	t1=$(timeouts_of "$da")
	log "$da: retry_timeouts +$((t1 - t0)) at $ms ms"
done
((${#failed[@]} == 0)) || fail "$(printf '%s; ' "${failed[@]}")"
log "all rc_bigmsg runs passed"
