#!/bin/bash
# Run the selftests (selftests/*.sh) inside the VM guest, kselftest-style:
# TAP on stdout, each test's own output indented with "# ", each test's
# sub-cases as an indented TAP subtest block before its own line, then a
# final "N passed, N failed, N skipped" line that counts sub-cases (a test
# that reported none counts as one). Exit 0 iff nothing failed.
#
# usage: selftests/run.sh [--force] [--list] [--timeout SECS]
#                          [--claim DIR [--steal "TEST..."]] [TEST...]
#   TEST      a test name, with or without .sh, or a glob ('sroce_*'); the tests
#             run in the order given (a glob's in directory order)
#   --force   run outside a tools/vm/run guest (tests load modules and
#             reconfigure the network: don't do this on a machine you care about)
#   --timeout default per-test limit (300 s); a test file can set its own with
#             a "# timeout: N" line
#   --claim DIR  guests that share DIR (tools/vm/run --share) share out their
#             tests as they go: a test runs only in the guest that first
#             creates DIR/TEST (mkdir is atomic); one another guest took is
#             not reported here (it is there), and the TAP plan comes last;
#             when a test ends, DIR/TEST/done appears (tools/test-all.sh
#             waits for it to start the other guests after the timing tests)
#   --steal   with --claim: once its own tests are done, this guest runs
#             those of these (other guests' tests, in the order given) that
#             no guest has started yet
# SROCE_TIMEOUT_SCALE=N multiplies every test's limit (slow debug kernels).
# SROCE_SKIP_TESTS="a b" reports those tests as skipped without running them,
# with SROCE_SKIP_REASON as the reason (CI: the tests its debug lane runs).
#
# A test passes with exit 0, is skipped with exit 4 (kselftest's KSFT_SKIP;
# lib.sh's skip() also records the reason), and fails otherwise - or when the
# kernel log gained a splat while it ran, even if it exited 0.
# Sub-cases: lib.sh's subtest_* helpers append "ok|fail|skip<TAB>NAME<TAB>WHY"
# lines to $SROCE_SUBTEST_FILE, one file per test. Each counts as one pass,
# failure or skip; a test that failed (exit code, time limit, splat) without
# a failed sub-case to show for it adds one failure of its own.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SROCE_ROOT=${SROCE_ROOT:-$(cd "$here/.." && pwd)}
check_splat=$SROCE_ROOT/tools/vm/check-splat
readonly KSFT_SKIP=4

force=0 list=0 default_timeout=300 filters=() claim='' steal=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--force) force=1 ;;
	--list) list=1 ;;
	--timeout) default_timeout=$2; shift ;;
	--claim) claim=$2; shift ;;
	--steal) read -ra steal <<<"$2"; shift ;;
	-h | --help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) filters+=("$1") ;;
	esac
	shift
done

tests=()
for f in "$here"/*.sh; do
	name=${f##*/}
	name=${name%.sh}
	[[ $name != run && $name != lib && $name != lib_* ]] || continue
	tests+=("$name")
done

