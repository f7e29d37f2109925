#!/bin/bash
# timeout: 900
#
# UD data path with libibverbs' own ibv_ud_pingpong (SEND/RECV ping-pong over
# one UD QP per side, addressed through an address handle; every receive
# carries the 40-byte GRH in front of the payload):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket);
#  - message sizes from 1 byte up to the port's active MTU (a UD message is
#    one packet): 1024 with the veth at MTU 1500, 4096 at MTU 9000;
#    small sizes go inline (ud_pingpong uses IBV_SEND_INLINE when the QP's
#    max_inline_data allows it), larger ones from the MR;
#  - -e (completion events instead of polling) and -c (the receiver checks
#    its buffer behind the GRH: weak - one byte per page - but it catches a
#    payload at the wrong offset);
#  - then sroce_e2e_ud (user/tests/e2e_ud.cpp, if built) on the loopback
#    device, for what ud_pingpong does not look at (see there).
# Each run must exit 0 on both sides, print "invalid data" nowhere, and
# report "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds"
# with a positive rate; each side must see the peer's GID it was given.
# A lost datagram would hang a ping-pong: runs are bounded by timeout(1) and
# count as failures then.
#
# SROCE_UD_BACKEND=rxe runs the same exchanges over one rdma_rxe device in the
# initial namespace (both "sides" on it): a check of this script, not of sroce.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=ud
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

