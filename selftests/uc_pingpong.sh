#!/bin/bash
# timeout: 1200
#
# UC data path with libibverbs' own ibv_uc_pingpong (SEND/RECV ping-pong over
# one UC QP per side: no ACKs, no retransmission - a lost packet would lose
# its message and hang the ping-pong, which timeout(1) turns into a failure):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket), IPv4 and IPv6;
#  - message sizes 1 B (inline: uc_pingpong uses IBV_SEND_INLINE when the QP's
#    max_inline_data allows it) to 64 KiB (64 packets at path MTU 1024: FIRST,
#    MIDDLEs, LAST), path MTU 1024 (-m 1024, veth MTU 1500) and 4096 (-m 4096,
#    veth MTU 9000), -e (completion events instead of polling), -r (a shallow
#    receive queue), -c (uc_pingpong's buffer check, weak: it catches a
#    message that never landed).
# Each run must exit 0 on both sides, print "invalid data" nowhere, and
# report "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds"
# with a positive rate; each side must see the peer's GID it was given.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=uc
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss jq ibv_uc_pingpong ibv_devinfo timeout

# gid_sysfs ADDR: the sysfs spelling of ADDR's RoCE v2 GID, in pure bash
# (python's start-up costs seconds under TCG).
gid_sysfs() {
	local a=$1 l r g out=() i n
	local -a o lg rg
	if [[ $a != *:* ]]; then
		IFS=. read -ra o <<<"$a"
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "${o[@]}"
		return
	fi
	if [[ $a == *::* ]]; then l=${a%%::*} r=${a#*::}; else l=$a r=''; fi
	IFS=: read -ra lg <<<"$l"
	IFS=: read -ra rg <<<"$r"
	n=$((8 - ${#lg[@]} - ${#rg[@]}))
	for g in "${lg[@]}"; do out+=("$g"); done
	for ((i = 0; i < n; i++)); do out+=(0); done
	for g in "${rg[@]}"; do out+=("$g"); done
	for ((i = 0; i < 8; i++)); do out[i]=$(printf '%04x' "0x${out[i]}"); done
	(IFS=:; echo "${out[*]}")
}

# gid_index DEV ADDR: index of DEV port 1's RoCE v2 GID for ADDR (status 1: none).
gid_index() {
	local want f idx
	want=$(gid_sysfs "$2")
	for f in "/sys/class/infiniband/$1"/ports/1/gids/*; do
		[[ "$(<"$f")" == "$want" ]] 2>/dev/null || continue
		idx=${f##*/}
		[[ "$(<"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$idx")" == "RoCE v2" ]] 2>/dev/null || continue
		echo "$idx"
		return 0
	done
	return 1
}

# gid_text ADDR: the GID as ibv_uc_pingpong prints it (inet_ntop).
gid_text() { if [[ $1 == *:* ]]; then echo "$1"; else echo "::ffff:$1"; fi; }

tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
next_port=18900

# --- topology ---------------------------------------------------------------------
v4a=192.0.2.1 v4b=192.0.2.2 v6a=2001:db8::1 v6b=2001:db8::2
v4l=198.51.100.1 v6l=2001:db8:1::1

sr_module_use
sr_have_provider || skip "the provider build/user/libsroce-rdmav34.so is not built"
nsa=${SR_ID}a nsb=${SR_ID}b nsl=${SR_ID}l
va=${SR_ID}va vb=${SR_ID}vb dl=${SR_ID}dl
deva=${SR_ID}s0 devb=${SR_ID}s1 devl=${SR_ID}sl
ns_create "$nsa"
ns_create "$nsb"
ns_create "$nsl"
veth_pair "$nsa" "$va" "$nsb" "$vb"
check ip -n "$nsa" addr add "$v4a/24" dev "$va"
check ip -n "$nsb" addr add "$v4b/24" dev "$vb"
check ip -n "$nsa" addr add "$v6a/64" dev "$va" nodad
check ip -n "$nsb" addr add "$v6b/64" dev "$vb" nodad
sr_dummy "$nsl" "$dl"
check ip -n "$nsl" addr add "$v4l/24" dev "$dl"
check ip -n "$nsl" addr add "$v6l/64" dev "$dl" nodad
sr_link_add "$nsa" "$deva" "$va"
sr_link_add "$nsb" "$devb" "$vb"
sr_link_add "$nsl" "$devl" "$dl"
# The pingpong servers listen on IPv4 only (the TCP side channel uses IPv4
# even when the QPs use the IPv6 GIDs).
srv4=$v4a srv6=$v4a srvl=127.0.0.1

gid_of() { # gid_of DEV ADDR: wait for DEV's RoCE v2 GID of ADDR, print its index
	wait_for "gid_index $1 $2" 10 || fail "$1: no RoCE v2 GID for $2: $(sr_gids "$1")"
	gid_index "$1" "$2"
}
ga4=$(gid_of "$deva" "$v4a") gb4=$(gid_of "$devb" "$v4b")
ga6=$(gid_of "$deva" "$v6a") gb6=$(gid_of "$devb" "$v6b")
gl4=$(gid_of "$devl" "$v4l") gl6=$(gid_of "$devl" "$v6l")
log "GIDs: $deva v4 #$ga4 v6 #$ga6; $devb v4 #$gb4 v6 #$gb6; $devl v4 #$gl4 v6 #$gl6"
sr_dmesg_mark

# --- one exchange -------------------------------------------------------------------

# untrapped CMD...: for servers started with &: a failing server is
# reported by whoever waits for it, not by lib.sh's ERR trap in its subshell.
untrapped() {
	trap - ERR
	"$@"
}

listening() { ns_exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# pp TAG SIZE ITERS SNS SDEV SGID CNS CDEV CGID ADDR SADDR CADDR [ARGS...]:
# ibv_uc_pingpong server (SNS/SDEV/SGID) and client (CNS/CDEV/CGID, connecting
# to ADDR over TCP), both with -s SIZE -n ITERS ARGS; SADDR/CADDR are the
# addresses of their GIDs. Counts a failure rather than ending the test, so
# that one broken case does not hide the others.
pp() {
	local tag=$1 size=$2 iters=$3 sns=$4 sdev=$5 sgid=$6 cns=$7 cdev=$8 cgid=$9
	local addr=${10} saddr=${11} caddr=${12}
	shift 12
	local port=$((next_port++)) spid src=0 crc=0 t0 why=''
	local -a common=(ibv_uc_pingpong -p "$port" -s "$size" -n "$iters" "$@")
	log "--- $tag: size $size, $iters iters${*:+, $*}"
	log "+ [${sns}] ${common[*]} -d $sdev -g $sgid"
	log "+ [${cns}] ${common[*]} -d $cdev -g $cgid $addr"
	t0=$SECONDS
	untrapped ns_exec "$sns" timeout 150 "${common[@]}" -d "$sdev" -g "$sgid" >"$tmp/$tag.srv" 2>&1 &
	spid=$!
	if ! wait_for "listening $sns $port" 20; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		why="server did not listen on TCP $port"
	else
		ns_exec "$cns" timeout 120 "${common[@]}" -d "$cdev" -g "$cgid" "$addr" >"$tmp/$tag.cli" 2>&1 || crc=$?
		# A client that failed leaves the server waiting for completions.
		[[ $crc == 0 ]] || wait_for "! kill -0 $spid" 5 || kill "$spid" 2>/dev/null || true
		wait "$spid" || src=$?
		[[ $crc == 0 ]] || why="client exited with $crc"
		[[ $src == 0 ]] || why="${why:+$why, }server exited with $src"
	fi
	[[ -n "$why" ]] || why=$(pp_verify "$tag" "$size" "$iters" "$saddr" "$caddr")
	if [[ -n "$why" ]]; then
		failures=$((failures + 1))
		subtest_fail "$tag" "$why"
		sed 's/^/  server| /' "$tmp/$tag.srv" 2>/dev/null || true
		sed 's/^/  client| /' "$tmp/$tag.cli" 2>/dev/null || true
		log "  kernel log since the start of the test:"
		sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
		return 0
	fi
	log "ok: $tag ($((SECONDS - t0))s): $(grep -h 'bytes in' "$tmp/$tag.cli")," \
		"$(grep -h 'iters in' "$tmp/$tag.cli" | sed 's/.*= //')"
	subtest_ok "$tag"
}

# pp_verify TAG SIZE ITERS SADDR CADDR: empty output if both sides' reports
# are right, else what is wrong.
pp_verify() {
	local tag=$1 size=$2 iters=$3 saddr=$4 caddr=$5 side f peer line b n usec
	local want_bytes=$((2 * size * iters))
	for side in srv cli; do
		f=$tmp/$tag.$side
		if [[ $side == srv ]]; then peer=$caddr; else peer=$saddr; fi
		if grep -qi 'invalid data' "$f"; then
			echo "$side: received data failed the -c check: $(grep -i 'invalid data' "$f" | head -n 3 | xargs)"
			return
		fi
		line=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$f") ||
			{ echo "$side: no 'bytes in ... seconds' line"; return; }
		read -r b _ <<<"$line"
		[[ $b == "$want_bytes" ]] || { echo "$side: $b bytes, want $want_bytes"; return; }
		line=$(grep -E '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$f") ||
			{ echo "$side: no 'iters in ... seconds' line"; return; }
		read -r n _ _ _ _ _ usec _ <<<"$line"
		[[ $n == "$iters" ]] || { echo "$side: $n iters, want $iters"; return; }
		# (The Mbit/sec figure of tiny messages rounds to 0.00; usec/iter does not.)
		awk -v u="$usec" 'BEGIN { exit !(u > 0) }' || { echo "$side: $usec usec/iter"; return; }
		grep -qE "remote address: .* GID $(gid_text "$peer")\$" "$f" ||
			{ echo "$side: remote GID is not $(gid_text "$peer")"; return; }
	done
	return 0
}

# Shorthands: A (server) <-> B (client) over IPv4 / IPv6, and the loopback device.
pp4() { pp "$1" "$2" "$3" "$nsa" "$deva" "$ga4" "$nsb" "$devb" "$gb4" "$srv4" "$v4a" "$v4b" "${@:4}"; }
pp6() { pp "$1" "$2" "$3" "$nsa" "$deva" "$ga6" "$nsb" "$devb" "$gb6" "$srv6" "$v6a" "$v6b" "${@:4}"; }
ppl4() { pp "$1" "$2" "$3" "$nsl" "$devl" "$gl4" "$nsl" "$devl" "$gl4" "$srvl" "$v4l" "$v4l" "${@:4}"; }
ppl6() { pp "$1" "$2" "$3" "$nsl" "$devl" "$gl6" "$nsl" "$devl" "$gl6" "$srvl" "$v6l" "$v6l" "${@:4}"; }

# Iterations: TCG moves some 30-70 MB/s; keep each run to a few seconds.
log "=== two namespaces, IPv4 GIDs"
pp4 v4-1 1 200 -c
sr_more_case v4-64 && pp4 v4-64 64 200 -c
pp4 v4-1k 1024 200 -c
sr_more_case v4-4k && pp4 v4-4k 4096 100 -c
pp4 v4-64k 65536 30 -c
pp4 v4-events 4096 100 -c -e
sr_more_case v4-events-64k && pp4 v4-events-64k 65536 20 -c -e
pp4 v4-rxdepth 64 300 -c -r 4

log "=== two namespaces, IPv6 GIDs"
sr_more_case v6-1 && pp6 v6-1 1 200 -c
pp6 v6-4k 4096 100 -c
pp6 v6-64k 65536 30 -c
sr_more_case v6-events && pp6 v6-events 1000 100 -c -e

log "=== one device looping back"
ppl4 lo-v4-1 1 200 -c
sr_more_case lo-v4-4k && ppl4 lo-v4-4k 4096 100 -c
ppl4 lo-v4-64k 65536 30 -c
sr_more_case lo-v4-events && ppl4 lo-v4-events 4096 100 -c -e
sr_more_case lo-v6-64k && ppl6 lo-v6-64k 65536 30 -c
ppl6 lo-v6-events 100 200 -c -e

log "=== path MTU 4096 (netdev MTU 9000)"
_ns_ip "$nsa" link set "$va" mtu 9000
_ns_ip "$nsb" link set "$vb" mtu 9000
for d in "$deva" "$devb"; do
	ns=$nsa
	[[ $d == "$deva" ]] || ns=$nsb
	wait_for "ns_exec $ns ibv_devinfo -d $d | grep -q 'active_mtu:[[:space:]]*4096'" 10 ||
		fail "$d: active_mtu is not 4096 with netdev MTU 9000: $(ns_exec "$ns" ibv_devinfo -d "$d" | grep mtu)"
done
log "ok: active_mtu 4096 on $deva and $devb"
sr_more_case mtu4096-4k && pp4 mtu4096-4k 4096 50 -c -m 4096
pp4 mtu4096-64k 65536 20 -c -m 4096
pp6 mtu4096-v6-64k 65536 20 -c -m 4096 -e

if sr_dmesg_since | grep -qi sroce; then
	log "kernel log lines about sroce during the test:"
	sr_dmesg_since | grep -i sroce | tail -n 20 | sed 's/^/  dmesg| /'
fi
[[ $failures == 0 ]] || fail "$failures ibv_uc_pingpong run(s) failed (see NOT OK above)"
log "all ibv_uc_pingpong runs passed"
