# shellcheck shell=bash
# Helpers for selftests/*.sh. Source it first thing:
#
#   #!/bin/bash
#   # timeout: 120
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Sourcing turns on "set -eEuo pipefail": an unchecked failure ends the test
# (reported with its line), and every cleanup registered with defer runs on
# any exit, so a failing test leaves no namespaces, links or modules behind.
#
# Exit codes follow kselftest: 0 pass, 1 fail, 4 skip.

set -eEuo pipefail

SROCE_ROOT=${SROCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
export SROCE_ROOT
SROCE_TEST_NAME=${SROCE_TEST_NAME:-$(basename "$0" .sh)}
readonly KSFT_PASS=0 KSFT_FAIL=1 KSFT_SKIP=4
# Debian's python sees python3-pyverbs/scapy; the one on PATH may not.
export PYTHON=/usr/bin/python3

# --- logging and verdicts -------------------------------------------------------

log() { printf '%s\n' "$*"; }

fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit "$KSFT_FAIL"
}

skip() {
	printf 'SKIP: %s\n' "$*"
	# run.sh puts the reason on the TAP line.
	[[ -z "${SROCE_SKIP_FILE:-}" ]] || printf '%s\n' "$*" >"$SROCE_SKIP_FILE"
	exit "$KSFT_SKIP"
}

# check CMD...: run it, and fail the test if it fails.
check() {
	log "+ $*"
	local rc=0
	"$@" || rc=$?
	[[ $rc == 0 ]] || fail "'$*' exited with $rc"
}

# expect_fail CMD...: run it, and fail the test if it succeeds.
expect_fail() {
	log "+ ! $*"
	if "$@"; then
		fail "'$*' succeeded, but should have failed"
	fi
	return 0
}

# wait_for 'CONDITION' [TIMEOUT_SECS=10]: poll CONDITION (a shell command
# line, eval'ed) every 0.1 s until it succeeds. Returns 1 on timeout.
wait_for() {
	local cond=$1 timeout=${2:-10} deadline
	deadline=$(($(date +%s%N) + timeout * 1000000000))
	until eval "$cond" >/dev/null 2>&1; do
		if (($(date +%s%N) >= deadline)); then
			log "timed out after ${timeout}s waiting for: $cond"
			return 1
		fi
		sleep 0.1
	done
}

# Report the failing command when "set -e" ends the test.
trap 'log "FAIL: line $LINENO: $BASH_COMMAND (exit $?)" >&2' ERR

# --- cleanup stack ----------------------------------------------------------------

_sroce_deferred=()

# defer CMD...: run CMD when the test exits (last deferred runs first).
defer() {
	_sroce_deferred+=("$(printf '%q ' "$@")")
}

# defer_quiet CMD...: like defer, for cleanups that may legitimately find
# nothing left to clean (no output, failure ignored).
defer_quiet() {
	_sroce_deferred+=("$(printf '%q ' "$@") >/dev/null 2>&1 || true")
}

