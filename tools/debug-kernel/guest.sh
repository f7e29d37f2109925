#!/bin/bash
# The debug lane inside the guest (started by tools/debug-kernel/test.sh
# through tools/vm/run on the debug kernel):
#  1. read back from the running kernel which debug options are active
#     (/proc/config.gz, and each one's runtime trace: the KASAN banner,
#     /proc/lockdep, the kmemleak and debug-objects debugfs files, the
#     sanitizer entry points in /proc/kallsyms) and that the sroce.ko under
#     test is instrumented; a missing one fails the lane;
#  2. selftests/run.sh with the tests given (KASAN, lockdep, UBSAN, list,
#     debug-objects reports fail the test they happen in, through
#     tools/vm/check-splat);
#  3. kmemleak: two scans, a pause between them; a leak whose backtrace
#     involves sroce fails the lane (see kmemleak_check below);
#  4. the checks are still on at the end: lockdep did not turn itself off,
#     kmemleak did not disable itself.
# Ends with "N passed, N failed, N skipped" over the selftests plus the lane's
# own checks (debug-options, kmemleak, debug-still-on).
#
# usage (in the guest): tools/debug-kernel/guest.sh TEST...
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tools/summary.sh
source "$root/tools/summary.sh"
ko=${SROCE_KO:-$root/kernel/sroce.ko}
passed=0 failed=0 skipped=0

say() { echo "debug-lane: $*"; }
verdict() { # NAME OK(0/1) [WHY]
	if [[ $2 == 0 ]]; then
		say "ok: $1"
		passed=$((passed + 1))
	else
		say "FAIL: $1${3:+: $3}"
		failed=$((failed + 1))
	fi
}

# --- 1. which debug options are active --------------------------------------------
say "kernel $(uname -r): $(cut -d' ' -f1-3 /proc/version | cut -c1-80)"
declare -A cfg=()
if [[ -r /proc/config.gz ]]; then
	while IFS='=' read -r k v; do
		cfg[$k]=$v
	done < <(zcat /proc/config.gz | grep -E '^CONFIG_[A-Z0-9_]+=')
