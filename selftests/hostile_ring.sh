#!/bin/bash
# timeout: 480
#
# A hostile process against the rings it shares with sroce.ko, with
# tools/verbs-tests/hostile_ring: it writes its own mapped SQ/RQ/SRQ/CQ rings
# directly - producer indices past the ring, 2^31 ahead or moving backwards,
# WQEs with 4 GiB lengths, invalid or forbidden opcodes, too many SGEs, the
# L_Keys/R_Keys/AH number of another (forked) process, WQEs rewritten by a
# second thread while the kernel fetches them, CQ consumer indices and ring
# headers full of garbage, doorbell floods, random fuzzing - and checks that
# the kernel answers with error completions / ERR or SQE / async events for
# that QP or CQ only: its own well-behaved QP pair and the other process's
# traffic keep working, and the other process's MRs, its own canary MRs and
# its unregistered memory stay byte for byte unchanged.
# Then the resource limits (--group limits): QP/CQ/SRQ/MR caps at and beyond
# the device's; SRQs, PDs, CQs and MRs created up to the device's max_* and
# one more (ENOMEM); RLIMIT_MEMLOCK without CAP_IPC_LOCK (ENOMEM past it);
# 1,000 QPs connected in pairs with one SEND each; 10,000 MRs used as RDMA
# WRITE targets. (Every CQ is a mapping: vm.max_map_count is raised for the
# run. max_qp is not reached: 65536 QPs do not fit the guest's memory.)
#
# Topologies: two sroce devices (veth between two namespaces), IPv4, for both
# groups; the ring attacks again on one device (dummy netdev, loopback: the
# attacker's QPs, their peers and the other process all on it). Afterwards:
# no kernel splat since the start, "rdma res show" back to what it was (no
# QP, CQ, MR, PD, SRQ or context left behind), the devices' NAK counters
# moved, no ICRC error or malformed packet, and rc_integrity still passes.
#
# Two attacks are regression tests for kernel bugs this test found: a rejected
# WQE with num_sge 0xffff (sroce_wqe_len() read past the shadow copy: panic),
# and the shadow_race case (a flush refetched the shadow slot the requester
# was still building a packet from: oops). HOSTILE_RING_SEED=N reproduces a
# run's fuzz; HOSTILE_RING_RACE_SECONDS sets shadow_race's length (default
# 10); HOSTILE_RING_GENTLE=1 leaves both out (for kernels without the fixes).
# For slow (debug) kernels (SROCE_ names: tools/vm/run passes only SROCE_*
# into the guest): SROCE_HOSTILE_RING_ARGS="..." is appended to both ring
# attack runs (e.g. --fuzz-rounds 4 --mutate-iters 10),
# SROCE_HOSTILE_RING_LIMITS_ARGS to the resource-limits run (e.g. --qps 50
# --mrs 200 --no-max), SROCE_HOSTILE_RING_TIMEOUT=S replaces each run's time
# limit (200 s; shadow race 120 s), SROCE_HOSTILE_RING_RACE_SECONDS is
# HOSTILE_RING_RACE_SECONDS, and SROCE_HOSTILE_RING_CHECK_ARGS is appended to
# the verified rc_integrity run after the attacks (e.g. --ack-timeout 18).
export SR_TAG=hr # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

vt=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}
bin=$vt/hostile_ring
integrity=$vt/rc_integrity

for b in "$bin" "$integrity"; do
	[[ -x "$b" ]] || skip "$b is not built (make verbs-tests)"
done
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

sr_vt_topology 83
# The GID the program will pick (one grep per poll: forks are slow under TCG).
for x in "$da 10.83.0.1" "$db 10.83.0.2" "$dl 10.84.0.1"; do
	read -r d a <<<"$x"
	g=$(sr_gid_sysfs "$a")
	wait_for "grep -qsx $g $SR_SYS/$d/ports/1/gids/*" 10 || fail "$d has no GID for $a"
