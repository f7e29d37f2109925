#!/bin/bash
# Sourced by tools/test-all.sh and tools/debug-kernel/test.sh: share a test
# list out among guests that run at once.
#
# deal N: reads "SECONDS NAME" lines on stdin and deals the names to N
# guests, longest first, each to the guest with the least time so far.
# Sets group[0..N-1] (" name name ...") and load[0..N-1] (their seconds).
deal() {
	local n=$1 g best secs name
	group=() load=()
	for ((g = 0; g < n; g++)); do group[g]='' load[g]=0; done
	while read -r secs name; do
		best=0
		for ((g = 1; g < n; g++)); do
			((load[g] < load[best])) && best=$g
		done
		group[best]+=" $name" load[best]=$((load[best] + secs))
	done < <(sort -rn)
}
