#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Build the libFuzzer targets with clang and run each for a bounded time:
# run-fuzz.sh [SECONDS] (default 60 each). fuzz_parse: sroce_pkt_parse and
# the ICRC; fuzz_rules: the transport's rules (responder, completer,
# go-back-N). The checked-in seeds in corpus/parse and corpus/rules are
# read, never written; new inputs go to a scratch corpus and crashes to
# $FUZZ_OUT (default: a fresh temp dir). Needs clang and
# libclang-rt-dev (Debian: clang-14 libclang-rt-14-dev).
set -euo pipefail

secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
proto=$(cd "$here/.." && pwd)
out=${FUZZ_OUT:-$(mktemp -d /tmp/sroce-fuzz.XXXXXX)}
cc=${CC:-}
if [[ -z "$cc" ]]; then
	for c in clang-14 clang; do
		if command -v "$c" >/dev/null; then
			cc=$c
			break
		fi
	done
fi
if [[ -z "$cc" ]]; then
	echo "run-fuzz: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
	exit 2
fi

mkdir -p "$out/crashes"
# fuzz TARGET SOURCES...: build and run one target over corpus/TARGET.
fuzz() {
	local name=$1
	shift
	mkdir -p "$out/corpus-$name"
	"$cc" -g -O1 -DSROCE_PROTO_HOST -I"$proto" -I"$here" \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-Wall -Wextra -Werror \
		"$here/fuzz_$name.c" "$@" -o "$out/fuzz_$name"
	echo "run-fuzz: $out/fuzz_$name for ${secs}s, artifacts in $out/crashes"
	"$out/fuzz_$name" -max_total_time="$secs" -print_final_stats=1 \
		-max_len=4200 -artifact_prefix="$out/crashes/$name-" \
		"$out/corpus-$name" "$here/corpus/$name"
}

fuzz parse "$proto/sroce_hdr.c" "$proto/sroce_icrc.c" "$proto/sroce_aeth.c" \
	"$here/sroce_crc32_host.c"
fuzz rules "$proto/sroce_hdr.c" "$proto/sroce_aeth.c"