done

counters=(rem_access_nak_sent rem_op_nak_sent rem_inv_req_nak_sent rcvd_fatal_nak rcvd_icrc_err rcvd_malformed)
declare -A res0 res1 cnt0 cnt1
# counters_of DEV: "NAME:VALUE" for the counters above (one grep: forks are slow).
counters_of() {
	(cd "$SR_SYS/$1/ports/1/hw_counters" && grep -H . "${counters[@]}")
}
# res_all: "DEV pd N cq N qp N mr N srq N ctx N" for every device.
res_all() {
	rdma -j res show | jq -r '.[] | "\(.ifname) pd \(.pd) cq \(.cq) qp \(.qp) mr \(.mr) srq \(.srq // 0) ctx \(.ctx)"'
}
res_settled() {
	local d line
	res1=()
	while read -r d line; do
		res1[$d]=$line
	done < <(res_all)
	for d in "$da" "$db" "$dl"; do
		[[ "${res1[$d]:-}" == "${res0[$d]}" ]] || return 1
	done
}
# user_objects: QPs, CQs and MRs of a hostile_ring process on our devices.
user_objects() {
	local t
	for t in qp cq mr; do
		rdma res show "$t" | grep -E "($da|$db|$dl)/" | grep -E 'comm (hostile_ring|\[hostile_ring\])' || true
	done
}

while read -r d line; do
	res0[$d]=$line
done < <(res_all)
for d in "$da" "$db" "$dl"; do
	[[ -n "${res0[$d]:-}" ]] || fail "rdma res show has no entry for $d"
	log "$d before: ${res0[$d]}"
	while IFS=: read -r c v; do
		cnt0[$d.$c]=$v
	done < <(counters_of "$d")
done

maps=$(sysctl -n vm.max_map_count)
if ((maps < 262144)); then
	check sysctl -qw vm.max_map_count=262144
	defer sysctl -qw vm.max_map_count="$maps"
fi

seed=${HOSTILE_RING_SEED:-$(((RANDOM << 15 | RANDOM) + 1))}
sr_dmesg_mark
failed=()
tmp=$(mktemp -d)
defer rm -rf "$tmp"
# hostile DESCRIPTION TIMEOUT ARGS...: one run; each of its cases
# ("PASS: NAME" / "FAIL: NAME") is a sub-case.
hostile() {
	local what=$1 limit=$2 rc=0 t0=$SECONDS
	shift 2
	log "### $what"
	log "+ $bin $*"
	timeout -k 10 "$limit" "$bin" "$@" >"$tmp/out" 2>&1 || rc=$?
	cat "$tmp/out"
	log "### $what: exit $rc after $((SECONDS - t0))s"
	[[ $rc == 0 ]] || failed+=("$what (exit $rc)")
	pass_fail_to_tap <"$tmp/out" >"$tmp/tap"
	subtests_from_tap "$tmp/tap" "$what" "$rc"
}

bugs=()
[[ "${HOSTILE_RING_GENTLE:-0}" != 1 ]] || bugs=(--gentle)
read -ra ring_args <<<"${SROCE_HOSTILE_RING_ARGS:-}"
read -ra limits_args <<<"${SROCE_HOSTILE_RING_LIMITS_ARGS:-}"
limit=${SROCE_HOSTILE_RING_TIMEOUT:-200}
hostile "ring attacks, two devices" "$limit" --group ring --dev-a "$da" --dev-b "$db" --seed "$seed" "${bugs[@]}" \
	"${ring_args[@]}"
hostile "ring attacks, one device (loopback)" "$limit" --group ring --dev-a "$dl" --dev-b "$dl" --seed "$((seed + 1))" \
	--fuzz-rounds 16 --mutate-iters 40 "${bugs[@]}" "${ring_args[@]}"
