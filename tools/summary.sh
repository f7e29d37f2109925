#!/bin/bash
# Sourced by the test drivers (tools/test-all.sh, .ci/run, the debug-kernel
# lane): the one parser of the summary line every test layer ends with,
# "N passed, N failed[, N skipped]".
#
# summary_counts LOG [--prefixed]: prints "P F S" from the last such line
# of LOG (S is 0 when the line has no skipped count); with --prefixed the
# line may also start with "part: " (tools/test-all.sh's part logs).
# Fails, printing nothing, when LOG has no such line.
summary_counts() {
	local re='^[0-9]+ passed, [0-9]+ failed' line
	[[ ${2:-} == --prefixed ]] && re='^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed'
	line=$(grep -E "$re" "$1" 2>/dev/null | tail -n1) || true
	[[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)? ]] || return 1
	echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[4]:-0}"
}
