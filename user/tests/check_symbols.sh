#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Check the built provider's dynamic interface:
#  - it exports nothing (libibverbs finds it through its constructor);
#  - it imports only IBVERBS_PRIVATE_<PABI>, IBVERBS_1.x and glibc symbols,
#    and every private one really exists in the libibverbs we run with;
#  - it needs only libibverbs.so.1 and libc.so.6 (libstdc++ is static);
#  - it is linked -z now and has no text relocations or SONAME;
#  - no libstdc++ exception or static-guard machinery got linked in (built
#    -fno-exceptions, a throwing std:: API or a function-local static with
#    a dynamic initialiser would still pull it from the static libstdc++).
set -eu

so=$1
ibverbs=$2
pabi=${3:-34}
fail=0

err() {
	echo "check_symbols: $*" >&2
	fail=1
}

[ -f "$so" ] || { err "no such file: $so"; exit 1; }

exports=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -x -e _init -e _fini || true)
[ -z "$exports" ] || err "exports symbols: $(echo $exports)"

# objdump -T: "... *UND* ... VERSION NAME" for imports.
imports=$(objdump -T "$so" | awk 'NF >= 2 && $0 ~ /\*UND\*/ {v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}')
[ -n "$imports" ] || err "no imports found (objdump failed?)"

echo "$imports" | while read -r ver name; do
	case "$ver" in
	IBVERBS_PRIVATE_"$pabi" | IBVERBS_1.* | GLIBC_2.*) ;;
	*)
		# Weak unversioned references the toolchain always emits.
		case "$name" in
		__gmon_start__ | _ITM_registerTMCloneTable | _ITM_deregisterTMCloneTable) ;;
		*) echo "bad import: $ver $name" ;;
		esac
		;;
	esac
done >"${TMPDIR:-/tmp}/sroce-bad-imports.$$"
if [ -s "${TMPDIR:-/tmp}/sroce-bad-imports.$$" ]; then
	err "$(cat "${TMPDIR:-/tmp}/sroce-bad-imports.$$")"
fi
rm -f "${TMPDIR:-/tmp}/sroce-bad-imports.$$"

provided=$(objdump -T "$ibverbs" | awk 'NF >= 2 && $0 !~ /\*UND\*/ && $(NF-1) ~ /^IBVERBS_/ {print $(NF-1) " " $NF}')
for ent in $(echo "$imports" | awk '$1 ~ /^IBVERBS_/ {print $1 ":" $2}'); do
	ver=${ent%%:*}
	name=${ent#*:}
	echo "$provided" | grep -q -x "$ver $name" ||
		err "$name@$ver is not provided by $ibverbs"
done

needed=$(readelf -d "$so" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $NF); print $NF}' | sort | tr '\n' ' ')
[ "$needed" = "libc.so.6 libibverbs.so.1 " ] || err "unexpected NEEDED: $needed"

dyn=$(readelf -d "$so")
echo "$dyn" | grep -q -E 'BIND_NOW|FLAGS_1.*NOW' || err "not linked with -z now"
echo "$dyn" | grep -q TEXTREL && err "has text relocations"
echo "$dyn" | grep -q SONAME && err "has a SONAME (should be a plain module)"

# Static symbols too (nm without -D); a stripped module has none to show.
eh=$(nm "$so" 2>/dev/null | awk '{print $NF}' |
	grep -E '^(__cxa_(throw|rethrow|begin_catch|end_catch|allocate_exception|guard_acquire|guard_release)|__gxx_personality_v0|_Unwind_Resume|_ZSt[0-9]*__throw_)' |
	sort -u || true)
[ -z "$eh" ] || err "libstdc++ exception/guard code linked in: $(echo $eh)"

private=$(echo "$imports" | awk -v v="IBVERBS_PRIVATE_$pabi" '$1 == v' | wc -l)
echo "check_symbols: $(echo "$imports" | wc -l) imports ($private private), needed: $needed"
[ $fail -eq 0 ] && echo "check_symbols: OK"
exit $fail
