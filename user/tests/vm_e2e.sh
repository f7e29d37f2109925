#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# End-to-end test of the provider against sroce.ko, for the QEMU guest:
#   make -C kernel && cmake --build build/user
#   tools/vm/run --timeout 300 -- user/tests/vm_e2e.sh [BUILD_DIR]
# Creates sroce0 on a dummy netdev, runs ibv_rc_pingpong in its variants
# (busy poll, completion events, the wr_* API with -N, sizes around the
# inline limit and above the MTU), then sroce_e2e (RC), sroce_e2e_ud (UD) and
# sroce_e2e_srq (shared receive queues).
# Exit 0 if all passed.
set -u

root=${SROCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${1:-$root/build/user}
[ -n "${SROCE_IN_GUEST:-}" ] || { echo "vm_e2e: run me through tools/vm/run" >&2; exit 2; }

modprobe ib_uverbs && modprobe udp_tunnel && modprobe ip6_udp_tunnel || exit 1
insmod "$root/kernel/sroce.ko" || exit 1
ip link add d0 type dummy && ip link set d0 up &&
	ip addr add 10.9.0.1/24 dev d0 || exit 1
rdma link add sroce0 type sroce netdev d0 || exit 1
export RDMAV_DRIVERS=$build/libsroce

fail=0
pingpong() {
	local out=/tmp/vm_e2e.$$
	timeout 60 ibv_rc_pingpong -d sroce0 -g 1 "$@" >"$out.srv" 2>&1 &
	local srv=$!
	# TCG guests are slow: wait until the server really listens.
	for _ in $(seq 100); do
		ss -ltn | grep -q ':18515 ' && break
		sleep 0.1
	done
	timeout 60 ibv_rc_pingpong -d sroce0 -g 1 "$@" 127.0.0.1 >"$out.cli" 2>&1
	local c=$?
	wait $srv
	local s=$?
	if [ $c -eq 0 ] && [ $s -eq 0 ]; then
		echo "PASS ibv_rc_pingpong $*: $(grep 'iters in' "$out.cli")"
	else
		echo "FAIL ibv_rc_pingpong $* (client $c, server $s)"
		sed 's/^/  srv: /' "$out.srv"
		sed 's/^/  cli: /' "$out.cli"
		fail=1
	fi
	rm -f "$out.srv" "$out.cli"
}

pingpong
pingpong -N
pingpong -e
pingpong -N -e -s 100 -n 500
pingpong -s 64 -n 2000
pingpong -s 65536 -n 200 -m 1024

if "$build/tests/sroce_e2e" sroce0; then
	echo "PASS sroce_e2e"
else
	echo "FAIL sroce_e2e"
	fail=1
fi

if "$build/tests/sroce_e2e_ud" sroce0 1; then
	echo "PASS sroce_e2e_ud"
else
	echo "FAIL sroce_e2e_ud"
	fail=1
fi

if "$build/tests/sroce_e2e_srq" sroce0 1; then
	echo "PASS sroce_e2e_srq"
else
	echo "FAIL sroce_e2e_srq"
	fail=1
fi

rdma link delete sroce0 || fail=1
rmmod sroce || fail=1
exit $fail
