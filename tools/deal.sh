#!/bin/bash
# Sourced by tools/test-all.sh and tools/debug-kernel/test.sh: share a test
# list out among guests that run at once.
#
# deal N: reads "SECONDS NAME [first]" lines on stdin and deals the names
# to N guests: those marked "first" to guest 0, at the head of its list,
# then the rest longest first, each to the guest with the least time so far.
# Sets group[0..N-1] (" name name ...") and load[0..N-1] (their seconds).
deal() {
	local n=$1 g best secs name mark lines
	group=() load=()
	for ((g = 0; g < n; g++)); do group[g]='' load[g]=0; done
	lines=$(cat)
	while read -r secs name mark; do
		[[ $mark == first ]] || continue
		group[0]+=" $name" load[0]=$((load[0] + secs))
	done <<<"$lines"
	while read -r secs name mark; do
		[[ -n $name && $mark != first ]] || continue
		best=0
		for ((g = 1; g < n; g++)); do
			((load[g] < load[best])) && best=$g
		done
		group[best]+=" $name" load[best]=$((load[best] + secs))
	done < <(sort -rn <<<"$lines")
}
