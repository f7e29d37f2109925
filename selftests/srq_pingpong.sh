#!/bin/bash
# timeout: 900
#
# Shared receive queues with libibverbs' own ibv_srq_pingpong (SEND/RECV
# ping-pong over several RC QPs per side; each side's QPs all receive through
# one SRQ, which it refills with ibv_post_srq_recv when it runs low):
#  - two sroce devices in two namespaces on a veth pair, over their IPv4
#    (::ffff:a.b.c.d) and IPv6 RoCE v2 GIDs;
#  - one sroce device on a dummy netdev, server and client on the same device
#    (packets loop back through the device's own UDP socket), IPv4 and IPv6;
#  - 1 to 16 QPs on the SRQ (-q), message sizes 1 B to 64 KiB (path MTU 1024:
#    up to 64 packets per message), a shallow SRQ (-r 8: the refill runs all
#    the time) and the default 500-deep one, -e (completion events instead of
#    polling) and -c (srq_pingpong's buffer check: it only catches a message
#    that never landed);
#  - then sroce_e2e_srq (user/tests/e2e_srq.cpp, if built) on the loopback
#    device, for what ibv_srq_pingpong does not look at: WQEs taken in posting
#    order across RC and UC QPs, two-SGE scatter, the SRQ limit event
#    (IBV_EVENT_SRQ_LIMIT_REACHED exactly when fewer than srq_limit remain,
#    once), resize with WQEs posted (they survive and complete first; shrinking
#    below what is posted is refused), IBV_EVENT_QP_LAST_WQE_REACHED, and the
#    up-front rejects (ibv_post_recv on a QP with an SRQ, too many SGEs, full).
# Each run must exit 0 on both sides, print "invalid data" nowhere, report
# "<2*size*iters> bytes in T seconds" and "<iters> iters in T seconds" with a
# positive rate, and list one remote address per QP, each with the peer's GID.
# SROCE_FULL=1 adds the runs marked sr_more_case below (more sizes and modes
# of what the default set already covers; skipped sub-cases otherwise).
# Each run is a sub-case.
SR_TAG=srq
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
require_cmd ip rdma ss jq ibv_srq_pingpong ibv_devinfo timeout

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

# gid_text ADDR: the GID as ibv_srq_pingpong prints it (inet_ntop).
gid_text() { if [[ $1 == *:* ]]; then echo "$1"; else echo "::ffff:$1"; fi; }

tmp=$(mktemp -d)
defer rm -rf "$tmp"
failures=0
next_port=18800

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

