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
#
# A test reports its sub-cases (each pingpong variant, each impairment, each
# interop direction ...) with the subtest_* helpers below; run.sh counts them
# (a test that reports none counts as one). Three styles, mixable:
#
#   subtest_begin "IPv4"          # linear: a case runs until the next
#   ... checks, fail on error ... # subtest_begin/subtest_end or the end of
#   subtest_end                   # the test; a fail/skip in it is its verdict
#
#   subtest "IPv6, events" run_it --ipv6 -e   # a function or command in a
#                                 # subshell with its own defer scope: fail
#                                 # ends the case, not the test
#
#   subtest_ok NAME / subtest_fail NAME WHY / subtest_skip NAME WHY
#                                 # a verdict reached some other way
#
# A case skipped, or one whose figures went unchecked, is a skip, never a
# pass. A test that recorded a failed case exits 1 even if it ends normally.

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
	_sroce_why="$*"
	exit "$KSFT_FAIL"
}

skip() {
	printf 'SKIP: %s\n' "$*"
	_sroce_why="$*"
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

# sr_nap SECONDS: sleep without starting a program (sleep(1) is one, and
# on the debug kernel under TCG a program start costs about 0.3 s): a read
# with a time limit on a pipe this shell holds both ends of, which nobody
# writes to.
exec {_sroce_nap_fd}<> <(:)
sr_nap() {
	local _n
	read -rt "$1" -u "$_sroce_nap_fd" _n || true
}
# sr_nap_ms MS: sr_nap for MS milliseconds (0 returns at once).
sr_nap_ms() {
	local _s
	printf -v _s '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
	sr_nap "$_s"
}

# sr_running PID: PID exists and has not exited (a zombie, an ended child
# the shell has not reaped yet, counts as ended: "kill -0" succeeds on it).
# Builtins only; the state is the field after the command name's ")".
sr_running() {
	local _st
	{ read -r _st <"/proc/$1/stat"; } 2>/dev/null || return 1
	_st=${_st##*) }
	[[ ${_st%% *} != Z ]]
}

# wait_for 'CONDITION' [TIMEOUT_SECS=10]: poll CONDITION (a shell command
# line, eval'ed) until it succeeds. Returns 1 on timeout. Between two
# checks it naps 0.1 s, or as long as the check took if that was longer (up
# to 1 s): on a debug kernel under TCG a check that starts programs ("ip
# netns exec ... ss | grep") takes a second or more, and back-to-back checks
# kept a CPU busy starting programs while the test waited for the very
# thing they competed with.
wait_for() {
	local cond=$1 timeout=${2:-10} deadline t0 now took
	# Bash's clock, in microseconds: no date(1) per poll (each program a
	# test starts costs a debug kernel under TCG most of a second).
	deadline=$((${EPOCHREALTIME//[.,]/} + timeout * 1000000))
	while :; do
		t0=${EPOCHREALTIME//[.,]/}
		eval "$cond" >/dev/null 2>&1 && return 0
		now=${EPOCHREALTIME//[.,]/}
		if ((now >= deadline)); then
			log "timed out after ${timeout}s waiting for: $cond"
			return 1
		fi
		took=$(((now - t0) / 1000))
		((took > 100)) || took=100
		((took < 1000)) || took=1000
		sr_nap_ms "$took"
	done
}

# Report the failing command when "set -e" ends the test (and keep it as
# the reason of the sub-case it ends).
trap '_sroce_why="line $LINENO: $BASH_COMMAND (exit $?)"; log "FAIL: $_sroce_why" >&2' ERR

# --- sub-cases (TAP subtests) -----------------------------------------------------
#
# Each verdict is a line "ok|fail|skip<TAB>NAME<TAB>WHY" appended to
# $SROCE_SUBTEST_FILE (run.sh gives each test its own; a test run by hand
# gets a temporary one), which run.sh reads after the test: what a test
# reported survives its being killed. The live log line is for people.

_sroce_case=''      # the open linear case (subtest_begin)
_sroce_why=''       # why the test (or the case) is ending: fail, skip, ERR
_sroce_in_subtest=0 # 1 in the subshell of "subtest NAME CMD..."
if [[ -z "${SROCE_SUBTEST_FILE:-}" ]]; then
	SROCE_SUBTEST_FILE=$(mktemp /tmp/sroce-subtests.XXXXXX)
	_sroce_own_subtest_file=1
fi
export SROCE_SUBTEST_FILE

# _subtest_put ok|fail|skip NAME [WHY]: one verdict, numbered in order.
_subtest_put() {
	local st=$1 name=$2 why=${3:-} n line
	name=${name//[$'\t\n']/ }
	name=${name//'#'/'\#'}
	why=${why//[$'\t\n']/ }
	why=${why:0:300}
	# Builtins only: under TCG every program started costs ~0.15 s, and a
	# suite reports some 1,400 cases. The file is the record (run.sh
	# numbers the cases from it); verdicts are written one at a time
	# (subtest waits for its case), each by one O_APPEND write of a short
	# line, so the count read here is the previous cases.
	local -a prev=()
	mapfile -t prev <"$SROCE_SUBTEST_FILE"
	n=$((${#prev[@]} + 1))
	printf '%s\t%s\t%s\n' "$st" "$name" "$why" >>"$SROCE_SUBTEST_FILE"
	case $st in
	ok) line="ok $n - $name" ;;
	fail) line="not ok $n - $name${why:+ # $why}" ;;
	*) line="ok $n - $name # SKIP ${why:-no reason given}" ;;
	esac
	log "$line"
	# Where a test's time goes, case by case.
	log "  (${SECONDS} s into ${0##*/})"
}

# _subtest_close: the open linear case, if any, passed.
_subtest_close() {
	local c=$_sroce_case
	[[ -n $c ]] || return 0
	_sroce_case=''
	_subtest_put ok "$c"
}

# subtest_ok NAME / subtest_fail NAME WHY / subtest_skip NAME WHY: record a
# verdict (after closing an open linear case as passed). They never end the
# test; a failed case makes it exit 1 at the end.
subtest_ok() {
	_subtest_close
	_subtest_put ok "$1"
}
subtest_fail() {
	_subtest_close
	_subtest_put fail "$1" "${2:-}"
}
subtest_skip() {
	_subtest_close
	_subtest_put skip "$1" "${2:-}"
}

# subtest_begin NAME: close the open case (passed) and open NAME. It passes
# when the next subtest_* call or the end of the test comes without a fail;
# fail (or a command "set -e" stops at) makes it fail, skip skip - both end
# the test as usual.
subtest_begin() {
	_subtest_close
	_sroce_case=$1
	_sroce_why=''
	log "--- $1"
}

# subtest_end: the open case passed.
subtest_end() { _subtest_close; }

# subtest_verdict NAME WHY: ok if WHY is empty, else failed with WHY.
subtest_verdict() {
	if [[ -z "${2:-}" ]]; then subtest_ok "$1"; else subtest_fail "$1" "$2"; fi
}

# subtest NAME CMD...: run CMD (typically a function) as case NAME, in a
# subshell with "set -e", the ERR trap and its own defer scope (what it
# defers is undone when it ends): fail or an unchecked error ends the case,
# not the test; skip skips it. Exit 0 passes. Sets SUBTEST_RC to CMD's exit
# status and returns 0, so the test goes on with the next case. CMD's
# variable assignments do not reach the caller. Call it as a plain command,
# not in an if/while condition or on the left of && or || (in such a place
# bash suspends "set -e" for everything run from there, the case included).
SUBTEST_RC=0
subtest() {
	local name=$1 rc=0 why=''
	shift
	_subtest_close
	local wf
	wf=$(mktemp /tmp/sroce-subtest-why.XXXXXX)
	log "--- $name"
	# In the background and then waited for: a subshell on the left of ||
	# would run with "set -e" suspended.
	(
		_sroce_in_subtest=1 _sroce_case='' _sroce_why='' _sroce_deferred=()
		_sroce_why_file=$wf
		SROCE_SKIP_FILE=$wf.skip
		trap _sroce_cleanup EXIT
		trap 'exit 143' TERM
		trap 'exit 130' INT
		"$@"
	) &
	wait $! || rc=$?
	# shellcheck disable=SC2034  # for the caller
	SUBTEST_RC=$rc
	case $rc in
	0) _subtest_put ok "$name" ;;
	"$KSFT_SKIP") _subtest_put skip "$name" "$(head -n1 "$wf.skip" 2>/dev/null)" ;;
	*)
		why=$(tail -n1 "$wf" 2>/dev/null)
		_subtest_put fail "$name" "${why:-exit $rc}"
		;;
	esac
	rm -f "$wf" "$wf.skip"
	return 0
}

# subtests_from_tap FILE PREFIX RC: the TAP lines of FILE - a test program's
# output: "ok - NAME", "not ok - NAME[ # WHY]", "ok - NAME # SKIP WHY", with
# or without a number after ok - as sub-cases "PREFIX: NAME". RC is the
# program's exit status: a program that failed without a "not ok" line to
# show for it (a crash, a time limit) adds a failed case "PREFIX". Returns 0.
subtests_from_tap() {
	local file=$1 prefix=$2 rc=$3 line st name why nfail=0 n=0
	_subtest_close
	while IFS= read -r line; do
		[[ $line =~ ^(not\ ok|ok)(\ [0-9]+)?\ -\ (.*)$ ]] || continue
		st=${BASH_REMATCH[1]} name=${BASH_REMATCH[3]} why=''
		if [[ $name == *' # '* ]]; then
			why=${name#* # } name=${name%% # *}
		fi
		n=$((n + 1))
		if [[ $st == 'not ok' ]]; then
			nfail=$((nfail + 1))
			_subtest_put fail "$prefix: $name" "$why"
		elif [[ $why == [Ss][Kk][Ii][Pp]* ]]; then
			why=${why#????}
			_subtest_put skip "$prefix: $name" "${why# }"
		else
			_subtest_put ok "$prefix: $name"
		fi
	done <"$file"
	if [[ $rc != 0 ]] && ((nfail == 0)); then
		_subtest_put fail "$prefix" "exit $rc after $n reported case(s)"
	elif ((n == 0)); then
		_subtest_put ok "$prefix"
	fi
	return 0
}

# pass_fail_to_tap <IN >OUT: the "PASS NAME ..." / "FAIL NAME ..." (or
# "PASS: NAME ...") lines of a verbs test program (rc_errors, rc_mw,
# hostile_ring) as TAP lines for subtests_from_tap, a failure's reason being
# the first indented "FAIL: ..." detail line since the previous verdict.
pass_fail_to_tap() {
	awk '
		/^--- / { why = "" }
		/^ +FAIL: / { if (why == "") { why = $0; sub(/^ *FAIL: */, "", why); gsub(/#/, "", why) } }
		/^PASS:? [^ ]+/ { print "ok - " $2; why = "" }
		/^FAIL:? [^ ]+/ { print "not ok - " $2 (why == "" ? "" : " # " why); why = "" }'
}

# subtests_failed: how many cases failed so far.
subtests_failed() { grep -c '^fail' "$SROCE_SUBTEST_FILE" || true; }

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
	# The open linear case ends with the test: its verdict is the test's.
	if [[ -n $_sroce_case ]]; then
		case $rc in
		0) _subtest_close ;;
		"$KSFT_SKIP") _subtest_put skip "$_sroce_case" "$_sroce_why" ;;
		143) _subtest_put fail "$_sroce_case" "terminated (SIGTERM: the time limit?)${_sroce_why:+; $_sroce_why}" ;;
		*) _subtest_put fail "$_sroce_case" "${_sroce_why:-exit $rc}" ;;
		esac
		_sroce_case=''
	fi
	if ((_sroce_in_subtest)); then
		[[ $rc == 0 || -z $_sroce_why ]] || printf '%s\n' "$_sroce_why" >>"$_sroce_why_file"
	fi
	for ((i = ${#_sroce_deferred[@]} - 1; i >= 0; i--)); do
		eval "${_sroce_deferred[i]}" || log "cleanup: '${_sroce_deferred[i]}' failed"
	done
	_sroce_deferred=()
	if ((!_sroce_in_subtest)); then
		# A failed case fails the test, however it ended.
		if [[ $rc == 0 || $rc == "$KSFT_SKIP" ]] && grep -q '^fail' "$SROCE_SUBTEST_FILE" 2>/dev/null; then
			log "$(grep -c '^fail' "$SROCE_SUBTEST_FILE") sub-case(s) failed"
			rc=$KSFT_FAIL
		fi
		[[ -z ${_sroce_own_subtest_file:-} ]] || rm -f "$SROCE_SUBTEST_FILE"
	fi
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

# provider_prefix: the provider's path without "-rdmav<N>.so" (what
# RDMAV_DRIVERS takes): build/user/libsroce, or SROCE_PROVIDER.
provider_prefix() { echo "${SROCE_PROVIDER:-$SROCE_ROOT/build/user/libsroce}"; }

# provider_so: the built provider, build/user/libsroce-rdmav<N>.so (N: the
# private ABI of the rdma-core it was built for, 34 or 65); nothing if none.
provider_so() {
	local f
	for f in "$(provider_prefix)"-rdmav*.so; do
		[[ -f $f ]] && echo "$f" && return 0
	done
	return 1
}

# provider_env: make libibverbs load the uninstalled provider
# build/user/libsroce-rdmav<N>.so (RDMAV_DRIVERS takes a path prefix), and
# show its warnings.
provider_env() {
	export RDMAV_DRIVERS=$SROCE_ROOT/build/user/libsroce
	export IBV_SHOW_WARNINGS=1
}

# --- small utilities ----------------------------------------------------------------

# sr_line [-v VAR] FILE: FILE's first line (a sysfs attribute), without
# starting a program: on the debug kernel under TCG a fork and exec of cat
# cost about 0.3 s. Printed, or with -v stored in VAR, which also saves the
# subshell of $(sr_line FILE). Fails, as cat would, if FILE cannot be read.
sr_line() {
	local _sr_v='' _sr_var=''
	if [[ $1 == -v ]]; then
		_sr_var=$2
		shift 2
	fi
	IFS= read -r _sr_v <"$1" || [[ -n $_sr_v ]] || return 1
	if [[ -n $_sr_var ]]; then
		printf -v "$_sr_var" '%s' "$_sr_v"
	else
		printf '%s\n' "$_sr_v"
	fi
}

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
		[[ "$(sr_line "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$idx" 2>/dev/null)" == "RoCE v2" ]] || continue
		echo "$idx"
		return 0
	done
	return 1
}

: "$KSFT_PASS"  # for tests that want to spell it out