_sroce_cleanup() {
	local rc=$? i
	set +eE
	trap - ERR
	for ((i = ${#_sroce_deferred[@]} - 1; i >= 0; i--)); do
		eval "${_sroce_deferred[i]}" || log "cleanup: '${_sroce_deferred[i]}' failed"
	done
	_sroce_deferred=()
	exit "$rc"
}
trap _sroce_cleanup EXIT
# timeout(1) sends TERM; make that an ordinary exit so the cleanups run.
trap 'exit 143' TERM
trap 'exit 130' INT

# --- network namespaces -----------------------------------------------------------

# ns_create NAME: a fresh network namespace with lo up, deleted on exit.
ns_create() {
	ip netns add "$1"
	defer ip netns del "$1"
	ip -n "$1" link set lo up
}

# ns_exec NS CMD...: run CMD in namespace NS ("" or "-": the initial one).
ns_exec() {
	local ns=$1
	shift
	if [[ -z "$ns" || "$ns" == - ]]; then
		"$@"
	else
		ip netns exec "$ns" "$@"
	fi
}

_ns_ip() { # ip with -n NS unless NS is the initial namespace
	local ns=$1
	shift
	if [[ -z "$ns" || "$ns" == - ]]; then ip "$@"; else ip -n "$ns" "$@"; fi
}

# veth_pair NS1 IF1 NS2 IF2: a veth pair IF1 (in NS1) <-> IF2 (in NS2), both
# up, deleted on exit. An empty or "-" namespace means the initial one.
veth_pair() {
	local ns1=$1 if1=$2 ns2=$3 if2=$4 tmp
	# Create both ends in the initial namespace under temporary names, then
	# move them: this works whichever names already exist there.
	tmp=vt$$$RANDOM
	ip link add "${tmp}a" type veth peer name "${tmp}b"
	_veth_place "${tmp}a" "$ns1" "$if1"
	_veth_place "${tmp}b" "$ns2" "$if2"
	# Deleting one end deletes both (and namespace deletion does too, which
	# is why a failure here is not worth a complaint).
	defer_quiet _ns_ip "$ns1" link del "$if1"
	_ns_ip "$ns1" link set "$if1" up
	_ns_ip "$ns2" link set "$if2" up
}

_veth_place() { # _veth_place TMPNAME NS NAME
	if [[ -z "$2" || "$2" == - ]]; then
		ip link set "$1" name "$3"
	else
		ip link set "$1" netns "$2" name "$3"
	fi
}

# --- the sroce module and provider ----------------------------------------------

# SROCE_KO=PATH loads another build of the module (a copy that a rebuild
# of the tree cannot change under a running test).
sroce_module_path() { echo "${SROCE_KO:-$SROCE_ROOT/kernel/sroce.ko}"; }

_sroce_loaded() { [[ -d /sys/module/sroce ]]; }

# sroce_load: the freshly built kernel/sroce.ko and what it needs.
sroce_load() {
	local ko
	ko=$(sroce_module_path)
	modprobe -a ib_core ib_uverbs udp_tunnel ip6_udp_tunnel
	_sroce_loaded && return 0
	[[ -f "$ko" ]] || fail "$ko is not built (run make)"
	insmod "$ko"
}

sroce_unload() {
	if _sroce_loaded; then rmmod sroce; fi
}

# sroce_install_module: make kernel/sroce.ko modprobe-able, so that
# "rdma link add X type sroce" autoloads it through its rdma-link-sroce alias.
# Guest only: the guest's root is a tmpfs overlay, the host's stays untouched.
sroce_install_module() {
	local ko dir
	[[ -n "${SROCE_IN_GUEST:-}" ]] || fail "sroce_install_module only runs in the test VM"
	ko=$(sroce_module_path)
	[[ -f "$ko" ]] || fail "$ko is not built (run make)"
	dir=/lib/modules/$(uname -r)/updates
	mkdir -p "$dir"
	cp "$ko" "$dir/"
	depmod -a
}

# provider_env: make libibverbs load the uninstalled provider
# build/user/libsroce-rdmav34.so (RDMAV_DRIVERS takes a path prefix), and
# show its warnings.
provider_env() {
	export RDMAV_DRIVERS=$SROCE_ROOT/build/user/libsroce
	export IBV_SHOW_WARNINGS=1
}

# --- small utilities ----------------------------------------------------------------

# require_cmd CMD...: skip the test unless all the commands exist.
require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || skip "$c is not installed"
	done
}

# require_module MOD...: modprobe them, skipping the test if one is missing.
require_module() {
	local m
	for m in "$@"; do
		modprobe "$m" 2>/dev/null || skip "kernel module $m is not available"
	done
}

# rdma_gid_index DEV IPV4: the index of DEV port 1's RoCE v2 GID for IPV4.
rdma_gid_index() {
	local dev=$1 ip=$2 f idx gid want
	local -a octets
	IFS=. read -ra octets <<<"$ip"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${octets[@]}")
	for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		idx=${f##*/}
		gid=$(<"$f") 2>/dev/null || continue
		[[ "$gid" == "$want" ]] || continue
		[[ "$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$idx" 2>/dev/null)" == "RoCE v2" ]] || continue
		echo "$idx"
		return 0
	done
	return 1
}

: "$KSFT_PASS"  # for tests that want to spell it out
