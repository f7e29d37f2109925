#!/bin/bash
# Static checks on kernel/: checkpatch --strict and sparse (make C=2) with
# W=1. Any finding fails. Usage: tools/check-kernel.sh CHECKPATCH KDIR
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHECKPATCH=$1
KDIR=$2
rc=0

cd "$ROOT/kernel"
mapfile -t srcs < <(git -C "$ROOT" ls-files -- 'kernel/*.c' 'kernel/*.h' ':!kernel/proto/test/*' | sed 's|^kernel/||')
[[ ${#srcs[@]} -gt 0 ]] || { echo "check-kernel: no sources" >&2; exit 1; }

# Ignored everywhere: out-of-tree repo paths and SPDX placement rules that
# only make sense inside the kernel tree. The compat header is the one place
# allowed to test LINUX_VERSION_CODE (checkpatch also misreads
# LINUX_VERSION_CODE as a constant on the left of a comparison). The
# tracepoint header is laid out as the kernel's own (include/trace/events/):
# TRACE_EVENT()'s parts one per line, each opening its own parenthesis.
common=(--strict --no-tree --quiet --show-types --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG)
for f in "${srcs[@]}"; do
	extra=()
	[[ $f == sroce_compat.h ]] && extra=(--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON,FILE_PATH_CHANGES,SPDX_LICENSE_TAG)
	[[ $f == sroce_trace.h ]] && extra=(--ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT,FILE_PATH_CHANGES,SPDX_LICENSE_TAG)
	if ! out=$("$CHECKPATCH" "${common[@]}" "${extra[@]}" -f "$f" 2>&1); then
		echo "$out"
		rc=1
	elif [[ -n "$out" ]]; then
		echo "$out"
		rc=1
	fi
done
[[ $rc -eq 0 ]] && echo "check-kernel: checkpatch --strict clean (${#srcs[@]} files)"

# The debug lane's proof (make test-debug-inject) patches a bug into a copy
# of these sources: a patch that no longer applies after a refactor must fail
# here, in seconds, not at the end of CI's debug lane.
for p in "$ROOT"/tools/debug-kernel/inject-*.patch; do
	if ! out=$(patch -p1 -d "$ROOT" --dry-run --force <"$p" 2>&1); then
		echo "$out"
		echo "check-kernel: ${p#"$ROOT"/} no longer applies to kernel/" >&2
		rc=1
	fi
done

# sparse on every file (C=2 forces a re-check even when up to date).
# Its own make, with its own jobs (not the caller's jobserver, if any).
log=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j"$(nproc)" -C "$KDIR" M="$ROOT/kernel" C=2 W=1 modules 2>&1) ||
	{ echo "$log"; exit 1; }
findings=$(grep -E "warning:|error:" <<<"$log" || true)
if [[ -n "$findings" ]]; then
	echo "$findings"
	echo "check-kernel: sparse/W=1 findings" >&2
	rc=1
else
	echo "check-kernel: sparse + W=1 clean"
fi
exit $rc
