#!/bin/bash
# timeout: 900
#
# Security regressions against a local, unprivileged process, with
# tools/verbs-tests/sec_local (one run per case, as nobody unless said
# otherwise), on two sroce devices across a veth pair between two
# namespaces (IPv4):
#  1 xrc_tgt_post_send  raw IB_USER_VERBS_CMD_POST_SEND commands on an XRC
#                       target QP (it has no send queue and no CQ) in INIT,
#                       RTR and ERR: inline data from a kernel address, inline
#                       SGE lengths that wrap u32, RDMA WRITE/READ; and on an
#                       ordinary user RC QP. Every write(2) must fail with
#                       EINVAL or EOPNOTSUPP; the device keeps working. (Before
#                       the fix: a kernel oops, NULL pointer dereference in
#                       sroce_cq_post from sroce_qp_flush_sq.)
#  2 read_modify_race   8-32 MiB RDMA READs, verified byte for byte, for 20 s
#                       while two threads cycle the responder RTS -> SQD ->
#                       SQD (new max_dest_rd_atomic, same AV) -> RTS; and
#                       modify_qp with IBV_QP_CUR_STATE naming a state the QP
#                       is not in must fail with EINVAL and change nothing.
#                       (Before the fix: the responder streams from READ
#                       resources modify_qp freed - a use-after-free KASAN
#                       shows - and drops them, so READs in flight end in
#                       RETRY_EXC_ERR and too few complete; the lies are
#                       accepted.)
#  3 xrc_srq_churn      XRC SENDs for 15 s naming XRC SRQs (some empty: RNR,
#                       rnr_retry 7) that another thread creates and destroys
#                       meanwhile, the QP pair replaced whenever it fails;
#                       every SEND that completed delivered verified data
#                       into the SRQ it named.
#  4 rereg_ro_file      a root-owned 0644 file, opened O_RDONLY and mapped
#                       PROT_READ (MAP_SHARED, then MAP_PRIVATE) by nobody,
#                       registered for remote read, re-registered with
#                       ibv_rereg_mr(IBV_REREG_MR_CHANGE_ACCESS) for remote
#                       write, written by a peer QP: the file stays unchanged
#                       (read back as root, before and after drop_caches).
#                       On 6.1 ib_umem_get pins a read-only MR with
#                       FOLL_FORCE|FOLL_WRITE, so the MAP_SHARED registration
#                       itself fails (EFAULT) and a MAP_PRIVATE one gets
#                       copies: the file's hole shows on kernels >= 6.2. On
#                       6.1 the case still requires the rereg of the
#                       MAP_PRIVATE MR to be refused (before the fix it was
#                       accepted and the peer wrote into the process's
#                       PROT_READ pages). /tmp is a tmpfs in the guest
#                       (drop_caches keeps its pages).
#  5 memcg_limit        in a cgroup with memory.max 64M: CQs (65535 CQEs),
#                       QPs (8192 WRs each way) and SRQs (8192 WRs) until one
#                       fails: the failure is ENOMEM near memory.max, the
#                       cgroup's memory.current grew by about the rings'
#                       size, no OOM kill; freed, a verified exchange works.
#                       (Before the fix the rings are not charged: the test
#                       stops at 4 x memory.max of rings and fails.)
# Each case is a sub-case; a kernel splat while a case ran fails it. The test
# fails if any case failed; the cases SROCE_SEC_LOCAL_CASES leaves out are
# skipped ones.
#
# SROCE_SEC_LOCAL_CASES="a b" runs only those cases; SROCE_SEC_LOCAL_ARGS is
# appended to every run, SROCE_SEC_LOCAL_RACE_ARGS to read_modify_race's and
# SROCE_SEC_LOCAL_CHURN_ARGS to xrc_srq_churn's (slow kernels: e.g.
# "--read-min 1M --read-max 4M --min-ops 2"); SROCE_SEC_LOCAL_TIMEOUT (180 s)
# limits each run.
export SR_TAG=sl # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

vt=${SROCE_VERBS_TESTS:-$SROCE_ROOT/build/verbs-tests}
bin=$vt/sec_local
[[ -x "$bin" ]] || skip "$bin is not built (make verbs-tests)"
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
require_cmd setpriv timeout sha256sum

sr_veth_topology 10.85.0.1 10.85.0.2
for x in "$da 10.85.0.1" "$db 10.85.0.2"; do
	read -r d a <<<"$x"
	g=$(sr_gid_sysfs "$a")
	wait_for "grep -qsx $g $SR_SYS/$d/ports/1/gids/*" 10 || fail "$d has no GID for $a"
done

# The unprivileged user, and its access to the uverbs character devices
# (ib_uverbs creates them 0666).
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
log "$(stat -c '%A %U %G %n' /dev/infiniband/uverbs* | paste -sd' ')"
for f in /dev/infiniband/uverbs*; do
	"${nobody[@]}" test -r "$f" -a -w "$f" || fail "$f is not accessible to uid 65534: $(ls -l "$f")"
done
"${nobody[@]}" test -r "$bin" -a -x "$bin" || fail "$bin is not executable by uid 65534"

read -ra extra <<<"${SROCE_SEC_LOCAL_ARGS:-}"
read -ra race_args <<<"${SROCE_SEC_LOCAL_RACE_ARGS:-}"
read -ra churn_args <<<"${SROCE_SEC_LOCAL_CHURN_ARGS:-}"
limit=${SROCE_SEC_LOCAL_TIMEOUT:-180}
common=(--dev-a "$da" --dev-b "$db" "${extra[@]}")
read -ra cases <<<"${SROCE_SEC_LOCAL_CASES:-xrc_tgt_post_send read_modify_race xrc_srq_churn rereg_ro_file memcg_limit}"

