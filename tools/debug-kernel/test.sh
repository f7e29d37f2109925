#!/bin/bash
# "make test-debug": the debug-kernel lane. Builds (once, cached) the debug
# guest kernel, builds sroce.ko and the kernel-verbs test module against it
# (KASAN/UBSAN-instrumented, in build/debug/; the stock build stays as it
# is), boots it under tools/vm/run and runs tools/debug-kernel/guest.sh there:
# the debug options read back from the running kernel, the selftests that
# find memory and locking bugs with iteration counts scaled for a kernel
# ~50x slower than stock, and a kmemleak scan. The provider is the normal
# build (build/user), unchanged.
#
# usage: tools/debug-kernel/test.sh [--inject PATCH] [--out DIR] [TEST...]
#   TEST            selftests to run (default: $DEFAULT_TESTS below; or DEBUG_TESTS="...")
#   --inject PATCH  apply PATCH (-p1, relative to the repo) to the module's copy
#                   before building it: to prove the lane catches a bug
#                   (tools/debug-kernel/inject-*.patch); builds in build/debug-inject/
#   --out DIR       the VM's result directory (default build/vm/runs/<stamp>)
# Environment: SROCE_* knobs set here are defaults only (the caller's win);
# DEBUG_VM_MEM (4G), DEBUG_VM_TIMEOUT (the whole guest command; default twice
# its tests' weights below plus 600 s),
# DEBUG_VM_APPEND (more kernel command line, e.g. kmemleak=off to measure).
# Ends with "N passed, N failed, N skipped"; exit 0 iff nothing failed.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
# shellcheck source=tools/summary.sh
source "$ROOT/tools/summary.sh"

# The lane's tests: lifecycle (module load/unload, link add/delete, netdev
# and namespace deletion), teardown under traffic (kill -9, rmmod, link,
# netdev and namespace deletion, QPs destroyed with retransmit timers armed
# under netem loss), hostile wire input (directed malformed packets, a
# flood, mutations), hostile ring writers, a short impairment run, and
# DCQCN (CNPs, the rate timers and the pacer, XRC targets, paced READ
# responses), the local security regressions (sec_local: READ resources
# reallocated under a streaming READ, XRC SRQs destroyed under lookups) and
# the wire-side ones (sec_wire: forged local packets, duplicate READs,
# oversize datagrams, a backlog flood behind a READ stream, rdma link add
# racing with netdev removal), and packets the kernel could not allocate
# (tx_nomem: what the requester takes back, holds and retires). CI runs all
# of them on every run (.ci/run).
DEFAULT_TESTS="teardown_traffic wire_hostile hostile_ring sroce_netdev_removal sroce_link_cycle sroce_load_unload rc_impair dcqcn_basic sec_local sec_wire rc_req_reorder sqd_notify tx_nomem"

die() { echo "test-debug: $*" >&2; exit 1; }
say() { echo "test-debug: $*" >&2; }

