# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# What the benchmarks' guest halves (guest.sh, insn_guest.sh, lossy.sh)
# share, sourced after selftests/lib_sroce.sh.

# bench_start OUTDIR FILE HOW TOOLS...: in the test VM only (HOW: the
# command that boots it for this benchmark) and with a writable OUTDIR:
# empties OUTDIR/FILE, the raw results (its path in $raw); makes $tmp
# (removed on exit); loads sroce and rdma_rxe; checks the provider and that
# TOOLS are installed.
bench_start() {
	local outdir=$1 file=$2 how=$3
	shift 3
	[[ -n "${SROCE_IN_GUEST:-}" ]] || fail "runs only in the test VM (use $how)"
	[[ -d "$outdir" && -w "$outdir" ]] || fail "no writable output directory $outdir"
	raw=$outdir/$file
	: >"$raw"
	tmp=$(mktemp -d)
	defer rm -rf "$tmp"
	sr_module_use
	sr_have_provider || fail "the provider build/user/libsroce-rdmav<N>.so is not built"
	sr_rxe_use || fail "rdma_rxe cannot be loaded"
	require_cmd "$@"
}

# bench_loop_topologies NS P: one device looping back to itself, per stack:
#   sroce: ${P}sroce-l on a dummy ${P}dummy-l, 198.51.100.1/24, in netns
#          $nsl (NS-l);
#   rxe:   ${P}rxe0 on a veth end ${P}veth-r, 203.0.113.1/24, in the initial
#          netns (6.1 forbids rxe in another), its peer ${P}veth-rp,
#          203.0.113.2/24, in netns $nsr (NS-r).
# shellcheck disable=SC2034 # nsl and nsr are the caller's
bench_loop_topologies() {
	local p=$2
	nsl=$1-l nsr=$1-r
	ns_create "$nsl"
	ns_create "$nsr"
	sr_dummy "$nsl" "${p}dummy-l"
	check ip -n "$nsl" addr add 198.51.100.1/24 dev "${p}dummy-l"
	sr_link_add "$nsl" "${p}sroce-l" "${p}dummy-l"
	veth_pair - "${p}veth-r" "$nsr" "${p}veth-rp"
	check ip addr add 203.0.113.1/24 dev "${p}veth-r"
	check ip -n "$nsr" addr add 203.0.113.2/24 dev "${p}veth-rp"
	check rdma link add "${p}rxe0" type rxe netdev "${p}veth-r"
	defer_quiet rdma link delete "${p}rxe0"
}