fi
# shellcheck disable=SC2034  # used in an opt runtime test below (eval)
klog=$(dmesg 2>/dev/null)
# The kallsyms entry points looked for below, read in one pass (it is big).
# shellcheck disable=SC2034  # used in opt runtime tests below (eval)
syms=$(grep -E ' (__might_sleep|__ubsan_handle_out_of_bounds|__list_add_valid)$' /proc/kallsyms)
ksyms() { grep -qE " $1\$" <<<"$syms"; }
bad=()
# opt LABEL CONFIG_OPTION... -- RUNTIME-TEST...: the CONFIG_OPTIONs are set in
# /proc/config.gz, and the runtime test (a command line, eval'ed) succeeds.
opt() {
	local label=$1 missing=()
	shift
	while [[ $# -gt 0 && $1 != -- ]]; do
		[[ -n "${cfg[$1]:-}" && "${cfg[$1]}" != n ]] || missing+=("$1")
		shift
	done
	shift
	if [[ ${#missing[@]} -gt 0 ]]; then
		say "  $label: OFF (${missing[*]} not set in /proc/config.gz)"
		bad+=("$label")
	elif ! eval "$*" >/dev/null 2>&1; then
		say "  $label: configured, but not active: '$*' failed"
		bad+=("$label")
	else
		say "  $label: on ($*)"
	fi
}
say "debug options active in the running kernel (read back from /proc/config.gz and runtime state):"
if [[ ${#cfg[@]} == 0 ]]; then
	say "  /proc/config.gz unreadable (CONFIG_IKCONFIG_PROC off?)"
	bad+=(IKCONFIG_PROC)
fi
opt "KASAN generic, inline, vmalloc" CONFIG_KASAN CONFIG_KASAN_GENERIC CONFIG_KASAN_INLINE CONFIG_KASAN_VMALLOC -- \
	"grep -q 'KernelAddressSanitizer initialized' <<<\"\$klog\""
opt "lockdep (PROVE_LOCKING, PROVE_RCU)" CONFIG_PROVE_LOCKING CONFIG_PROVE_RCU CONFIG_LOCKDEP -- \
	"[[ -r /proc/lockdep ]] && grep -qE 'debug_locks: +1' /proc/lockdep_stats"
opt "DEBUG_ATOMIC_SLEEP" CONFIG_DEBUG_ATOMIC_SLEEP -- "ksyms __might_sleep"
opt "UBSAN bounds" CONFIG_UBSAN CONFIG_UBSAN_BOUNDS -- "ksyms __ubsan_handle_out_of_bounds"
opt "DEBUG_LIST" CONFIG_DEBUG_LIST -- "ksyms __list_add_valid"
opt "DEBUG_OBJECTS (timers, work, free)" CONFIG_DEBUG_OBJECTS CONFIG_DEBUG_OBJECTS_TIMERS CONFIG_DEBUG_OBJECTS_WORK \
	CONFIG_DEBUG_OBJECTS_FREE -- "[[ -r /sys/kernel/debug/debug_objects/stats ]]"
opt "KMEMLEAK" CONFIG_DEBUG_KMEMLEAK -- "[[ -r /sys/kernel/debug/kmemleak ]] && cat /sys/kernel/debug/kmemleak"
# The module under test carries the instrumentation too.
vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null)
if [[ "$vermagic " == "$(uname -r) "* ]]; then
	say "  $ko: vermagic $(uname -r)"
else
	say "  $ko: vermagic '$vermagic' does not match $(uname -r)"
	bad+=("sroce.ko vermagic")
fi
if grep -qa __asan_report "$ko" && grep -qa __ubsan_handle "$ko"; then
	say "  sroce.ko: KASAN and UBSAN instrumented (__asan_report*, __ubsan_handle* calls)"
else
	say "  sroce.ko: not instrumented (no __asan_report*/__ubsan_handle* references)"
	bad+=("sroce.ko instrumentation")
fi
say "  command line: $(cat /proc/cmdline)"
verdict debug-options "${#bad[@]}" "$(IFS=';'; echo "${bad[*]:-}")"

# --- 2. the selftests --------------------------------------------------------------
# One run.sh per test, in the order given.
: >/run/debug-lane-selftests.txt
# SROCE_DEBUG_STOP_ON_REPORT=REGEX (prove-inject.sh): once the kernel log has a
# report matching REGEX with sroce in its next 40 lines, the running test
# is stopped, the rest are not run and the lane fails: the proof that the
# lane catches an injected bug needs nothing more.
stop_re=${SROCE_DEBUG_STOP_ON_REPORT:-}
stopped=''
# run_one runs in a pipeline (a subshell): it leaves a flag file.
rm -f /run/debug-lane-stopped
report_seen() { dmesg 2>/dev/null | grep -A40 -E "$stop_re" | grep -q sroce; }
run_one() { # TEST: selftests/run.sh TEST, stopped early on a report (see above)
	if [[ -z $stop_re ]]; then
		"$root/selftests/run.sh" "$1"
		return
	fi
	setsid "$root/selftests/run.sh" "$1" &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if report_seen; then
			say "a report matching '$stop_re' involves sroce: stopping $1 and the lane"
			kill -- -"$pid" 2>/dev/null
			sleep 2
			kill -9 -- -"$pid" 2>/dev/null
			echo "$1" >/run/debug-lane-stopped
			break
		fi
		sleep 2
	done
	wait "$pid"
}
for t in "$@"; do
	if [[ -n $stopped ]]; then
		say "test $t: not run (the lane stopped at a report)"
		continue
	fi
	run_one "$t" | tee /run/debug-lane-one.txt
	[[ ! -s /run/debug-lane-stopped ]] || stopped=$(cat /run/debug-lane-stopped)
	if [[ -n $stopped ]]; then
		verdict "selftests $t" 1 "stopped at a kernel report involving sroce"
		continue
	fi
	cat /run/debug-lane-one.txt >>/run/debug-lane-selftests.txt
	if read -r p f s < <(summary_counts /run/debug-lane-one.txt); then
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
		# One line per finished test (its sub-cases): what .ci/run adds up
		# when CI's deadline stops the lane before its closing line.
		say "test $t: $p passed, $f failed, $s skipped"
	else
		verdict "selftests $t" 1 "selftests/run.sh printed no summary"
	fi
done
say "time per test:"
# (prefixed: CI's log shows the lane's "debug-lane:" lines)
sed -n 's/^# \([a-z0-9_]*\): exit \([0-9]*\) after \([0-9]*s\)$/debug-lane:   \1 \3 (exit \2)/p' /run/debug-lane-selftests.txt
say "processes started per test:"
sed -n 's/^# \([a-z0-9_]*\): \([0-9]*\) processes started$/debug-lane:   \1 \2/p' /run/debug-lane-selftests.txt
grep -E '^ok 1 .*# SKIP' /run/debug-lane-selftests.txt | sed 's/^/  /' || true

# --- 3. kmemleak ----------------------------------------------------------------------
# A leak "involves sroce" when its allocation backtrace has a sroce symbol,
# or a frame in an unloaded module: kmemleak symbolizes at print time, and the
# tests unload sroce.ko (and its test module) - the only modules this lane
# unloads - so such frames print as bare addresses ("[<...>] 0xffffffffc0123456").
# Other leaks (boot-time false positives of the rest of the kernel) are
# listed, not failed.
kmemleak_check() {
	local f=/sys/kernel/debug/kmemleak report=/run/kmemleak.txt n_all n_ours
	[[ -w $f ]] || { verdict kmemleak 1 "$f is not there"; return; }
	# Let RCU callbacks and deferred work free what they will, then scan twice
	# (an object must stay unreferenced for a whole scan period).
	sleep 5
	echo scan >"$f" || { verdict kmemleak 1 "scan failed (kmemleak disabled itself?)"; return; }
	sleep 5
	echo scan >"$f" || { verdict kmemleak 1 "second scan failed"; return; }
	cat "$f" >"$report"
	awk -v ours=/run/kmemleak-sroce.txt -v other=/run/kmemleak-other.txt '
		function flush() {
			if (rec == "") return
			if (rec ~ /sroce/ || rec ~ /\] 0x[0-9a-f]+\n/) { print rec > ours; n_ours++ }
			else { print rec > other; n_other++ }
			rec = ""
		}
		/^unreferenced object/ { flush() }
		{ rec = rec $0 "\n" }
		END { flush(); printf "%d %d\n", n_ours + n_other, n_ours }
	' "$report" >/run/kmemleak-counts
	: >>/run/kmemleak-sroce.txt
	: >>/run/kmemleak-other.txt
	read -r n_all n_ours </run/kmemleak-counts
	say "kmemleak: $n_all suspected leak(s) in the whole kernel, $n_ours involving sroce"
	if ((n_all > n_ours)); then
		say "kmemleak: the first of the $((n_all - n_ours)) not involving sroce (not failing the lane):"
		awk '/^unreferenced object/ { n++ } n <= 2' /run/kmemleak-other.txt | head -n 40 | sed 's/^/  | /'
	fi
	if ((n_ours > 0)); then
		sed 's/^/  | /' /run/kmemleak-sroce.txt
		verdict kmemleak 1 "$n_ours leak(s) involving sroce"
	else
		verdict kmemleak 0
	fi
}
t=$SECONDS
if [[ -n $stopped ]]; then
	say "kmemleak: not scanned (the lane stopped at a report)"
else
	kmemleak_check
	say "kmemleak scans: $((SECONDS - t)) s"
fi

# --- 4. the checkers are still on ----------------------------------------------------------
off=()
grep -qsE 'debug_locks: +1' /proc/lockdep_stats || off+=("lockdep turned itself off (after a report?)")
klog=$(dmesg 2>/dev/null)
if grep -qE 'Kernel memory leak detector disabled|kmemleak: .*disabled' <<<"$klog"; then
	off+=("kmemleak disabled itself")
fi
if grep -q 'ODEBUG: .*disabled' <<<"$klog"; then
	off+=("debug objects disabled themselves")
fi
verdict debug-still-on "${#off[@]}" "$(IFS=';'; echo "${off[*]:-}")"

echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed == 0 ]]
