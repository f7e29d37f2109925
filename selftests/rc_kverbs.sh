#!/bin/bash
# timeout: 900
#
# Kernel verbs: can an in-kernel consumer (a kernel ULP) use an sroce device?
# selftests/kverbs/sroce_kverbs_test.ko runs a self-contained RC test through
# the kernel verbs API when it is loaded (SEND, SEND_WITH_IMM, WRITE,
# WRITE_WITH_IMM, READ, both atomics; 0 B .. 1 MiB; SGE lists and chained
# WRs; every byte, guard byte, atomic result and completion checked; five
# ways of reaping completions; SQD with IB_EVENT_SQ_DRAINED, once per entry
# and never after modify_qp(SQD->RTS) returned; an ib_drain_qp()-style
# flush and a bad-rkey error path). insmod's exit status is the verdict and
# the module's "FAIL:" kernel log line names the check that failed.
#
# The module is loaded in the initial namespace: kernel verbs reach a device
# whatever namespace its netdev is in. Runs:
#  - control: rdma_rxe looping back on a dummy in the initial namespace (6.1's
#    rxe works only there), IPv4 and IPv6 GIDs, atomic targets in a fast-reg
#    MR and in a DMA MR. When the control fails, suspect the test module or
#    the guest, not sroce. Not run when rdma_rxe is not available.
#  - sroce: two devices, one per namespace on the two ends of a veth pair,
#    IPv4 and IPv6 GIDs; one device looping back on a dummy in a third
#    namespace, IPv4 and IPv6 (atomic targets in a DMA MR there, elsewhere
#    in a fast-reg MR when the device has fast registration); an sroce device
#    and an rdma_rxe device on the two ends of a veth (rxe in the initial
#    namespace).
# Every run is made even when an earlier one failed; the test fails if any
# run failed. SROCE_KVERBS_ARGS="iters=2 cq_modes=direct,event" adds module
# parameters to every run.
export SR_TAG=kv # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ko=${SROCE_KVERBS_KO:-$SROCE_ROOT/selftests/kverbs/sroce_kverbs_test.ko}
mod=sroce_kverbs_test
nsa=${SR_ID}a nsb=${SR_ID}b nsl=${SR_ID}l nsx=${SR_ID}x
va=${SR_ID}va vb=${SR_ID}vb vl=${SR_ID}vl vr=${SR_ID}vr vxr=${SR_ID}xr vxs=${SR_ID}xs
da=${SR_ID}0 db=${SR_ID}1 dl=${SR_ID}2 dx=${SR_ID}3 rxe=${SR_ID}r0 rxex=${SR_ID}r1

[[ -f "$ko" ]] || skip "$ko is not built (make kverbs-test)"
sr_setup
require_module ib_core
[[ ! -d /sys/module/$mod ]] || fail "$mod is already loaded"
defer_quiet rmmod "$mod"

runs=0
failures=()
control_failed=0