backend=${SROCE_UD_BACKEND:-sroce}
[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss jq ibv_ud_pingpong ibv_devinfo timeout

# gid_sysfs ADDR: the sysfs spelling of ADDR's RoCE v2 GID, in pure bash.
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

# gid_text ADDR: the GID as ibv_ud_pingpong prints it (inet_ntop).
gid_text() { if [[ $1 == *:* ]]; then echo "$1"; else echo "::ffff:$1"; fi; }

tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
next_port=18700

# --- topology ---------------------------------------------------------------------
v4a=192.0.2.1 v4b=192.0.2.2 v6a=2001:db8::1 v6b=2001:db8::2
v4l=198.51.100.1 v6l=2001:db8:1::1

if [[ $backend == sroce ]]; then
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
	# ibv_ud_pingpong servers listen on IPv4 only (the TCP side channel).
	srv4=$v4a srv6=$v4a srvl=127.0.0.1
	mtu_dev=("$nsa" "$va") mtu_peer=("$nsb" "$vb")
elif [[ $backend == rxe ]]; then
	sr_rxe_use || skip "rdma_rxe cannot be loaded"
	nsa=- nsb=- nsl=-
	rd=${SR_ID}rd
	deva=${SR_ID}rxe devb=$deva devl=$deva
	sr_dummy - "$rd"
	check ip addr add "$v4a/24" dev "$rd"
	check ip addr add "$v4l/24" dev "$rd"
	check ip addr add "$v6a/64" dev "$rd" nodad
	check ip addr add "$v6l/64" dev "$rd" nodad
	check rdma link add "$deva" type rxe netdev "$rd"
	defer_quiet rdma link delete "$deva"
	v4b=$v4a v6b=$v6a
	srv4=127.0.0.1 srv6=127.0.0.1 srvl=127.0.0.1
	mtu_dev=(- "$rd") mtu_peer=()
else
	fail "SROCE_UD_BACKEND must be sroce or rxe, not '$backend'"
fi

gid_of() { # gid_of DEV ADDR: wait for DEV's RoCE v2 GID of ADDR, print its index
	wait_for "gid_index $1 $2" 10 || fail "$1: no RoCE v2 GID for $2: $(sr_gids "$1")"
	gid_index "$1" "$2"
}
ga4=$(gid_of "$deva" "$v4a") gb4=$(gid_of "$devb" "$v4b")
ga6=$(gid_of "$deva" "$v6a") gb6=$(gid_of "$devb" "$v6b")
gl4=$(gid_of "$devl" "$v4l") gl6=$(gid_of "$devl" "$v6l")
log "GIDs: $deva v4 #$ga4 v6 #$ga6; $devb v4 #$gb4 v6 #$gb6; $devl v4 #$gl4 v6 #$gl6"

# active_mtu DEV NS: the port's active MTU in bytes.
active_mtu() {
	ns_exec "$2" ibv_devinfo -d "$1" | awk '$1 == "active_mtu:" { print $2; exit }'
}
sr_dmesg_mark

# --- one exchange -------------------------------------------------------------------

untrapped() {
	trap - ERR
	"$@"
}

listening() { ns_exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# pp TAG SIZE ITERS SNS SDEV SGID CNS CDEV CGID ADDR SADDR CADDR [ARGS...]:
# ibv_ud_pingpong server (SNS/SDEV/SGID) and client (CNS/CDEV/CGID, connecting
# to ADDR over TCP), both with -s SIZE -n ITERS ARGS; SADDR/CADDR are the
# addresses of their GIDs. Counts a failure rather than ending the test.
pp() {
	local tag=$1 size=$2 iters=$3 sns=$4 sdev=$5 sgid=$6 cns=$7 cdev=$8 cgid=$9
	local addr=${10} saddr=${11} caddr=${12}
	shift 12
	local port=$((next_port++)) spid src=0 crc=0 t0 why=''
	local -a common=(ibv_ud_pingpong -p "$port" -s "$size" -n "$iters" "$@")
	log "--- $tag: size $size, $iters iters${*:+, $*}"
	log "+ [${sns}] ${common[*]} -d $sdev -g $sgid"
	log "+ [${cns}] ${common[*]} -d $cdev -g $cgid $addr"
	t0=$SECONDS
	untrapped ns_exec "$sns" timeout 120 "${common[@]}" -d "$sdev" -g "$sgid" >"$tmp/$tag.srv" 2>&1 &
	spid=$!
	if ! wait_for "listening $sns $port" 20; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		why="server did not listen on TCP $port"
	else
		ns_exec "$cns" timeout 90 "${common[@]}" -d "$cdev" -g "$cgid" "$addr" >"$tmp/$tag.cli" 2>&1 || crc=$?
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
		awk -v u="$usec" 'BEGIN { exit !(u > 0) }' || { echo "$side: $usec usec/iter"; return; }
		grep -qE "remote address: .* GID $(gid_text "$peer")\$" "$f" ||
			{ echo "$side: remote GID is not $(gid_text "$peer")"; return; }
	done
	return 0
}

pp4() { pp "$1" "$2" "$3" "$nsa" "$deva" "$ga4" "$nsb" "$devb" "$gb4" "$srv4" "$v4a" "$v4b" "${@:4}"; }
pp6() { pp "$1" "$2" "$3" "$nsa" "$deva" "$ga6" "$nsb" "$devb" "$gb6" "$srv6" "$v6a" "$v6b" "${@:4}"; }
ppl4() { pp "$1" "$2" "$3" "$nsl" "$devl" "$gl4" "$nsl" "$devl" "$gl4" "$srvl" "$v4l" "$v4l" "${@:4}"; }
ppl6() { pp "$1" "$2" "$3" "$nsl" "$devl" "$gl6" "$nsl" "$devl" "$gl6" "$srvl" "$v6l" "$v6l" "${@:4}"; }

mtu=$(active_mtu "$deva" "$nsa")
[[ $mtu == 1024 ]] || fail "$deva: active_mtu $mtu with netdev MTU 1500, want 1024"
log "ok: active_mtu $mtu on $deva"

log "=== two namespaces, IPv4 GIDs (MTU 1024)"
pp4 v4-1 1 200 -c
sr_more_case v4-64 && pp4 v4-64 64 200 -c
pp4 v4-mtu 1024 200 -c
pp4 v4-events 1024 200 -c -e
pp4 v4-rxdepth 64 300 -c -r 16

log "=== two namespaces, IPv6 GIDs (MTU 1024)"
sr_more_case v6-1 && pp6 v6-1 1 200 -c
pp6 v6-mtu 1024 200 -c
pp6 v6-events 1000 200 -c -e

log "=== one device looping back"
sr_more_case lo-v4-1 && ppl4 lo-v4-1 1 200 -c
ppl4 lo-v4-mtu 1024 200 -c
sr_more_case lo-v4-events && ppl4 lo-v4-events 1024 200 -c -e
sr_more_case lo-v6-mtu && ppl6 lo-v6-mtu 1024 200 -c
ppl6 lo-v6-events 100 200 -c -e

# sroce_e2e_ud (user/tests/e2e_ud.cpp): two UD QPs of one process on the
# loopback device check what ibv_ud_pingpong cannot see - the GRH contents,
# the sender's QPN, IBV_WC_GRH, immediates, inline and wr_* sends, Q_Key
# filtering, an MTU-sized message, IBV_WC_LOC_LEN_ERR above it, the AH's PD.
e2e=$SROCE_ROOT/build/user/tests/sroce_e2e_ud
if [[ $backend == sroce && -x $e2e ]]; then
	log "=== sroce_e2e_ud on $devl, IPv4 and IPv6 GIDs"
	log "+ [$nsl] $e2e $devl $gl4 $gl6"
	rc=0
	ns_exec "$nsl" timeout 240 "$e2e" "$devl" "$gl4" "$gl6" >"$tmp/e2e" 2>&1 || rc=$?
	if [[ $rc == 0 ]]; then
		sed 's/^/  /' "$tmp/e2e"
	else
		failures=$((failures + 1))
		sed 's/^/  e2e| /' "$tmp/e2e"
		sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
	fi
	subtests_from_tap "$tmp/e2e" sroce_e2e_ud "$rc"
elif [[ $backend == sroce ]]; then
	subtest_skip sroce_e2e_ud "build/user/tests/sroce_e2e_ud is not built (make user)"
fi

log "=== MTU 4096 (netdev MTU 9000)"
_ns_ip "${mtu_dev[0]}" link set "${mtu_dev[1]}" mtu 9000
[[ ${#mtu_peer[@]} == 0 ]] || _ns_ip "${mtu_peer[0]}" link set "${mtu_peer[1]}" mtu 9000
for d in "$deva" "$devb"; do
	ns=$nsa
	[[ $d == "$deva" ]] || ns=$nsb
	wait_for "[[ \$(active_mtu $d $ns) == 4096 ]]" 10 ||
		fail "$d: active_mtu is not 4096 with netdev MTU 9000: $(active_mtu "$d" "$ns")"
done
log "ok: active_mtu 4096 on $deva and $devb"
pp4 mtu4096-v4-4k 4096 100 -c
sr_more_case mtu4096-v4-events && pp4 mtu4096-v4-events 4096 100 -c -e
pp6 mtu4096-v6-4k 4096 100 -c
pp6 mtu4096-v6-events 3000 100 -c -e

if sr_dmesg_since | grep -qi sroce; then
	log "kernel log lines about sroce during the test:"
	sr_dmesg_since | grep -i sroce | tail -n 20 | sed 's/^/  dmesg| /'
fi
[[ $failures == 0 ]] || fail "$failures ibv_ud_pingpong run(s) failed (see NOT OK above)"
log "all ibv_ud_pingpong runs passed on $backend"
