#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Lint the userspace provider: clang-format (no changes allowed) and
# clang-tidy (warnings are errors). Usage: user/check.sh [BUILD_DIR]
# BUILD_DIR must hold compile_commands.json (default: build/user, configured
# here if missing). The top-level "make check" calls this.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build/user}
fmt=${CLANG_FORMAT:-clang-format}
tidy=${CLANG_TIDY:-clang-tidy}

if [ ! -f "$build/compile_commands.json" ]; then
	cmake -S "$here" -B "$build" -DSROCE_WERROR=ON >/dev/null
fi
# Generated headers (config.h) must exist before clang-tidy parses.
cmake --build "$build" --target sroce >/dev/null

cd "$here"
files=$(find src tests -name '*.cpp' -o -name '*.h' | sort)

echo "clang-format: $(echo "$files" | wc -l) files"
# shellcheck disable=SC2086
"$fmt" --dry-run --Werror $files

units=$(echo "$files" | grep '\.cpp$')
echo "clang-tidy: $(echo "$units" | wc -l) translation units"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
# In parallel, a few translation units per clang-tidy process.
# shellcheck disable=SC2086
printf '%s\n' $units | xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet >"$out" 2>&1 || status=1
grep -v 'warnings\{0,1\} generated\.$' "$out" >&2 || true
if [ $status -ne 0 ]; then
	echo "clang-tidy: FAILED" >&2
	exit 1
fi
echo "check: OK"
