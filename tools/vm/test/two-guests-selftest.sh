#!/bin/bash
# Prove tools/vm/two-guests can fail, and that its peer jobs work: boots the
# two guests once with tools/vm/test/two-guests-peer.sh as guest A's command,
# which checks the job machinery (status, output, limit, marks, numbering
# from subshells) and then logs a fake WARNING in guest B. The run must
# report those checks as passed and guest B's kernel log as a splat (exit
# non-zero, "guest B: kernel splat" in its TAP). By hand (about a minute;
# not part of make test):
#
#   tools/vm/test/two-guests-selftest.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=$repo/build/vm/two-guests-selftest
log=$out.log
mkdir -p "$out"
rc=0
"$repo/tools/vm/two-guests" --timeout 180 --out "$out" -- tools/vm/test/two-guests-peer.sh >"$log" 2>&1 || rc=$?
cat "$log"
bad=0
(($(grep -cE '^ok [1-5] - ' "$log") == 5)) || { echo "FAIL: the peer job checks did not all pass"; bad=1; }
grep -qE '^not ok [0-9]+ - guest B: kernel splat' "$log" || { echo "FAIL: the splat in guest B went unnoticed"; bad=1; }
grep -qE '^ok [0-9]+ - guest A: ' "$log" || { echo "FAIL: guest A was not clean"; bad=1; }
[[ $rc != 0 ]] || { echo "FAIL: tools/vm/two-guests exited 0 despite a splat in guest B"; bad=1; }
if ((bad)); then
	echo "two-guests-selftest: 0 passed, 1 failed"
	exit 1
fi
echo "two-guests-selftest: 1 passed, 0 failed"