# pp TAG SIZE ITERS NQP SNS SDEV SGID CNS CDEV CGID ADDR SADDR CADDR [ARGS...]:
# ibv_srq_pingpong server (SNS/SDEV/SGID) and client (CNS/CDEV/CGID, connecting
# to ADDR over TCP), both with -s SIZE -n ITERS -q NQP ARGS; SADDR/CADDR are
# the addresses of their GIDs. Counts a failure rather than ending the test,
# so that one broken case does not hide the others.
pp() {
	local tag=$1 size=$2 iters=$3 nqp=$4 sns=$5 sdev=$6 sgid=$7 cns=$8 cdev=$9
	local cgid=${10} addr=${11} saddr=${12} caddr=${13}
	shift 13
	local port=$((next_port++)) spid src=0 crc=0 t0 why=''
	local -a common=(ibv_srq_pingpong -p "$port" -s "$size" -n "$iters" -q "$nqp" "$@")
	log "--- $tag: size $size, $iters iters, $nqp QPs${*:+, $*}"
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
	[[ -n "$why" ]] || why=$(pp_verify "$tag" "$size" "$iters" "$nqp" "$saddr" "$caddr")
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

# pp_verify TAG SIZE ITERS NQP SADDR CADDR: empty output if both sides'
# reports are right, else what is wrong.
pp_verify() {
	local tag=$1 size=$2 iters=$3 nqp=$4 saddr=$5 caddr=$6 side f peer line b n usec
	local want_bytes=$((2 * size * iters)) want_gid nrem
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
		want_gid=$(gid_text "$peer")
		nrem=$(grep -cE "remote address: .* GID $want_gid\$" "$f" || true)
		[[ $nrem == "$nqp" ]] ||
			{ echo "$side: $nrem remote addresses with GID $want_gid, want one per QP ($nqp)"; return; }
	done
	return 0
}

# Shorthands: A (server) <-> B (client) over IPv4 / IPv6, and the loopback device.
pp4() { pp "$1" "$2" "$3" "$4" "$nsa" "$deva" "$ga4" "$nsb" "$devb" "$gb4" "$srv4" "$v4a" "$v4b" "${@:5}"; }
pp6() { pp "$1" "$2" "$3" "$4" "$nsa" "$deva" "$ga6" "$nsb" "$devb" "$gb6" "$srv6" "$v6a" "$v6b" "${@:5}"; }
ppl4() { pp "$1" "$2" "$3" "$4" "$nsl" "$devl" "$gl4" "$nsl" "$devl" "$gl4" "$srvl" "$v4l" "$v4l" "${@:5}"; }
ppl6() { pp "$1" "$2" "$3" "$4" "$nsl" "$devl" "$gl6" "$nsl" "$devl" "$gl6" "$srvl" "$v6l" "$v6l" "${@:5}"; }

# Iterations: TCG moves some 30-70 MB/s; keep each run to a few seconds.
log "=== two namespaces, IPv4 GIDs"
pp4 v4-q1 64 200 1 -c
sr_more_case v4-q4-1 && pp4 v4-q4-1 1 400 4 -c
sr_more_case v4-q4-4k && pp4 v4-q4-4k 4096 200 4 -c
pp4 v4-q4-64k 65536 40 4 -c
pp4 v4-q16 1024 400 16 -c
pp4 v4-q4-shallow 64 400 4 -c -r 8
pp4 v4-q4-events 4096 200 4 -c -e
sr_more_case v4-q4-events-64k && pp4 v4-q4-events-64k 65536 32 4 -c -e

log "=== two namespaces, IPv6 GIDs"
sr_more_case v6-q4-1 && pp6 v6-q4-1 1 400 4 -c
pp6 v6-q4-64k 65536 40 4 -c
pp6 v6-q8-events 4096 200 8 -c -e -r 16

log "=== one device looping back"
sr_more_case lo-v4-q4-4k && ppl4 lo-v4-q4-4k 4096 200 4 -c
ppl4 lo-v4-q4-64k 65536 40 4 -c
ppl4 lo-v4-q4-events 1024 200 4 -c -e -r 8
sr_more_case lo-v6-q4-64k && ppl6 lo-v6-q4-64k 65536 40 4 -c
ppl6 lo-v6-q16-events 64 400 16 -c -e

# sroce_e2e_srq (user/tests/e2e_srq.cpp): what ibv_srq_pingpong cannot see.
e2e=$SROCE_ROOT/build/user/tests/sroce_e2e_srq
if [[ -x $e2e ]]; then
	log "=== sroce_e2e_srq on $devl, IPv4 and IPv6 GIDs"
	log "+ [$nsl] $e2e $devl $gl4 $gl6"
	rc=0
	ns_exec "$nsl" timeout 300 "$e2e" "$devl" "$gl4" "$gl6" >"$tmp/e2e" 2>&1 || rc=$?
	if [[ $rc == 0 ]]; then
		sed 's/^/  /' "$tmp/e2e"
	else
		failures=$((failures + 1))
		sed 's/^/  e2e| /' "$tmp/e2e"
		sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
	fi
	subtests_from_tap "$tmp/e2e" sroce_e2e_srq "$rc"
else
	subtest_skip sroce_e2e_srq "build/user/tests/sroce_e2e_srq is not built (make user)"
fi

if sr_dmesg_since | grep -qi sroce; then
	log "kernel log lines about sroce during the test:"
	sr_dmesg_since | grep -i sroce | tail -n 20 | sed 's/^/  dmesg| /'
fi
[[ $failures == 0 ]] || fail "$failures srq_pingpong check(s) failed (see NOT OK above)"
log "all ibv_srq_pingpong runs and sroce_e2e_srq passed"
