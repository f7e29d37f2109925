#!/bin/bash
# "cond && ok || not_ok" is fine here: ok never fails.
# shellcheck disable=SC2015
# Prove the VM harness can fail: a harness that always says "pass" is worse
# than none. Checks tools/vm/check-splat on sample logs, then boots a guest a
# few times with commands whose outcome is known.
#
# usage: tools/vm/test/harness-selftest.sh [--no-vm]   (--no-vm: log checks only)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
run=$repo/tools/vm/run
check_splat=$repo/tools/vm/check-splat
work=$repo/build/vm/harness-selftest
passed=0 failed=0

ok() { echo "ok: $*"; passed=$((passed + 1)); }
not_ok() { echo "FAIL: $*"; failed=$((failed + 1)); }

# expect_rc WANT NAME RUN-ARGS... (options, --, command): boot a guest, compare its exit status.
# The run's results stay in $work/NAME for post-mortems.
expect_rc() {
	local want=$1 name=$2 rc=0
	shift 2
	echo "--- $name: tools/vm/run $* (want exit $want)"
	"$run" -q --out "$work/$name" "$@" || rc=$?
	if [[ $rc == "$want" ]]; then
		ok "$name: exit $rc"
	else
		not_ok "$name: exit $rc, want $want (see $work/$name)"
		return 1
	fi
}

# (e) check-splat on sample logs; the expected verdict is in the file name:
# clean-* -> 0, splat-* -> 1 (kernel splat), user-* -> 2 (user-space crash).
for log in "$here"/logs/*.log; do
	name=${log##*/}
	case "$name" in
	clean-*) want=0 ;;
	splat-*) want=1 ;;
	user-*) want=2 ;;
	*) not_ok "check-splat: $name has no clean-/splat-/user- prefix"; continue ;;
	esac
	rc=0
	"$check_splat" "$log" >/dev/null || rc=$?
	if [[ $rc == "$want" ]]; then
		ok "check-splat $name: $rc"
	else
		not_ok "check-splat $name: exit $rc, want $want"
	fi
done
# --ignore lets a test that provokes a splat on purpose say so.
rc=0
"$check_splat" --ignore 'splat_test' "$here/logs/splat-warn.log" >/dev/null || rc=$?
if [[ $rc == 0 ]]; then ok "check-splat --ignore"; else not_ok "check-splat --ignore: exit $rc, want 0"; fi

if [[ "${1:-}" == --no-vm ]]; then
	echo "$passed passed, $failed failed"
	[[ $failed == 0 ]]
	exit
fi

rm -rf "$work"
mkdir -p "$work"

# (a), (b): the command's status comes through.
expect_rc 0 true -- true || true
expect_rc 1 false -- false || true

# Output capture, environment and cwd in the guest.
# shellcheck disable=SC2016  # expanded in the guest
if SROCE_SELFTEST_TOKEN="a b'c" expect_rc 7 env -- bash -c \
	'echo "cwd=$PWD guest=$SROCE_IN_GUEST root=$SROCE_ROOT token=$SROCE_SELFTEST_TOKEN"; echo to-stderr >&2; exit 7'; then
	want="cwd=$repo guest=1 root=$repo token=a b'c"
	if [[ "$(cat "$work/env/stdout.txt")" == "$want" ]]; then
		ok "env: stdout.txt has cwd, SROCE_IN_GUEST, SROCE_ROOT, SROCE_* passed through"
	else
		not_ok "env: stdout.txt is '$(cat "$work/env/stdout.txt")', want '$want'"
	fi
	grep -qx to-stderr "$work/env/stderr.txt" && ok "env: stderr.txt captured" ||
		not_ok "env: stderr.txt lacks the marker"
	grep -q 'Linux version' "$work/env/dmesg.txt" && ok "env: dmesg.txt saved" ||
		not_ok "env: dmesg.txt missing or empty"
	grep -q to-stderr "$work/env/console.log" && ok "env: console.log saved" ||
		not_ok "env: console.log lacks the command's output"
fi

# (c) a command that outlives --timeout.
expect_rc 124 timeout --timeout 10 -- sleep 120 || true

# (d) a WARN in the guest kernel fails the run although the command passes;
# loading the same out-of-tree module quietly (it taints the kernel) does not.
ko=$("$here/build-module.sh" 2>"$work/build-module.log") || {
	not_ok "could not build the splat_test module: $(tail -n 5 "$work/build-module.log")"
	ko=
}
if [[ -n "$ko" ]]; then
	expect_rc 0 module-quiet -- insmod "$ko" || true
	if expect_rc 125 module-warn -- insmod "$ko" warn=1; then
		grep -q 'splat_test' "$work/module-warn/splat.txt" &&
			ok "module-warn: splat.txt names the WARN in splat_test" ||
			not_ok "module-warn: splat.txt does not show the WARN"
	fi
fi

# A user-space crash (our provider runs inside user processes) is its own failure.
expect_rc 123 segfault -- /usr/bin/python3 -c 'import ctypes; ctypes.string_at(0)' || true

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