# run CMD...: the case's program with the time limit; sets rc.
run() {
	rc=0
	log "+ $*"
	timeout -k 10 "$limit" "$@" || rc=$?
	case $rc in
	124 | 137) log "(exit $rc: timed out after $limit s, or killed)" ;;
	esac
}

case_xrc_tgt_post_send() {
	run "${nobody[@]}" "$bin" --case xrc_tgt_post_send "${common[@]}"
}

case_read_modify_race() {
	run "${nobody[@]}" "$bin" --case read_modify_race "${common[@]}" "${race_args[@]}"
}

case_xrc_srq_churn() {
	run "${nobody[@]}" "$bin" --case xrc_srq_churn "${common[@]}" "${churn_args[@]}"
}

case_rereg_ro_file() {
	local f sum0 sum
	f=$(mktemp /tmp/sec_local_ro.XXXXXX)
	defer rm -f "$f"
	# Two pages of a known pattern, root's, 0644.
	awk 'BEGIN { for (i = 0; i < 128; i++) printf "%-63s\n", "sroce sec_local: line " i " of a file its reader cannot change" }' >"$f"
	chown 0:0 "$f"
	chmod 0644 "$f"
	sum0=$(sha256sum <"$f")
	run "${nobody[@]}" "$bin" --case rereg_ro_file --file "$f" "${common[@]}"
	sum=$(sha256sum <"$f")
	if [[ "$sum" != "$sum0" ]]; then
		log "FAIL: $f changed (seen by root with read(2))"
		rc=1
	fi
	echo 3 >/proc/sys/vm/drop_caches
	sum=$(sha256sum <"$f")
	if [[ "$sum" != "$sum0" ]]; then
		log "FAIL: $f changed (seen by root after drop_caches)"
		rc=1
	fi
	log "$f: unchanged as root reads it, before and after drop_caches ($(df --output=fstype "$f" | tail -n1))"
}

case_memcg_limit() {
	local root=/sys/fs/cgroup cg
	if [[ ! -e $root/cgroup.controllers ]]; then
		mkdir -p "$root"
		check mount -t cgroup2 none "$root"
		defer_quiet umount "$root"
	fi
	grep -qw memory "$root/cgroup.controllers" || { log "no memory controller in cgroup v2"; rc=1; return; }
	if ! grep -qw memory "$root/cgroup.subtree_control"; then
		echo +memory >"$root/cgroup.subtree_control"
		defer_quiet sh -c "echo -memory >$root/cgroup.subtree_control"
	fi
	cg=$root/sec_local.$$
	mkdir "$cg"
	defer_quiet rmdir "$cg"
	echo 64M >"$cg/memory.max"
	echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
	# The program's code (its binary, the provider, every library they
	# load) is read into the page cache here, outside the cgroup, so those
	# pages are charged to this shell's cgroup. Otherwise the pages the
	# program first touches inside it are charged there, and once the
	# rings fill memory.max each allocation evicts them and the program
	# faults them straight back: it thrashed for minutes (CI, and 2 of 3
	# runs here) instead of reaching ENOMEM, with 25000 refaults a second.
	local files=("$bin" "$(provider_so)")
	mapfile -t -O ${#files[@]} files < <(ldd "$bin" "${files[1]}" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u)
	check python3 - "${files[@]}" <<'PY'
import mmap, sys
n = 0
for f in sys.argv[1:]:
    with open(f, "rb") as fh:
        m = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
        n += sum(m[i] for i in range(0, len(m), mmap.PAGESIZE)) >= 0
        m.close()
print("# memcg_limit: %d files of the program's code read into the page cache outside the cgroup" % n)
PY
	# The program is moved into the cgroup first, then drops to nobody.
	# shellcheck disable=SC2016  # $$ and $1 are the inner shell's
	run sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		"${nobody[@]}" "$bin" --case memcg_limit --cgroup "$cg" "${common[@]}"
	log "$cg: memory.events: $(paste -sd' ' "$cg/memory.events"); memory.current $(cat "$cg/memory.current")"
	if [[ $rc == 137 ]] || ! grep -qx 'oom_kill 0' "$cg/memory.events"; then
		log "FAIL: the program was killed, or the cgroup saw an OOM kill"
		rc=1
	fi
}

n=0
failed=()
for c in "${cases[@]}"; do
	declare -F "case_$c" >/dev/null || fail "no case '$c'"
	n=$((n + 1))
	log "### $n $c"
	sr_dmesg_mark
	t0=$SECONDS
	rc=0
	"case_$c"
	why=()
	[[ $rc == 0 ]] || why+=("exit $rc")
	klog=$(sr_dmesg_since)
	if ! splat=$("$SROCE_ROOT/tools/vm/check-splat" - <<<"$klog"); then
		while IFS= read -r l; do log "  | $l"; done <<<"$splat"
		why+=("$(head -n 1 <<<"$splat")")
	fi
	log "$c: $((SECONDS - t0)) s"
	if [[ ${#why[@]} == 0 ]]; then
		subtest_ok "$c"
	else
		subtest_fail "$c" "$(printf '%s; ' "${why[@]}")"
		failed+=("$c")
	fi
done
for c in xrc_tgt_post_send read_modify_race xrc_srq_churn rereg_ro_file memcg_limit; do
	[[ " ${cases[*]} " == *" $c "* ]] || subtest_skip "$c" "not in SROCE_SEC_LOCAL_CASES"
done

((${#failed[@]} == 0)) || fail "sec_local: ${#failed[@]} of $n cases failed: ${failed[*]}"
log "sec_local: all $n cases passed"