inject='' out=''
while [[ $# -gt 0 ]]; do
	case "$1" in
	--inject) inject=$(realpath "$2"); shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
if [[ $# -gt 0 ]]; then
	tests=("$@")
else
	read -ra tests <<<"${DEBUG_TESTS:-$DEFAULT_TESTS}"
fi

# --- the kernel (cached) ----------------------------------------------------------------
t0=$SECONDS
kdir=$("$HERE/build.sh") || die "the debug kernel did not build"
release=$(cat "$kdir/release")
say "debug kernel $release from $kdir ($((SECONDS - t0)) s)"

# --- sroce.ko and the kverbs test module, instrumented ------------------------------------
# Built from a copy of the sources (tools/modcopy.sh).
t1=$SECONDS
obj=$ROOT/build/debug
[[ -z "$inject" ]] || obj=$ROOT/build/debug-inject
# shellcheck source=tools/modcopy.sh
source "$ROOT/tools/modcopy.sh"
# A fresh copy for an injected bug: the patch must apply to what is in the
# tree now.
[[ -z "$inject" ]] || rm -rf "$obj/src"
modcopy_sync "$obj"
if [[ -n "$inject" ]]; then
	say "injecting a bug: $inject"
	patch -p1 -d "$obj/src" --no-backup-if-mismatch <"$inject" || die "$inject does not apply"
fi
# (The debug kernel's own headers may warn: reported, not fatal.)
modcopy_build "$kdir/linux" "$obj/src/kernel" "the debug kernel" || true
modcopy_build "$kdir/linux" "$obj/src/kverbs" "the debug kernel" || true
ko=$obj/src/kernel/sroce.ko
kvko=$obj/src/kverbs/sroce_kverbs_test.ko
stallko=$obj/src/kverbs/sroce_stall_test.ko
# Instrumented, or the lane would test nothing in sroce itself.
undef=$(nm -u "$ko")
grep -q __asan_report <<<"$undef" || die "$ko has no KASAN instrumentation"
grep -q __ubsan_handle <<<"$undef" || die "$ko has no UBSAN instrumentation"
say "sroce.ko for $release: $(grep -c '__asan_\|__ubsan_' <<<"$undef") sanitizer entry points referenced ($((SECONDS - t1)) s)"

compgen -G "$ROOT/build/user/libsroce-rdmav*.so" >/dev/null || die "the provider is not built (make)"

# --- the guest --------------------------------------------------------------------------
# Scaled-down iteration counts: the caller's environment wins.
export SROCE_KO=$ko SROCE_KVERBS_KO=$kvko SROCE_STALL_KO=$stallko
export SROCE_TIMEOUT_SCALE=${SROCE_TIMEOUT_SCALE:-2}
export SROCE_SLAB_CHECK=${SROCE_SLAB_CHECK:-0}
export SROCE_LOAD_CYCLES=${SROCE_LOAD_CYCLES:-1}
export SROCE_LINK_CYCLES=${SROCE_LINK_CYCLES:-1}
export SROCE_TEARDOWN_ROUNDS=${SROCE_TEARDOWN_ROUNDS:-1}
export SROCE_TEARDOWN_SIDED=${SROCE_TEARDOWN_SIDED:-0}
export SROCE_TEARDOWN_NETEM_ROUNDS=${SROCE_TEARDOWN_NETEM_ROUNDS:-1}
export SROCE_TEARDOWN_CHECK_ARGS=${SROCE_TEARDOWN_CHECK_ARGS:---iters 40 --ack-timeout 18 --max-size 64K}
export SROCE_WH_TRAFFIC_ITERS=${SROCE_WH_TRAFFIC_ITERS:-200}
export SROCE_FLOOD=${SROCE_FLOOD:-500}
export SROCE_MUTATIONS=${SROCE_MUTATIONS:-500}
export SROCE_HOSTILE_RING_ARGS=${SROCE_HOSTILE_RING_ARGS:---fuzz-rounds 2 --mutate-iters 5}
export SROCE_HOSTILE_RING_LIMITS_ARGS=${SROCE_HOSTILE_RING_LIMITS_ARGS:---qps 20 --mrs 100 --no-max}
export SROCE_HOSTILE_RING_RACE_SECONDS=${SROCE_HOSTILE_RING_RACE_SECONDS:-3}
export SROCE_HOSTILE_RING_TIMEOUT=${SROCE_HOSTILE_RING_TIMEOUT:-400}
# The verified runs keep rc_integrity's 67 ms ACK timeout: they had a 1 s
# one (18) while a stalled guest's timers could take the stall for the
# peer's silence (RETRY_EXC_ERR on a READ after hostile_ring's attacks);
# the timers now count only the time the host ran (proto/sroce_gbn.h).
export SROCE_HOSTILE_RING_CHECK_ARGS=${SROCE_HOSTILE_RING_CHECK_ARGS:-}
export SROCE_WH_INTEGRITY_ARGS=${SROCE_WH_INTEGRITY_ARGS:-}
export SROCE_IMPAIR_ONLY=${SROCE_IMPAIR_ONLY:-loss-10}
# sqd_notify: 256 KiB messages and 3 rounds per type and topology (152 s
# with 4 rounds alone here; 553 s at the default 1 MiB and 10 rounds).
export SROCE_SQD_ARGS=${SROCE_SQD_ARGS:---size 256K --rounds 3}
# dcqcn_basic: a 2 s ACK timeout, and the checks that need stock speed relaxed.
export SROCE_DCQCN_SLOW=${SROCE_DCQCN_SLOW:-1}
# and without the cases about what a knob or the wire format does (about
# 120 s here): their kernel paths are the CE-marks case's; the main lane
# runs them.
export SROCE_DCQCN_SKIP=${SROCE_DCQCN_SKIP-spacing np-off rp-off tshark}
# sec_local: 1-4 MiB READs (at least 2) in the 20 s race, 5 XRC SENDs in
# the 15 s churn, 400 s per case run (the default ACK timeout, as above).
export SROCE_SEC_LOCAL_ARGS=${SROCE_SEC_LOCAL_ARGS:-}
export SROCE_SEC_LOCAL_RACE_ARGS=${SROCE_SEC_LOCAL_RACE_ARGS:---read-min 1M --read-max 4M --min-ops 2}
export SROCE_SEC_LOCAL_CHURN_ARGS=${SROCE_SEC_LOCAL_CHURN_ARGS:---min-ops 5}
export SROCE_SEC_LOCAL_TIMEOUT=${SROCE_SEC_LOCAL_TIMEOUT:-400}
# sec_wire: a shorter READ under a smaller flood (the duplicated READs keep
# their full 1 MiB: with 128 KiB, a stream on the other CPU could reach the
# PSNs the duplicates ask for before they arrived, so that a step did not
# test what it says);
# no slab-growth check (KASAN's quarantine keeps freed objects for a while);
# a device may take seconds to go after its netdev, so only one left for
# good (or a hang) fails newlink_race.
export SROCE_SECWIRE_READ_MB=${SROCE_SECWIRE_READ_MB:-16}
export SROCE_SECWIRE_FLOOD=${SROCE_SECWIRE_FLOOD:-400}
export SROCE_SECWIRE_ORPHAN_MS=${SROCE_SECWIRE_ORPHAN_MS:-10000}
export SROCE_SECWIRE_ARGS=${SROCE_SECWIRE_ARGS:---mem-limit-kb 0}

say "tests: ${tests[*]}"
for v in $(compgen -e | grep -E '^SROCE_' | sort); do
	say "  $v=${!v}"
done
vm=("$ROOT/tools/vm/run" --kernel "$kdir/bzImage" --modules-dir "$kdir/modules/lib/modules/$release"
	--mem "${DEBUG_VM_MEM:-4G}" --boot-timeout 300
	# kasan_multi_shot: every KASAN report, not just the first;
	# no_hash_pointers: real addresses in reports and in kmemleak's output;
	# acpi=noirq: the ACPI interpreter, instrumented, needs more than its 30 s
	# loop limit for each PCI device's _PRT (virtio uses MSI-X anyway).
	--append "kasan_multi_shot no_hash_pointers acpi=noirq ${DEBUG_VM_APPEND:-}")
# The tests run in DEBUG_GUESTS guests at once (default 1; never more than
# there are tests), each given a share by their measured time on this
# kernel (longest first, each to the guest with the least so far). Each
# guest checks its debug options, runs its tests and scans for leaks.
declare -A weight=(
	[dcqcn_basic]=460 [sec_wire]=280 [teardown_traffic]=275 [wire_hostile]=265
	[hostile_ring]=160 [sec_local]=150 [sroce_netdev_removal]=115 [rc_impair]=105
	[sroce_link_cycle]=60 [sroce_load_unload]=40 [sqd_notify]=120
	[tx_nomem]=130
)
guests=${DEBUG_GUESTS:-1}
((guests <= ${#tests[@]})) || guests=${#tests[@]}
# shellcheck source=tools/deal.sh
source "$ROOT/tools/deal.sh"
deal "$guests" < <(for t in "${tests[@]}"; do echo "${weight[$t]:-120} $t"; done)
# dcqcn_basic judges rates and times: it goes last in its guest. CI starts
# the inject proof (a second debug guest, a few minutes) beside the lane's
# beginning.
for ((g = 0; g < guests; g++)); do
	if [[ "${group[g]} " == *" dcqcn_basic "* ]]; then
		reordered=''
		for t in ${group[g]}; do
			[[ $t == dcqcn_basic ]] || reordered+=" $t"
		done
		group[g]="$reordered dcqcn_basic"
	fi
done
say "$guests guest(s) at once"
t2=$SECONDS
pids=()
for ((g = 0; g < guests; g++)); do
	gout=${out:-$ROOT/build/vm/runs/debug}
	((g == 0)) || gout+="-$g"
	say "guest $g (about ${load[g]} s):${group[g]} -> $gout"
	# The guard against a hung guest: twice its tests' measured time, and
	# 10 minutes for its boot, checks and kmemleak scans (each test has its
	# own limit in selftests/run.sh).
	gtimeout=${DEBUG_VM_TIMEOUT:-$((2 * load[g] + 600))}
	# shellcheck disable=SC2086 # a list of words
	"${vm[@]}" --timeout "$gtimeout" --out "$gout" -- tools/debug-kernel/guest.sh ${group[g]} >"$obj/guest.$g.log" 2>&1 &
	pids[g]=$!
done
p=0 f=0 s=0 rc=0
: >"$obj/guest.log"
for ((g = 0; g < guests; g++)); do
	grc=0
	wait "${pids[g]}" || grc=$?
	{ echo "--- debug guest $g:${group[g]}"; cat "$obj/guest.$g.log"; } | tee -a "$obj/guest.log"
	# The guest's summary line; a VM-level failure (splat outside a test,
	# timeout, crash) with no failed test in it still counts as one.
	gp=0 gf=0 gs=0
	read -r gp gf gs < <(summary_counts "$obj/guest.$g.log") || true
	if [[ $grc != 0 && $gf == 0 ]]; then
		say "guest $g: the VM run failed (exit $grc) although no test failed in it; counting one failure"
		gf=$((gf + 1))
	fi
	p=$((p + gp)) f=$((f + gf)) s=$((s + ${gs:-0}))
	[[ $grc == 0 ]] || rc=$grc
done
say "guests: $((SECONDS - t2)) s, exit $rc; whole lane $((SECONDS - t0)) s"
echo "$p passed, $f failed, ${s:-0} skipped"
[[ $rc == 0 && $f == 0 ]]