hostile "resource limits" "$limit" --group limits --dev-a "$da" --dev-b "$db" "${limits_args[@]}"
if [[ "${HOSTILE_RING_GENTLE:-0}" == 1 ]]; then
	subtest_skip "shadow race" "HOSTILE_RING_GENTLE=1"
else
	hostile "shadow race" "${SROCE_HOSTILE_RING_TIMEOUT:-120}" --case shadow_race --dev-a "$da" --dev-b "$db" --seed "$seed" \
		--race-seconds "${HOSTILE_RING_RACE_SECONDS:-${SROCE_HOSTILE_RING_RACE_SECONDS:-10}}"
fi

# Nothing left behind once the processes are gone.
nf=${#failed[@]}
wait_for res_settled 15 || true
for d in "$da" "$db" "$dl"; do
	log "$d after: ${res1[$d]:-}"
	[[ "${res1[$d]:-}" == "${res0[$d]}" ]] ||
		failed+=("$d: resources not released: '${res1[$d]:-}', before '${res0[$d]}'")
done
left=$(user_objects)
[[ -z "$left" ]] || failed+=("rdma res show still lists objects of hostile_ring: $left")
subtest_verdict "nothing left behind (rdma res show)" "${failed[*]:nf}"
nf=${#failed[@]}

# The refusals went through the devices' NAK paths; no bad packet was built.
for d in "$da" "$db" "$dl"; do
	while IFS=: read -r c v; do
		cnt1[$d.$c]=$v
	done < <(counters_of "$d")
	line=
	for c in "${counters[@]}"; do
		line+=" $c ${cnt0[$d.$c]}->${cnt1[$d.$c]}"
	done
	log "$d:$line"
	for c in rcvd_icrc_err rcvd_malformed; do
		[[ "${cnt1[$d.$c]}" == "${cnt0[$d.$c]}" ]] || failed+=("$d: $c moved")
	done
done
moved() { # DEV COUNTER
	((cnt1[$1.$2] > cnt0[$1.$2]))
}
moved "$db" rem_access_nak_sent || failed+=("$db sent no remote access NAK (foreign R_Keys, oversized WRITE/READ)")
moved "$db" rem_op_nak_sent || failed+=("$db sent no remote operational NAK (corrupt receive rings)")
moved "$da" rcvd_fatal_nak || failed+=("$da counted no fatal NAK")
moved "$dl" rem_access_nak_sent || failed+=("$dl (loopback) sent no remote access NAK")
subtest_verdict "NAK counters moved, no ICRC error or malformed packet" "${failed[*]:nf}"
nf=${#failed[@]}

# The devices still carry verified traffic.
read -ra check_args <<<"${SROCE_HOSTILE_RING_CHECK_ARGS:-}"
log "+ $integrity --dev-a $da --dev-b $db --iters 50 ${check_args[*]}"
rc=0
timeout -k 10 120 "$integrity" --dev-a "$da" --dev-b "$db" --iters 50 "${check_args[@]}" || rc=$?
[[ $rc == 0 ]] || failed+=("rc_integrity after the attacks (exit $rc)")
subtest_verdict "verified traffic after the attacks" "${failed[*]:nf}"
nf=${#failed[@]}

# The kernel log: no splat (run.sh checks too), and what sroce said.
klog=$(sr_dmesg_since)
if ! splat=$("$SROCE_ROOT/tools/vm/check-splat" - <<<"$klog"); then
	failed+=("kernel log: $splat")
fi
subtest_verdict "no splat in the kernel log" "${failed[*]:nf}"
n=$(grep -c sroce <<<"$klog" || true)
log "kernel log since the start: $(wc -l <<<"$klog") lines, $n mentioning sroce"
grep sroce <<<"$klog" | tail -n 20 || true

((${#failed[@]} == 0)) || fail "hostile_ring (seed $seed) failed: $(printf '%s; ' "${failed[@]}")"
log "hostile_ring passed (seed $seed)"
