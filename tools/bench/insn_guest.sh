#!/bin/bash
# The guest half of `make bench-insn` (tools/bench/run.sh --insn boots the
# VM with the instruction-counting QEMU plugin, build/bench/sroce_insn.so,
# and runs this in it; it is not meant to be run anywhere else).
#
# usage: tools/bench/insn_guest.sh [--out DIR] [--quick] [--reps N] [--tests "T..."]
#                                  [--sizes "S..."] [--mark PATH]
#   --out DIR      where insn-raw.jsonl goes (default /run/sroce-out)
#   --quick        send_bw only, fewer iterations (for trying the script out)
#   --reps N       measurements of each case (default 2: a spread to see)
#   --tests "T..." of send_bw read_bw write_bw (default: all three)
#   --sizes "S..." of 65536 64 (default: both)
#   --mark PATH    the marker program (default build/bench/insn_mark)
#
# Measures work as executed guest instructions instead of time. Around each
# perftest run the marker program (tools/bench/insn/insn_mark.c) executes a
# tagged NOP that the plugin recognises: it writes the tag and the kernel and
# user instruction totals of both vCPUs at that moment to the marks file on
# the host. Each case runs twice, with -n N and with -n 3N iterations; the
# difference between the two runs' instruction counts divided by the extra
# work (2N messages, or 2N x size bytes) is the cost of a message or of a
# byte, without the start-up, connection set-up and tear-down that both runs
# share. The first mark of a run is taken once the server listens, the second
# once both sides have exited.
#
# Cases, one device looping back to itself, event-driven (perftest -e: the
# processes sleep on completion channels instead of polling, so the counts
# are the stack's work and not spinning; but ib_write_bw, which has no -e:
# its user-space figures are polling, only its kernel ones are work):
#   sroce-loop  one sroce device on a dummy netdev in netns L (as make bench)
#   rxe-loop    one rdma_rxe device on a veth end in the initial netns
# ib_send_bw, ib_read_bw and ib_write_bw at 64 KiB and 64 B, each --reps
# times (the two runs of a repeat back to back).
#
# One JSON object per perftest run in DIR/insn-raw.jsonl:
#   {"topo", "stack", "test", "size", "iters", "rep", "events", "mark_begin",
#    "mark_end", "ctxt", "ok"}
# (ctxt: the guest's context switches between the marks, /proc/stat: with
# -e, how often the processes slept and were woken, which depends on timing)
# tools/bench/insn_report.py joins them with the plugin's marks.

# shellcheck disable=SC2016  # jq programs: the $names are jq's
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh
SROCE_TEST_NAME=bench-insn
# shellcheck source=selftests/lib_sroce.sh
source "$here/../../selftests/lib_sroce.sh"
# shellcheck source=tools/bench/lib_bench.sh
source "$here/lib_bench.sh"

outdir=/run/sroce-out quick=0 reps=2 mark=$here/../../build/bench/insn_mark
only_tests='' sizes="65536 64"
while [[ $# -gt 0 ]]; do
	case "$1" in
	--out) outdir=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--reps) reps=$2; shift 2 ;;
	--tests) only_tests=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--mark) mark=$2; shift 2 ;;
	*) fail "unknown argument $1" ;;
	esac
done
[[ -x "$mark" ]] || fail "no marker program $mark (make bench-insn-tools)"
[[ "$reps" =~ ^[0-9]+$ && $reps -ge 1 ]] || fail "--reps takes a number, 1 or more"

# N per size (the second run of a pair does 3N). What both runs of a pair
# share (process start-up, perftest's clock calibration, connection set-up
# and tear-down) costs about 250 M instructions and varies by some 10-30 M
# from run to run; the extra work, 2N messages, must be large against that:
# 1 to 2 G instructions here (64 KiB: 125 MiB; 64 B: 60000 messages), a
# few seconds a run under TCG with the plugin.
tests="send_bw read_bw write_bw"
declare -A iters=([65536]=1000 [64]=30000)
if ((quick)); then
	tests=send_bw
	iters=([65536]=500 [64]=10000)
fi
tests=${only_tests:-$tests}
for t in $tests; do
	[[ $t =~ ^(send_bw|read_bw|write_bw)$ ]] || fail "--tests: no test $t"
done
for s in $sizes; do
	[[ -n "${iters[$s]:-}" ]] || fail "--sizes: no size $s (65536 or 64)"
done

next_port=19000 next_tag=1
bench_start "$outdir" insn-raw.jsonl "tools/bench/run.sh --insn" \
	ib_write_bw ib_read_bw ib_send_bw jq