# In the order of the filters (a glob's matches in directory order), each
# test once.
if [[ ${#filters[@]} -gt 0 ]]; then
	selected=()
	for flt in "${filters[@]}"; do
		flt=${flt##*/}
		flt=${flt%.sh}
		hit=0
		for name in "${tests[@]}"; do
			# shellcheck disable=SC2053  # $flt is a glob on purpose
			[[ $name == $flt ]] && hit=1
		done
		[[ $hit == 1 ]] || { echo "run.sh: no test matches '$flt'" >&2; exit 2; }
	done
	for flt in "${filters[@]}"; do
		flt=${flt##*/}
		flt=${flt%.sh}
		for name in "${tests[@]}"; do
			# shellcheck disable=SC2053
			[[ $name == $flt && " ${selected[*]} " != *" $name "* ]] && selected+=("$name")
		done
	done
	tests=("${selected[@]}")
fi

if [[ $list == 1 ]]; then
	printf '%s\n' "${tests[@]}"
	exit 0
fi

# --claim: DIR must be there (a guest that cannot claim would run nothing,
# or everything twice); --steal: known tests only, none of this guest's own.
if [[ -n $claim ]]; then
	[[ -d $claim && -w $claim ]] || { echo "run.sh: --claim $claim: not a writable directory" >&2; exit 2; }
fi
[[ ${#steal[@]} == 0 || -n $claim ]] || { echo "run.sh: --steal needs --claim" >&2; exit 2; }
for name in "${steal[@]}"; do
	[[ -f $here/$name.sh ]] || { echo "run.sh: --steal: no test $name" >&2; exit 2; }
done

if [[ -z "${SROCE_IN_GUEST:-}" && $force == 0 ]]; then
	echo "run.sh: refusing to run outside the test VM: the tests load kernel modules" >&2
	echo "run.sh: and reconfigure the network. Use: tools/vm/run -- selftests/run.sh" >&2
	echo "run.sh: (or --force, on a machine you don't mind breaking)" >&2
	exit 2
fi

test_timeout() { # the "# timeout: N" line of a test file, else the default
	local t
	t=$(sed -n 's/^#[[:space:]]*timeout:[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$1" | head -n1)
	echo "$((${t:-$default_timeout} * ${SROCE_TIMEOUT_SCALE:-1}))"
}

# New kernel log lines since MARKER (all of it if the marker scrolled out of
# the ring buffer: better a stale splat than a missed one).
log_since() {
	local all
	all=$(dmesg 2>/dev/null) || return 0
	if grep -qF -- "$1" <<<"$all"; then
		sed -n "\\|$1|,\$p" <<<"$all"
	else
		echo "$all"
	fi
}

# forks: processes (and threads) the kernel has started since boot
# (/proc/stat), read without starting one. A test's share is what a slow
# kernel makes costly: a fork and exec on the debug kernel under TCG.
forks() {
	local k v _
	while read -r k v _; do
		[[ $k == processes ]] && { echo "$v"; return; }
	done </proc/stat
	echo 0
}
kmsg() { echo "$*" >/dev/kmsg 2>/dev/null || true; }

passed=0 failed=0 skipped=0 n=0
fpassed=0 ffailed=0 fskipped=0
echo "TAP version 14"
[[ -n $claim ]] || echo "1..${#tests[@]}"
read -ra skip_tests <<<"${SROCE_SKIP_TESTS:-}"
# This guest's own tests, then the ones it may take over (--steal).
queue=("${tests[@]}")
for name in "${steal[@]}"; do
	[[ " ${tests[*]} " == *" $name "* ]] || queue+=("$name")
done
for ((i = 0; i < ${#queue[@]}; i++)); do
	name=${queue[i]}
	if [[ -n $claim ]] && ! mkdir "$claim/$name" 2>/dev/null; then
		((i >= ${#tests[@]})) || echo "# $name: run by another guest (--claim)"
		continue
	fi
	((i < ${#tests[@]})) || echo "# $name: taken over from another guest (--steal)"
	n=$((n + 1))
	if [[ " ${skip_tests[*]} " == *" $name "* ]]; then
		echo "ok $n $name # SKIP ${SROCE_SKIP_REASON:-in SROCE_SKIP_TESTS}"
		skipped=$((skipped + 1)) fskipped=$((fskipped + 1))
		[[ -z $claim ]] || : >"$claim/$name/done"
		continue
	fi
	file=$here/$name.sh
	limit=$(test_timeout "$file")
	skip_file=$(mktemp)
	sub_file=$(mktemp)
	marker="sroce-selftest: start $name $$.$n.$RANDOM"
	kmsg "$marker"
	echo "# selftests: $name (timeout ${limit}s)"
	start=$SECONDS
	forks0=$(forks)
	# timeout(1) gives the test its own process group and signals all of it.
	SROCE_TEST_NAME=$name SROCE_SKIP_FILE=$skip_file SROCE_SUBTEST_FILE=$sub_file \
		timeout -k 10 "$limit" bash "$file" </dev/null 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	kmsg "sroce-selftest: end $name rc=$rc"
	echo "# $name: exit $rc after $((SECONDS - start))s"
	echo "# $name: $(($(forks) - forks0)) processes started"

	splat_rc=0
	splat=$(log_since "$marker" | "$check_splat" -) || splat_rc=$?
	if [[ $splat_rc != 0 ]]; then
		# shellcheck disable=SC2001
		sed 's/^/# /' <<<"$splat"
	fi

	# The sub-cases, as a TAP subtest block, and their counts.
	sp=0 sf=0 ss=0 k=0
	while IFS=$'\t' read -r st sname why; do
		[[ -n $st ]] || continue
		((k == 0)) && echo "    # Subtest: $name"
		k=$((k + 1))
		case $st in
		ok) echo "    ok $k - $sname"; sp=$((sp + 1)) ;;
		fail) echo "    not ok $k - $sname${why:+ # $why}"; sf=$((sf + 1)) ;;
		*) echo "    ok $k - $sname # SKIP ${why:-no reason given}"; ss=$((ss + 1)) ;;
		esac
	done <"$sub_file"
	if ((k > 0)); then
		echo "    1..$k"
		echo "# $name: $k sub-cases: $sp passed, $sf failed, $ss skipped"
	fi

	verdict=pass
	if [[ $splat_rc == 1 ]]; then
		echo "not ok $n $name # kernel splat during $name (exit $rc)"
		verdict=splat
	elif [[ $splat_rc == 2 ]]; then
		echo "not ok $n $name # user-space crash during $name (exit $rc)"
		verdict=splat
	elif [[ $splat_rc != 0 ]]; then
		echo "not ok $n $name # check-splat failed ($splat_rc)"
		verdict=splat
	elif [[ $rc == 0 && $sf == 0 ]]; then
		echo "ok $n $name"
	elif [[ $rc == "$KSFT_SKIP" && $sf == 0 ]]; then
		reason=$(head -n1 "$skip_file")
		echo "ok $n $name # SKIP ${reason:-no reason given}"
		verdict=skip
	elif [[ $rc == 124 || $rc == 137 ]]; then
		echo "not ok $n $name # TIMEOUT ${limit} seconds"
		verdict=fail
	elif [[ $rc == 0 || $rc == "$KSFT_SKIP" ]]; then
		echo "not ok $n $name # $sf sub-case(s) failed (exit $rc)"
		verdict=fail
	else
		echo "not ok $n $name # exit=$rc"
		verdict=fail
	fi
	case $verdict in
	pass) fpassed=$((fpassed + 1)) ;;
	skip) fskipped=$((fskipped + 1)) ;;
	*) ffailed=$((ffailed + 1)) ;;
	esac
	if ((k == 0)); then
		# No sub-cases: the test counts as one.
		case $verdict in
		pass) passed=$((passed + 1)) ;;
		skip) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)) ;;
		esac
	else
		passed=$((passed + sp)) failed=$((failed + sf)) skipped=$((skipped + ss))
		# A failure no sub-case accounts for (exit code, time limit), or a
		# splat (never a sub-case's), is one more.
		if [[ $verdict == splat ]] || [[ $verdict == fail && $sf == 0 ]]; then
			failed=$((failed + 1))
		fi
	fi
	rm -f "$skip_file" "$sub_file"
	[[ -z $claim ]] || : >"$claim/$name/done"
done

[[ -z $claim ]] || echo "1..$n"
echo "# test files: $n: $fpassed passed, $ffailed failed, $fskipped skipped;" \
	"the counts below are of their sub-cases"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed == 0 && $ffailed == 0 ]]
