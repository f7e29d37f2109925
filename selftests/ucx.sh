#!/bin/bash
# timeout: 900
#
# UCX (Debian's ucx-utils) over sroce, as an MPI or a storage stack would
# run it without RDMA NICs:
#  - ucx_info lists rc_verbs and ud_verbs on a sroce port;
#  - UCT (ucx_perftest -x rc_verbs / ud_verbs) on one device looping back:
#    the perftest server takes the device name from its client, so both
#    ends use one device: active messages (latency, bandwidth), zero-copy
#    puts (RDMA WRITE) and gets (RDMA READ) of 64 KiB;
#  - UCP between two devices in two namespaces, UCX_NET_DEVICES naming each
#    side's and UCX_TLS=rc_v,ud_v,self (shared memory excluded: both
#    namespaces share one kernel): tag matching (latency, 64 KiB
#    bandwidth: rendezvous), stream, put and get; then UD alone
#    (UCX_TLS=ud_v,self).
# Each run: both processes exit 0, the client reports its "Final:" line,
# and sroce's sent_bytes counters moved by at least the messages' bytes
# (the data went over sroce, not some other transport). ucx_perftest does
# not verify payloads: data integrity is the verbs tests' job.
# Used to fail: rc_verbs aborted on a remote access error (sroce NAKed the
# zero-length RDMA WRITEs UCX sends with R_Key 0), and ud_verbs never
# connected (UCX before 1.19 finds a UD datagram's IP version in the
# completion's sl, as ConnectX reports it, and sroce left it 0).
export SR_TAG=ux # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

if ! command -v ucx_perftest >/dev/null || ! command -v ucx_info >/dev/null; then
	skip "ucx-utils is not installed (make deps-test)"
fi
sr_setup
sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"

sr_vt_topology 85
addr_a=10.85.0.1 addr_l=10.86.0.1

tmp=$(mktemp -d)
defer rm -rf "$tmp"
lim=$((120 * ${SROCE_TIMEOUT_SCALE:-1}))
log "$(ucx_info -v 2>&1 | head -n 2 | tr '\n' ' ')"

subtest_begin "ucx_info lists rc_verbs and ud_verbs on $da:1"
ns_exec "$nsa" ucx_info -d >"$tmp/info" 2>&1 || fail "ucx_info -d: $(tail -n 3 "$tmp/info" | xargs)"
for tl in rc_verbs ud_verbs; do
	awk -v tl="$tl" -v dev="$da:1" '/Transport:/ { t = $3 } /Device:/ && t == tl && $3 == dev { f = 1 }
		END { exit !f }' "$tmp/info" || fail "no $tl on $da:1 in ucx_info -d"
done
subtest_end

# sum_bytes DEV...: the devices' sent_bytes, added up.
sum_bytes() {
	local d n=0
	for d in "$@"; do
		n=$((n + $(sr_hwc "$d" sent_bytes)))
	done
	echo "$n"
}

# ucx_case NAME NS_S NS_C ADDR MIN_BYTES "DEVS" "ENV_S" "ENV_C" ARGS...: a
# ucx_perftest server in NS_S, its client in NS_C connecting to ADDR with
# ARGS (the server takes the test from its client); ENV_S and ENV_C are
# env(1) assignments for each. Passes if both exit 0, the client printed
# "Final:" and the devices DEVS sent at least MIN_BYTES more between them.
ucx_case() {
	local name=$1 ns_s=$2 ns_c=$3 addr=$4 min=$5 devs=$6 env_s=$7 env_c=$8 rc=0 src=0 before after why=''
	shift 8
	local -a es ec dv
	read -ra es <<<"$env_s"
	read -ra ec <<<"$env_c"
	read -ra dv <<<"$devs"
	log "### $name: ucx_perftest $*"
	before=$(sum_bytes "${dv[@]}")
	ns_exec "$ns_s" env "${es[@]}" timeout "$lim" ucx_perftest >"$tmp/server" 2>&1 &
	local spid=$!
	# Listening on its TCP port (13337) for the client's parameters.
	if ! wait_for "sr_listening $ns_s 13337 || ! kill -0 $spid 2>/dev/null" $((30 * ${SROCE_TIMEOUT_SCALE:-1})) ||
		! kill -0 "$spid" 2>/dev/null; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" || src=$?
		tail -n 20 "$tmp/server" | sed 's/^/  server| /'
		subtest_fail "$name" "the server did not start (exit $src)"
		return
	fi
	ns_exec "$ns_c" env "${ec[@]}" timeout "$lim" ucx_perftest "$addr" "$@" >"$tmp/client" 2>&1 || rc=$?
	wait "$spid" || src=$?
	after=$(sum_bytes "${dv[@]}")
	{ grep -m 20 -E 'Final:|rror|ssert|Fatal' "$tmp/client" || true; } | sed 's/^/  client| /'
	{ grep -m 20 -E 'rror|ssert|Fatal' "$tmp/server" || true; } | sed 's/^/  server| /'
	log "  sent_bytes of ${dv[*]}: +$((after - before)) (at least $min wanted)"
	if ((rc != 0 || src != 0)); then
		why="client exit $rc, server exit $src"
	elif ! grep -q 'Final:' "$tmp/client"; then
		why="the client reported no result"
	elif ((after - before < min)); then
		why="sroce sent $((after - before)) bytes, less than the test's $min"
	fi
	subtest_verdict "$name" "$why"
}

# UCT, one device looping back (both ends in $nsl on $dl).
uct() { # NAME MIN_BYTES ARGS...
	ucx_case "UCT $1" "$nsl" "$nsl" "$addr_l" "$2" "$dl" "" "" -d "$dl:1" "${@:3}"
}
uct "rc_verbs am_lat" 8000 -x rc_verbs -t am_lat -n 1000
uct "rc_verbs am_bw" 8000 -x rc_verbs -t am_bw -n 1000
uct "rc_verbs put_bw 64 KiB zcopy" $((200 * 65536)) -x rc_verbs -t put_bw -D zcopy -s 65536 -n 200
uct "rc_verbs get 64 KiB zcopy" $((200 * 65536)) -x rc_verbs -t get -D zcopy -s 65536 -n 200
uct "ud_verbs am_lat" 8000 -x ud_verbs -t am_lat -n 1000

# UCP, two devices in two namespaces.
ucp() { # NAME TLS MIN_BYTES ARGS...
	ucx_case "UCP $1 ($2)" "$nsa" "$nsb" "$addr_a" "$3" "$da $db" \
		"UCX_NET_DEVICES=$da:1 UCX_TLS=$2" "UCX_NET_DEVICES=$db:1 UCX_TLS=$2" "${@:4}"
}
tls=rc_v,ud_v,self
ucp "tag_lat" $tls 8000 -t tag_lat -n 1000
ucp "tag_bw 64 KiB" $tls $((200 * 65536)) -t tag_bw -s 65536 -n 200
ucp "stream_bw 64 KiB" $tls $((200 * 65536)) -t stream_bw -s 65536 -n 200
ucp "ucp_put_bw 64 KiB" $tls $((200 * 65536)) -t ucp_put_bw -s 65536 -n 200
ucp "ucp_get 64 KiB" $tls $((200 * 65536)) -t ucp_get -s 65536 -n 200
ucp "tag_lat" ud_v,self 8000 -t tag_lat -n 1000
ucp "tag_bw 64 KiB" ud_v,self $((100 * 65536)) -t tag_bw -s 65536 -n 100