# kvt NAME ARGS...: insmod the test module with ARGS and record the verdict.
kvt() {
	local name=$1 rc=0 out why
	shift
	runs=$((runs + 1))
	log "### $name"
	sr_dmesg_mark
	# shellcheck disable=SC2086  # SROCE_KVERBS_ARGS is a list of parameters
	log "+ insmod $mod.ko $* ${SROCE_KVERBS_ARGS:-}"
	# shellcheck disable=SC2086
	insmod "$ko" "$@" ${SROCE_KVERBS_ARGS:-} || rc=$?
	out=$(sr_dmesg_since | grep "$mod:" | sed 's/^\[[^]]*\] //' || true)
	# shellcheck disable=SC2001  # indent every line
	sed 's/^/    /' <<<"$out"
	[[ ! -d /sys/module/$mod ]] || rmmod "$mod"
	if [[ $rc == 0 ]] && grep -q "$mod: PASS" <<<"$out"; then
		subtest_ok "$name"
		return 0
	fi
	why=$(grep -m1 "FAIL:" <<<"$out" || true)
	why=${why#*FAIL: }
	subtest_fail "$name" "insmod exited $rc: ${why:-no FAIL line in the kernel log}"
	failures+=("$name: ${why:-insmod exited $rc}")
	return 1
}

# --- control: rdma_rxe ---------------------------------------------------------------

have_rxe=0
if sr_rxe_use; then
	have_rxe=1
	sr_rxe_dummy "$rxe" "$vr" 10.83.0.1/24 fd83::1/64
	g4=$(sr_gid_of "$rxe" 10.83.0.1)
	g6=$(sr_gid_of "$rxe" fd83::1)
	# sqd=0: rdma_rxe (6.1) never runs the WRs that SQD held once the QP
	# is back in RTS (0 of 4 WRITEs completed in 60 s, 2026-12-07), so
	# the control leaves out the step sroce must pass.
	kvt "control: rdma_rxe loopback, IPv4, atomics in a fast-reg MR" \
		dev_a="$rxe" gid_a="$g4" gid_b="$g4" atomic_mr=frmr sqd=0 || control_failed=1
	kvt "control: rdma_rxe loopback, IPv6, atomics in a DMA MR" \
		dev_a="$rxe" gid_a="$g6" gid_b="$g6" atomic_mr=dma sqd=0 || control_failed=1
else
	subtest_skip "control: rdma_rxe loopback, IPv4, atomics in a fast-reg MR" "rdma_rxe cannot be loaded"
	subtest_skip "control: rdma_rxe loopback, IPv6, atomics in a DMA MR" "rdma_rxe cannot be loaded"
fi

# --- sroce -------------------------------------------------------------------------------

sr_vt_topology 81 v6l
ga4=$(sr_gid_of "$da" 10.81.0.1)
gb4=$(sr_gid_of "$db" 10.81.0.2)
ga6=$(sr_gid_of "$da" fd81::1)
gb6=$(sr_gid_of "$db" fd81::2)
gl4=$(sr_gid_of "$dl" 10.82.0.1)
gl6=$(sr_gid_of "$dl" fd82::1)

kvt "sroce: two devices (veth, two namespaces), IPv4" \
	dev_a="$da" dev_b="$db" gid_a="$ga4" gid_b="$gb4" || true
kvt "sroce: two devices (veth, two namespaces), IPv6" \
	dev_a="$da" dev_b="$db" gid_a="$ga6" gid_b="$gb6" || true
kvt "sroce: one device looping back (dummy), IPv4" \
	dev_a="$dl" gid_a="$gl4" gid_b="$gl4" || true
kvt "sroce: one device looping back (dummy), IPv6, atomics in a DMA MR" \
	dev_a="$dl" gid_a="$gl6" gid_b="$gl6" atomic_mr=dma || true

# sroce against rdma_rxe through kernel verbs. It once stalled in CI (a
# random chain, 1 of 4 completions in 60 s) and was opt-in since; the stall
# did not come back in 9 guest runs (3 of the module before 4eb60b5, 6
# after it, 3 of those with the veth's default receive backlog, which a
# 1 MiB READ answered by rxe in one burst of 1024 packets overflows: that
# loss is recovered here too, no larger backlog needed). If it comes back,
# it fails here. SROCE_KVERBS_RXE=0 leaves it out.
if [[ $have_rxe == 1 && ${SROCE_KVERBS_RXE:-1} == 1 ]]; then
	ns_create "$nsx"
	veth_pair - "$vxr" "$nsx" "$vxs"
	check ip addr add 10.84.0.1/24 dev "$vxr"
	check ip -n "$nsx" addr add 10.84.0.2/24 dev "$vxs"
	sr_rxe_link_add "$rxex" "$vxr"
	sr_link_add "$nsx" "$dx" "$vxs"
	gx=$(sr_gid_of "$dx" 10.84.0.2)
	gr=$(sr_gid_of "$rxex" 10.84.0.1)
	kvt "sroce and rdma_rxe (veth), IPv4" \
		dev_a="$dx" dev_b="$rxex" gid_a="$gx" gid_b="$gr" || true
elif [[ $have_rxe == 1 ]]; then
	subtest_skip "sroce and rdma_rxe (veth), IPv4" "left out by SROCE_KVERBS_RXE=0"
else
	subtest_skip "sroce and rdma_rxe (veth), IPv4" "rdma_rxe cannot be loaded"
fi

# --- verdict -------------------------------------------------------------------------------

if ((${#failures[@]})); then
	for f in "${failures[@]}"; do
		log "FAILED: $f"
	done
	if [[ $control_failed == 1 ]]; then
		log "the rdma_rxe control failed too: suspect the test module or the guest, not sroce"
	fi
	fail "${#failures[@]} of $runs kernel-verbs runs failed"
fi
log "all $runs kernel-verbs runs passed"