# --- topologies (as tools/bench/guest.sh's sroce-loop and rxe-loop) -------------
bench_loop_topologies insn i

# topo NAME: the namespace, device and GID of the current topology.
topo() {
	case "$1" in
	sroce-loop) ns=$nsl dev=isroce-l gid=$(sr_gid_of isroce-l 198.51.100.1) ;;
	rxe-loop) ns=- dev=irxe0 gid=$(sr_gid_of irxe0 203.0.113.1) ;;
	esac
}

# set_mark: run the marker with the next tag; the tag in $tag, the guest's
# context switches so far (/proc/stat) in $ctxt.
set_mark() {
	tag=$((next_tag++))
	"$mark" "$tag"
	ctxt=$(awk '$1 == "ctxt" { print $2 }' /proc/stat)
}

listening() { ns_exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# pt_run TOOL ARGS...: one perftest exchange on the current topology, marks
# around it: their tags in $mark_begin and $mark_end. Returns non-zero if
# either side failed.
pt_run() {
	local tool=$1 port=$((next_port++)) spid crc=0 src=0
	shift
	mark_begin='' mark_end='' ctxt_begin='' ctxt_end=''
	sr_untrapped ns_exec "$ns" timeout 300 "$tool" -d "$dev" -x "$gid" -F -p "$port" "$@" >"$tmp/srv" 2>&1 &
	spid=$!
	if ! wait_for "listening $ns $port || ! kill -0 $spid" 60 || ! kill -0 "$spid" 2>/dev/null; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		log "  $tool: the server did not listen: $(tail -n 3 "$tmp/srv")"
		return 1
	fi
	set_mark
	mark_begin=$tag ctxt_begin=$ctxt
	ns_exec "$ns" timeout 240 "$tool" -d "$dev" -x "$gid" -F -p "$port" "$@" 127.0.0.1 >"$tmp/cli" 2>&1 || crc=$?
	[[ $crc == 0 ]] || { sleep 1; kill "$spid" 2>/dev/null || true; }
	wait "$spid" || src=$?
	set_mark
	mark_end=$tag ctxt_end=$ctxt
	[[ $crc == 0 && $src == 0 ]] && return 0
	log "  $tool $* failed: client $crc, server $src"
	sed 's/^/  client| /' "$tmp/cli" | tail -n 15
	sed 's/^/  server| /' "$tmp/srv" | tail -n 5
	return 1
}

# one TEST SIZE ITERS REP: one measured run, recorded. Event-driven (-e)
# but for write_bw: perftest 4.5 refuses -e for WRITE ("Events feature not
# available on WRITE verb"), so its client polls.
one() {
	local test=$1 size=$2 n=$3 rep=$4 ok=true start=$SECONDS ev=(-e) events=true
	[[ $test != write_bw ]] || ev=() events=false
	pt_run "ib_$test" "${ev[@]}" -s "$size" -n "$n" || ok=false
	log "$(printf '%-10s %-9s %6s B  -n %-6s rep %s  marks %s-%s  %3ss  ok=%s' \
		"$cur" "$test" "$size" "$n" "$rep" "$mark_begin" "$mark_end" $((SECONDS - start)) "$ok")"
	jq -cn --arg t "$cur" --arg n "$test" --argjson s "$size" --argjson i "$n" \
		--argjson r "$rep" --argjson b "${mark_begin:-null}" --argjson e "${mark_end:-null}" \
		--argjson ev "$events" \
		--argjson ok "$ok" --argjson cs "$((${ctxt_end:-0} - ${ctxt_begin:-0}))" \
		'{topo: $t, stack: ($t | split("-")[0]), test: $n, size: $s, iters: $i, rep: $r,
		  events: $ev, mark_begin: $b, mark_end: $e, ctxt: $cs, ok: $ok}' >>"$raw"
}

log "sroce bench-insn: $(uname -r), $(nproc) CPUs, QEMU TCG with the sroce_insn plugin;" \
	"$reps repeats of -n N and -n 3N (64 KiB: N=${iters[65536]}, 64 B: N=${iters[64]})"
# The same order for both stacks, the repeats of one case back to back.
for cur in sroce-loop rxe-loop; do
	topo "$cur"
	log "=== $cur: $dev (GID $gid, ns $ns)"
	for test in $tests; do
		for size in $sizes; do
			for ((rep = 1; rep <= reps; rep++)); do
				one "$test" "$size" "${iters[$size]}" "$rep"
				one "$test" "$size" $((3 * iters[$size])) "$rep"
			done
		done
	done
done
log "raw results: $(wc -l <"$raw") runs in $raw"
