# shellcheck shell=bash
# sroce-specific helpers for selftests/sroce_*.sh, on top of lib.sh. Source it
# instead of lib.sh (it sources lib.sh):
#
#   # shellcheck source=selftests/lib_sroce.sh
#   source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"
#
# Conventions of the sroce_* tests:
#  - Module state: a test leaves sroce.ko as it found it. sr_setup loads it if
#    needed and then unloads it on exit (after the test's own devices, links
#    and namespaces are gone); a module that was already loaded stays loaded.
#  - Every sroce device lives on a netdev in a namespace the test created,
#    never in the initial namespace: 6.1's rdma_rxe holds UDP 4791 there for as
#    long as it is loaded (other tests load it), and sroce would get EADDRINUSE.
#  - Names are unique per test run: $SR_ID (a short tag + the PID) prefixes
#    namespaces, netdevs and RDMA devices.

# Executed rather than sourced (run.sh runs every selftests/*.sh but run and
# lib): this is not a test.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	echo "lib_sroce.sh is a helper library, not a test"
	[[ -z "${SROCE_SKIP_FILE:-}" ]] || echo "helper library, not a test" >"$SROCE_SKIP_FILE"
	exit 4
fi

# shellcheck source=selftests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly SR_SYS=/sys/class/infiniband
readonly SR_PORT=4791
# Netdev names are at most 15 characters: keep the prefix at 9 or fewer.
SR_ID=${SR_ID:-$(printf 'sr%s%d' "${SR_TAG:-x}" "$(($$ % 100000))")}
SR_ID=${SR_ID:0:9}
# The namespace of each device sr_link_add created ("rdma link show" only
# shows the netdev when run in the netdev's namespace).
declare -A SR_NS_OF=()

# --- setup ----------------------------------------------------------------------

# sr_setup: the common preconditions, and sroce.ko loaded (unloaded again at
# exit if this test loaded it).
sr_setup() {
	[[ $EUID == 0 ]] || skip "needs root"
	[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
	require_cmd ip rdma ss jq
	sr_module_use
}

# sr_module_use: load sroce.ko if it is not loaded; unload it on exit then.
sr_module_use() {
	if _sroce_loaded; then
		log "sroce.ko was already loaded; leaving it loaded"
		return 0
	fi
	sroce_load
	# Registered first, so it runs last: after every device, netdev and
	# namespace of the test is gone.
	defer sr_module_release
}

# sr_module_own: for a test that loads and unloads sroce.ko itself: it
# starts with the module unloaded (unloading it now if it is loaded, and
# loading it again at exit then), and leaves it unloaded otherwise.
sr_module_own() {
	if _sroce_loaded; then
		log "sroce.ko is loaded; unloading it for this test (reloaded at exit)"
		check rmmod sroce
		defer sroce_load
	fi
	defer_quiet rmmod sroce
}

# sr_module_release: rmmod sroce, waiting for asynchronous device removals
# (netdev or namespace deletion) to finish first.
sr_module_release() {
	local i
	_sroce_loaded || return 0
	for ((i = 0; i < 50; i++)); do
		rmmod sroce 2>/dev/null && return 0
		sr_nap 0.2
	done
	log "cleanup: rmmod sroce failed: $(rmmod sroce 2>&1)"
	return 1
}

# --- RDMA devices ---------------------------------------------------------------

# sr_link_add NS NAME NETDEV: create sroce device NAME on NETDEV (in NS) and
# make sure it is deleted at exit. Fails the test if creation fails.
sr_link_add() {
	local ns=$1 name=$2 dev=$3 err
	SR_NS_OF[$name]=$ns
	defer_quiet ns_exec "$ns" rdma link delete "$name"
	err=$(ns_exec "$ns" rdma link add "$name" type sroce netdev "$dev" 2>&1) ||
		fail "rdma link add $name type sroce netdev $dev (netns ${ns:--}) failed: $err"
	[[ -d "$SR_SYS/$name" ]] || fail "$name: rdma link add succeeded but $SR_SYS/$name is missing"
}

# sr_link_add_fails NS NAME NETDEV ERRTEXT: rdma link add must fail and print
# ERRTEXT (e.g. "Invalid argument"); NAME must not exist afterwards.
sr_link_add_fails() {
	local ns=$1 name=$2 dev=$3 want=$4 err rc=0
	defer_quiet ns_exec "$ns" rdma link delete "$name"
	log "+ ! rdma link add $name type sroce netdev $dev (netns ${ns:--})"
	err=$(ns_exec "$ns" rdma link add "$name" type sroce netdev "$dev" 2>&1) || rc=$?
	[[ $rc != 0 ]] || fail "rdma link add $name type sroce netdev $dev succeeded; expected '$want'"
	[[ "$err" == *"$want"* ]] || fail "rdma link add $name netdev $dev: got error '$err', expected '$want'"
	log "  failed as expected: $err"
}

sr_exists() { [[ -d "$SR_SYS/$1" ]]; }

# sr_wait_gone NAME [SECS=10]: wait for device NAME to disappear.
sr_wait_gone() {
	wait_for "! [[ -e $SR_SYS/$1 ]]" "${2:-10}" || fail "device $1 still exists after ${2:-10}s"
}

# sr_attr NAME FILE: a sysfs attribute of port 1 (FILE relative to ports/1).
sr_port_attr() { sr_line "$SR_SYS/$1/ports/1/$2"; }

# sr_hwc DEV NAME: hw counter NAME of DEV's port 1 (rdma statistic's source).
sr_hwc() { sr_line "$SR_SYS/$1/ports/1/hw_counters/$2"; }

# sr_counters_nz DEV: DEV's hardware counters that are not 0, as NAME=VALUE
# on one line (what a failed case shows of the device).
sr_counters_nz() {
	local f v out=''
	for f in "$SR_SYS/$1/ports/1/hw_counters/"*; do
		[[ -r $f ]] || continue
		sr_line -v v "$f" 2>/dev/null || continue
		[[ $v == 0 ]] || out+="${f##*/}=$v "
	done
	echo "${out:-(none, or no counters)}"
}

# sr_link_field NAME FIELD: a field of "rdma link show NAME/1 -j", run in
# the device's namespace.
sr_link_field() {
	ns_exec "${SR_NS_OF[$1]:-}" rdma link show "$1/1" -j | jq -r ".[0].$2 // empty"
}

# sr_pkts_mark DEV...: remember the devices' sent_pkts and rcvd_pkts (for
# sr_pkts_moved); fails the test if a device has no such counters.
declare -A SR_SENT0=() SR_RCVD0=()
sr_pkts_mark() {
	local d
	for d in "$@"; do
		SR_SENT0[$d]=$(sr_hwc "$d" sent_pkts)
		SR_RCVD0[$d]=$(sr_hwc "$d" rcvd_pkts)
		[[ -n "${SR_SENT0[$d]}" && -n "${SR_RCVD0[$d]}" ]] || fail "no sent_pkts/rcvd_pkts counters for $d"
	done
}

# sr_pkts_moved DEV...: both counters of each device went up since
# sr_pkts_mark; fails the test (or its linear case) otherwise.
sr_pkts_moved() {
	local d s r
	for d in "$@"; do
		s=$(sr_hwc "$d" sent_pkts)
		r=$(sr_hwc "$d" rcvd_pkts)
		log "$d: sent_pkts ${SR_SENT0[$d]} -> $s, rcvd_pkts ${SR_RCVD0[$d]} -> $r"
		((s > SR_SENT0[$d])) || fail "$d: sent_pkts did not move"
		((r > SR_RCVD0[$d])) || fail "$d: rcvd_pkts did not move"
	done
}

# sr_asyncwatch DEV: ibv_asyncwatch -d DEV in the background, its output in
# the file $events, its PID $watcher (killed at exit); returns once it
# watches, or fails the test.
# shellcheck disable=SC2034 # the variables are the caller's
sr_asyncwatch() {
	events=$(mktemp)
	defer rm -f "$events"
	ibv_asyncwatch -d "$1" >"$events" 2>&1 &
	watcher=$!
	defer_quiet kill "$watcher"
	wait_for "grep -q 'async event FD' $events" 10 ||
		fail "ibv_asyncwatch -d $1 did not start: $(cat "$events")"
}

# sr_expect_eq WHAT GOT WANT
sr_expect_eq() {
	if [[ "$2" == "$3" ]]; then
		log "ok: $1 = '$2'"
	else
		fail "$1: got '$2', want '$3'"
	fi
}

# sr_expect_port NAME STATE: STATE is ACTIVE or DOWN; checks sysfs state,
# phys_state and rdma link show.
sr_expect_port() {
	local name=$1 want=$2 st ph
	if [[ $want == ACTIVE ]]; then
		st="4: ACTIVE" ph="5: LinkUp"
	else
		st="1: DOWN" ph="3: Disabled"
	fi
	sr_expect_eq "$name port 1 state" "$(sr_port_attr "$name" state)" "$st"
	sr_expect_eq "$name port 1 phys_state" "$(sr_port_attr "$name" phys_state)" "$ph"
	sr_expect_eq "$name rdma link state" "$(sr_link_field "$name" state)" "$want"
}

# sr_mac NS DEV: DEV's MAC address, as ip prints it (aa:bb:cc:dd:ee:ff).
sr_mac() { ip -n "$1" -j link show dev "$2" | jq -r '.[0].address'; }

# sr_guid_of_mac MAC: the EUI-64 node GUID sroce derives from MAC, formatted
# like sysfs node_guid (xxxx:xxxx:xxxx:xxxx).
sr_guid_of_mac() {
	local -a b
	IFS=: read -ra b <<<"$1"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x${b[0]} ^ 0x02)) "${b[1]}" "${b[2]}" \
		"${b[3]}" "${b[4]}" "${b[5]}"
}

# sr_ib_mtu NETDEV_MTU: the active_mtu (bytes) sroce must report: the largest
# IB MTU with IB MTU + 84 (IPv6 + UDP + BTH + RETH + ImmDt + ICRC) <= the
# netdev MTU; 256 when not even that fits.
sr_ib_mtu() {
	local m
	for m in 4096 2048 1024 512 256; do
		if ((m + 84 <= $1)); then
			echo "$m"
			return
		fi
	done
	echo 256
}

# --- UDP 4791 sockets ---------------------------------------------------------------

# sr_sockets NS: the local addresses of UDP sockets bound to port 4791 in NS,
# IPv4 first, space separated ("0.0.0.0:4791 [::]:4791" with both, "" with none).
sr_sockets() {
	local line v4='' v6=''
	local -a f rest=()
	while read -r line; do
		read -ra f <<<"$line"
		case "${f[3]}" in
		"0.0.0.0:$SR_PORT") v4+="${f[3]} " ;;
		"[::]:$SR_PORT") v6+="${f[3]} " ;;
		*) rest+=("${f[3]}") ;;
		esac
	done < <(ns_exec "$1" ss -Huln "sport = :$SR_PORT")
	line="$v4$v6${rest[*]}"
	line=${line% }
	echo "${line% }"
}

# sr_expect_sockets NS yes|no
sr_expect_sockets() {
	local want=
	[[ $2 == no ]] || want="0.0.0.0:$SR_PORT [::]:$SR_PORT"
	sr_expect_eq "UDP $SR_PORT sockets in netns ${1:-init}" "$(sr_sockets "$1")" "$want"
}

# --- kernel log ---------------------------------------------------------------------

# sr_dmesg_mark: remember the current end of the kernel log.
sr_dmesg_mark() {
	SR_MARK="sroce-selftest-mark $$.$RANDOM.$SECONDS"
	echo "$SR_MARK" >/dev/kmsg
}

# sr_dmesg_since: kernel log lines after the last sr_dmesg_mark.
sr_dmesg_since() {
	dmesg | sed -n "\\|${SR_MARK:?sr_dmesg_mark first}|,\$p" | sed 1d
}

# sr_expect_dmesg ERE: a line matching ERE was logged since the mark.
sr_expect_dmesg() {
	local lines
	lines=$(sr_dmesg_since)
	if grep -qE -- "$1" <<<"$lines"; then
		log "ok: kernel log: $(grep -E -- "$1" <<<"$lines" | tail -n1 | sed 's/^\[[^]]*\] //')"
	else
		fail "expected a kernel log line matching '$1'; got since the mark:
$lines"
	fi
}

# --- networking -------------------------------------------------------------------

# sr_dummy NS NAME [MAC]: a dummy netdev in NS, up.
sr_dummy() {
	local ns=$1 name=$2 mac=${3:-}
	_ns_ip "$ns" link add "$name" ${mac:+address "$mac"} type dummy
	defer_quiet _ns_ip "$ns" link del "$name"
	_ns_ip "$ns" link set "$name" up
}

# sr_ping NS ADDR: one ICMP (IPv4) or ICMPv6 echo from NS to ADDR, with
# ping(8) if present, else a raw-socket ping in python. Besides checking
# reachability it leaves NS's neighbour entry for ADDR valid: ib_core resolves
# a RoCE destination MAC in modify_qp, and a cold IPv6 neighbour can cost that
# call its whole 1 s resolve timeout (see xsrq_pingpong.sh).
sr_ping() {
	local ns=$1 addr=$2
	if command -v ping >/dev/null; then
		ns_exec "$ns" ping -c 1 -W 3 "$addr" >/dev/null
		return
	fi
	ns_exec "$ns" "$PYTHON" - "$addr" <<'EOF'
import os, socket, struct, sys, time
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff
dst = sys.argv[1]
v6 = ':' in dst
ident = os.getpid() & 0xffff
# The ICMPv6 echo request is type 128; the kernel fills in its checksum.
hdr = struct.pack('!BBHHH', 128 if v6 else 8, 0, 0, ident, 1) + b'sroce-selftest!!'
pkt = hdr if v6 else hdr[:2] + struct.pack('!H', csum(hdr)) + hdr[4:]
if v6:
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(3)
s.sendto(pkt, (dst, 0))
want = socket.inet_pton(s.family, dst)
end = time.time() + 3
while time.time() < end:
    data, src = s.recvfrom(2048)
    # Raw ICMPv6 sockets deliver the message alone, raw ICMP ones the IP header too.
    icmp = data if v6 else data[(data[0] & 0xf) * 4:]
    if (socket.inet_pton(s.family, src[0]) == want and icmp[0] == (129 if v6 else 0)
            and struct.unpack('!H', icmp[4:6])[0] == ident):
        sys.exit(0)
sys.exit(1)
EOF
}

# --- GIDs -----------------------------------------------------------------------------

# sr_gid_sysfs [-v VAR] ADDR: the sysfs spelling of the RoCE v2 GID of an
# IPv4 or IPv6 address (IPv4 as ::ffff:a.b.c.d), printed or put in VAR; in
# bash builtins: python's start-up costs seconds under TCG, a subshell 70 ms
# on the debug kernel, and tests call this in wait_for loops and per run.
sr_gid_sysfs() {
	local _gs_var='' _gs_a _gs_l _gs_r _gs_g _gs_i _gs_n _gs_out
	local -a _gs_o _gs_lg _gs_rg _gs_x=()
	if [[ $1 == -v ]]; then
		_gs_var=$2
		shift 2
	fi
	_gs_a=$1
	if [[ $_gs_a != *:* ]]; then
		IFS=. read -ra _gs_o <<<"$_gs_a"
		printf -v _gs_out '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${_gs_o[@]}"
	else
		if [[ $_gs_a == *::* ]]; then _gs_l=${_gs_a%%::*} _gs_r=${_gs_a#*::}; else _gs_l=$_gs_a _gs_r=''; fi
		IFS=: read -ra _gs_lg <<<"$_gs_l"
		IFS=: read -ra _gs_rg <<<"$_gs_r"
		_gs_n=$((8 - ${#_gs_lg[@]} - ${#_gs_rg[@]}))
		for _gs_g in "${_gs_lg[@]}"; do _gs_x+=("$_gs_g"); done
		for ((_gs_i = 0; _gs_i < _gs_n; _gs_i++)); do _gs_x+=(0); done
		for _gs_g in "${_gs_rg[@]}"; do _gs_x+=("$_gs_g"); done
		for ((_gs_i = 0; _gs_i < 8; _gs_i++)); do printf -v "_gs_x[_gs_i]" '%04x' "0x${_gs_x[_gs_i]}"; done
		printf -v _gs_out '%s:%s:%s:%s:%s:%s:%s:%s' "${_gs_x[@]:0:8}"
	fi
	if [[ -n $_gs_var ]]; then
		printf -v "$_gs_var" '%s' "$_gs_out"
	else
		printf '%s\n' "$_gs_out"
	fi
}

# sr_ip_text ADDR: ADDR as inet_ntop(3) (and so ibv_devinfo) prints it; IPv4
# as the IPv4-mapped IPv6 address of its GID.
sr_ip_text() {
	if [[ $1 == *:* ]]; then
		"$PYTHON" -c 'import ipaddress, sys; print(ipaddress.IPv6Address(sys.argv[1]).compressed)' "$1"
	else
		echo "::ffff:$1"
	fi
}

# sr_gid_index [-v VAR] DEV ADDR: the index of DEV port 1's "RoCE v2" GID
# for ADDR, printed or put in VAR; returns 1 if there is none. Builtins only,
# and the scan goes up the table and stops at the GID: ib_core puts a new GID
# in the lowest free slot, so a lookup reads a few entries and not all 256
# (each sysfs read costs about 4 ms on the debug kernel under TCG, where
# reading three attributes of every entry took 4.5-5.3 s a lookup and the
# six of a pingpong test's topology a minute, 2026-12-07). An unused entry
# reads as the zero GID; past the last one the read fails.
sr_gid_index() {
	local _gi_var='' _gi_want _gi_p _gi_i _gi_g _gi_t
	if [[ $1 == -v ]]; then
		_gi_var=$2
		shift 2
	fi
	sr_gid_sysfs -v _gi_want "$2"
	_gi_p=$SR_SYS/$1/ports/1
	{
		for ((_gi_i = 0; ; _gi_i++)); do
			read -r _gi_g <"$_gi_p/gids/$_gi_i" || return 1
			[[ $_gi_g == "$_gi_want" ]] || continue
			_gi_t=''
			read -r _gi_t <"$_gi_p/gid_attrs/types/$_gi_i" || continue
			[[ $_gi_t == "RoCE v2" ]] && break
		done
	} 2>/dev/null
	if [[ -n $_gi_var ]]; then
		printf -v "$_gi_var" '%s' "$_gi_i"
	else
		echo "$_gi_i"
	fi
}

# sr_wait_gid DEV ADDR: wait up to 10 s for DEV port 1's RoCE v2 GID of
# ADDR; fails the test, listing the GIDs DEV has, if none appears.
sr_wait_gid() {
	local _wg_i
	_sr_gid_wait _wg_i "$1" "$2"
}

# sr_gid_of DEV ADDR: sr_wait_gid, and print the GID's index (found once).
sr_gid_of() {
	local _go_i
	_sr_gid_wait _go_i "$1" "$2"
	echo "$_go_i"
}

# _sr_gid_wait VAR DEV ADDR: sr_wait_gid, the index put in VAR.
_sr_gid_wait() {
	wait_for "sr_gid_index -v $1 $2 $3" 10 || fail "$2: no RoCE v2 GID for $3: $(sr_gids "$2")"
}

# sr_gid_text ADDR: the GID as the ibv_*_pingpong tools print it (inet_ntop)
# for an address already written canonically (IPv4 as ::ffff:a.b.c.d);
# sr_ip_text canonicalises any IPv6 spelling, at the cost of a python run.
sr_gid_text() { if [[ $1 == *:* ]]; then echo "$1"; else echo "::ffff:$1"; fi; }

# sr_gids DEV: "INDEX GID TYPE NDEV" for each valid GID of DEV port 1 (TYPE
# is two words, "RoCE v2"), by index; an entry whose type or netdev cannot be
# read (unused ones fail with EINVAL) is left out. Bash's read only: tests
# poll this, and each program started costs a debug kernel under TCG most
# of a second.
sr_gids() {
	local p=$SR_SYS/$1/ports/1 f i gid type ndev
	local -a out=()
	{
		for f in "$p"/gid_attrs/types/*; do
			i=${f##*/}
			[[ $i =~ ^[0-9]+$ ]] || continue
			# An unused entry's type fails first: one read of it, not three.
			read -r type <"$f" || continue
			read -r ndev <"$p/gid_attrs/ndevs/$i" || continue
			read -r gid <"$p/gids/$i" || continue
			[[ -n $type && -n $ndev && -n $gid ]] || continue
			out[i]="$i $gid $type $ndev"
		done
	} 2>/dev/null
	# An indexed array lists its entries by index.
	for i in "${!out[@]}"; do
		echo "${out[i]}"
	done
}

# --- provider -------------------------------------------------------------------------

# sr_more: true when the long variant of the tests is asked for
# (SROCE_FULL=1): the extra sizes and modes a default run leaves out ("make
# test" keeps to CI's time budget), and each test's own *_FULL knob.
sr_more() { [[ "${SROCE_FULL:-0}" == 1 ]]; }

# sr_more_case NAME: for a sub-case of the long variant only: true with
# SROCE_FULL=1; otherwise NAME is reported as skipped and it returns 1.
#   sr_more_case v4-64 && sr_pp4 v4-64 64 200 -c
sr_more_case() {
	sr_more && return 0
	subtest_skip "$1" "long variant only (SROCE_FULL=1)"
	return 1
}

# sr_have_provider: the built provider is there (then provider_env is in
# effect for the rest of the test). SROCE_PROVIDER=/path/libsroce overrides
# build/user/libsroce (the RDMAV_DRIVERS prefix of libsroce-rdmav<N>.so).
sr_have_provider() {
	provider_so >/dev/null || return 1
	if [[ -z "${SR_DEVINFO_ERR:-}" ]]; then
		SR_DEVINFO_ERR=$(mktemp)
		defer rm -f "$SR_DEVINFO_ERR"
	fi
	provider_env
	RDMAV_DRIVERS=$(provider_prefix)
	export RDMAV_DRIVERS
}

# sr_devinfo DEV [ARGS...]: ibv_devinfo -d DEV (stdout only; stderr to
# $SR_DEVINFO_ERR, which tests check for warnings).
sr_devinfo() {
	local dev=$1
	shift
	ibv_devinfo -d "$dev" "$@" 2>"$SR_DEVINFO_ERR"
}

# sr_devinfo_field TEXT KEY: the value of "KEY: value" in ibv_devinfo output.
sr_devinfo_field() {
	awk -v k="$2:" '$1 == k { $1 = ""; sub(/^[ \t]+/, ""); print; exit }' <<<"$1"
}

# --- rdma_rxe -------------------------------------------------------------------------

# sr_rxe_use: load rdma_rxe if needed (unloaded at exit then). Returns 1 if
# it cannot be loaded (e.g. UDP 4791 of the initial namespace is taken).
sr_rxe_use() {
	[[ -d /sys/module/rdma_rxe ]] && return 0
	modprobe rdma_rxe 2>/dev/null || return 1
	defer_quiet modprobe -r rdma_rxe
}

# sr_rxe_link_add NAME NETDEV: an rdma_rxe device NAME on NETDEV (initial
# namespace), deleted at exit. Fails the test if it cannot be created.
sr_rxe_link_add() {
	check rdma link add "$1" type rxe netdev "$2"
	defer_quiet rdma link delete "$1"
}

# sr_rxe_dummy NAME NETDEV ADDR/PREFIX...: a dummy NETDEV in the initial
# namespace, up, holding the addresses (IPv6 ones without DAD), and an
# rdma_rxe device NAME on it (sr_rxe_link_add).
sr_rxe_dummy() {
	local name=$1 dev=$2 a
	shift 2
	sr_dummy - "$dev"
	for a in "$@"; do
		if [[ $a == *:* ]]; then
			check ip addr add "$a" dev "$dev" nodad
		else
			check ip addr add "$a" dev "$dev"
		fi
	done
	sr_rxe_link_add "$name" "$dev"
}

# sr_rxe_veth_topology IPR IPS IP6R IP6S: the rdma_rxe interop tests'
# topology: a veth pair $vr (initial namespace) / $vs (in namespace $ns)
# holding IPR/24 and IP6R/64 / IPS/24 and IP6S/64, an rdma_rxe device $rxe
# on $vr and a sroce device $dev on $vs. Returns once both IPv4 GIDs exist.
# shellcheck disable=SC2034 # the variables are the caller's
sr_rxe_veth_topology() {
	ns=${SR_ID}s vr=${SR_ID}vr vs=${SR_ID}vs rxe=${SR_ID}rxe dev=${SR_ID}s0
	ns_create "$ns"
	veth_pair - "$vr" "$ns" "$vs"
	check ip addr add "$1/24" dev "$vr"
	check ip -n "$ns" addr add "$2/24" dev "$vs"
	check ip addr add "$3/64" dev "$vr" nodad
	check ip -n "$ns" addr add "$4/64" dev "$vs" nodad
	sr_rxe_link_add "$rxe" "$vr"
	sr_link_add "$ns" "$dev" "$vs"
	sr_wait_gid "$rxe" "$1"
	sr_wait_gid "$dev" "$2"
}

# sr_capture_start NS IFACE PCAP: capture RoCE (UDP 4791) on IFACE in NS ("-":
# this namespace) into PCAP with dumpcap, in the background, at most 600 s;
# waits (up to 60 s: dumpcap starts slowly under TCG) until it captures.
# Sets SR_CAPTURE_PID. Returns 1 (and logs why) if it did not start.
#
# Stop it with sr_capture_stop, which sends SIGTERM: a background job of a
# non-interactive shell starts with SIGINT ignored, and one that has not yet
# installed its own handler would lose a SIGINT and capture until killed.
sr_capture_start() {
	local ns=$1 ifc=$2 pcap=$3
	SR_CAPTURE_LOG=$pcap.log
	local -a cmd=(timeout -k 5 600 dumpcap -q -i "$ifc" -f "udp port $SR_PORT" -w "$pcap")
	# Not through ns_exec: the PID must be timeout(1)'s (ip netns exec
	# execs it), not a subshell's that a signal would leave it behind.
	[[ "$ns" == - ]] || cmd=(ip netns exec "$ns" "${cmd[@]}")
	"${cmd[@]}" >"$SR_CAPTURE_LOG" 2>&1 &
	SR_CAPTURE_PID=$!
	if ! wait_for "grep -q 'Capturing on' $SR_CAPTURE_LOG" 60; then
		log "  (dumpcap did not start capturing within 60 s: $(tail -n 2 "$SR_CAPTURE_LOG" | xargs))"
		sr_capture_stop
		return 1
	fi
}

# sr_capture_stop: end sr_capture_start's dumpcap (SIGTERM, then SIGKILL
# after 10 s) and reap it; bounded whatever state it is in.
sr_capture_stop() {
	local pid=${SR_CAPTURE_PID:-} i
	[[ -n "$pid" ]] || return 0
	SR_CAPTURE_PID=''
	# timeout(1) passes SIGTERM on to dumpcap.
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sr_nap 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "  (dumpcap did not end within 10 s of SIGTERM: killed)"
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

# sr_capture_tools: dumpcap and tshark are installed; if not, logs that
# there will be no capture and returns 1.
sr_capture_tools() {
	command -v dumpcap >/dev/null && command -v tshark >/dev/null && return 0
	log "  (no dumpcap/tshark: no capture)"
	return 1
}

# sr_pcap_dissect PCAP: log the dissector's view (UDP 4791 as RoCE) of the
# first 40 packets of PCAP.
sr_pcap_dissect() {
	log "  dissector's view (first 40 packets):"
	tshark -r "$1" -d udp.port==4791,infiniband 2>&1 | head -n 40 | sed 's/^/  pcap| /'
}

# --- servers and the ibv_*_pingpong runs ------------------------------------------

# sr_untrapped CMD...: for servers started with &: a failing server is
# reported by whoever waits for it, not by lib.sh's ERR trap in its subshell.
sr_untrapped() {
	trap - ERR
	"$@"
}

# sr_run_prog_tap LIMIT WHAT BIN ARGS...: one run of a verbs test program
# that prints "PASS NAME" / "FAIL NAME" lines (rc_errors, rc_mw) under
# timeout LIMIT; its output is shown, each of those lines is a sub-case
# "WHAT: NAME" (pass_fail_to_tap), and a failed run adds "WHAT (exit N)" to
# $SR_PROG_FAILED. Uses the caller's $tmp.
SR_PROG_FAILED=()
# shellcheck disable=SC2154 # $tmp is the caller's
sr_run_prog_tap() {
	local limit=$1 what=$2 bin=$3 rc=0
	shift 3
	log "### $what"
	log "+ $bin $*"
	timeout "$limit" "$bin" "$@" >"$tmp/out" 2>&1 || rc=$?
	cat "$tmp/out"
	[[ $rc == 0 ]] || SR_PROG_FAILED+=("$what (exit $rc)")
	pass_fail_to_tap <"$tmp/out" >"$tmp/tap"
	subtests_from_tap "$tmp/tap" "$what" "$rc"
}

# sr_rping NS_S ADDR NS_C SERVER_SECS CLIENT_SECS DIR [RPING_ARGS...]: an
# rping server on ADDR in namespace NS_S and, once its RDMA CM ID listens, a
# client from NS_C, both with RPING_ARGS and each under its time limit;
# their output in DIR/server and DIR/client. Sets sr_rping_rc and
# sr_rping_src (the exit statuses), sr_rping_done (the client's "ping data"
# lines) and sr_rping_secs. Returns 1, with sr_rping_why, if the server
# never listened.
# shellcheck disable=SC2034 # the variables are the caller's
sr_rping() {
	local ns_s=$1 addr=$2 ns_c=$3 ts=$4 tc=$5 dir=$6 start=$SECONDS spid
	shift 6
	sr_rping_rc=0 sr_rping_src=0 sr_rping_done=0 sr_rping_why=
	ip netns exec "$ns_s" timeout "$ts" rping -s -a "$addr" "$@" >"$dir/server" 2>&1 &
	spid=$!
	# The server must be listening before the client resolves the route.
	if ! wait_for "rdma res show cm_id 2>/dev/null | grep 'state LISTEN' | grep -q 'comm rping ' || ! kill -0 $spid" 30 ||
		! kill -0 "$spid" 2>/dev/null; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		sr_rping_why="no listening rping server: $(xargs <"$dir/server")"
		return 1
	fi
	ip netns exec "$ns_c" timeout "$tc" rping -c -v -a "$addr" "$@" >"$dir/client" 2>&1 || sr_rping_rc=$?
	wait "$spid" || sr_rping_src=$?
	sr_rping_done=$(grep -c 'ping data' "$dir/client" || true)
	sr_rping_secs=$((SECONDS - start))
}

# sr_listening NS PORT: something listens on TCP PORT in namespace NS.
sr_listening() { ns_exec "$1" ss -Hltn "sport = :$2" | grep -q .; }

# sr_server_listens PID NS PORT: wait up to 20 s for the server PID (started
# with &) to listen on TCP PORT in namespace NS; if it does not, kill and
# reap it, set the caller's $why and return 1.
sr_server_listens() {
	wait_for "sr_listening $2 $3" 20 && return 0
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	why="server did not listen on TCP $3"
	return 1
}

# sr_veth_topology ADDR_A ADDR_B [ADDR6_A ADDR6_B]: namespaces $nsa and $nsb
# joined by a veth pair $va/$vb holding ADDR_A/24 and ADDR_B/24 (and the IPv6
# addresses /64, if given), a sroce device on each end: $da $db.
# shellcheck disable=SC2034 # the variables are the caller's
sr_veth_topology() {
	nsa=${SR_ID}a nsb=${SR_ID}b
	va=${SR_ID}va vb=${SR_ID}vb
	da=${SR_ID}0 db=${SR_ID}1
	ns_create "$nsa"
	ns_create "$nsb"
	veth_pair "$nsa" "$va" "$nsb" "$vb"
	check ip -n "$nsa" addr add "$1/24" dev "$va"
	check ip -n "$nsb" addr add "$2/24" dev "$vb"
	if [[ -n ${3:-} ]]; then
		check ip -n "$nsa" addr add "$3/64" dev "$va" nodad
		check ip -n "$nsb" addr add "$4/64" dev "$vb" nodad
	fi
	sr_link_add "$nsa" "$da" "$va"
	sr_link_add "$nsb" "$db" "$vb"
}

# sr_reorder_setup N: the start of the tests that run rping over a netem
# impairment (rc_read_reorder, rc_req_reorder): rping and tc, sr_setup, the
# provider, sr_veth_topology with 10.N.0.1 (A) and 10.N.0.2 (B) once both
# have their GIDs; $tmp (removed at exit) and $netem, the impairment.
# shellcheck disable=SC2034 # the variables are the caller's
sr_reorder_setup() {
	require_cmd rping tc timeout
	sr_setup
	sr_have_provider || skip "the provider (build/user/libsroce-rdmav<N>.so) is not built"
	sr_veth_topology "10.$1.0.1" "10.$1.0.2"
	sr_wait_gid "$da" "10.$1.0.1"
	sr_wait_gid "$db" "10.$1.0.2"
	tmp=$(mktemp -d)
	defer rm -rf "$tmp"
	netem="delay 1ms 1ms loss 2% duplicate 2%"
}

# sr_netem NS DEV: $netem on DEV's egress for every packet but those to QP1
# (IPv4, UDP 4791, BTH DestQP 1: the RDMA CM's MADs). These tests judge the
# RC data path. The CM's DREQ is sent once when rping's client disconnects
# and destroys its ID at once (the kernel CM cancels its retries): a lost
# DREQ leaves the server waiting for a disconnect that never comes, whatever
# the transport does (debug lane, 2026-12-06: the client ended all 200
# iterations, the server ran into its time limit).
# The debug kernel (tools/debug-kernel/debug.config) has neither the prio
# qdisc nor the u32 classifier: there every packet gets $netem, with a note.
sr_netem() {
	local ns=$1 dev=$2 err
	# Band 0 unimpaired, band 1 (the default for every priority) netem.
	if ! err=$(tc -n "$ns" qdisc add dev "$dev" root handle 1: prio bands 2 \
		priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2>&1); then
		# Only a kernel without the prio qdisc falls back; any other error fails.
		[[ $err == *"qdisc kind is unknown"* ]] || fail "tc qdisc add dev $dev root prio: $err"
		log "NOTE: no prio qdisc here: netem on every packet, the CM's too (a lost DREQ can leave rping's server waiting)"
		# shellcheck disable=SC2086 # netem takes its words apart
		check tc -n "$ns" qdisc add dev "$dev" root netem $netem
		return 0
	fi
	# shellcheck disable=SC2086 # netem takes its words apart
	check tc -n "$ns" qdisc add dev "$dev" parent 1:2 handle 20: netem $netem
	# The BTH follows a 20-byte IPv4 header and the UDP header: its DestQP
	# is the low 24 bits of the word at byte 32.
	check tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		match u32 0x00000001 0x00ffffff at 32 flowid 1:1
}

# sr_vt_topology N [v6l]: the topology of the tests that run a verbs test
# program (build/verbs-tests) between two devices and on one looping back:
# sr_veth_topology with 10.N.0.1/24 and fdN::1/64 (A), 10.N.0.2/24 and
# fdN::2/64 (B); a namespace $nsl with a dummy $vl holding 10.M.0.1/24, and
# fdM::1/64 with v6l (M = N + 1); a sroce device on it: $dl. Returns once
# every address has its GID.
# shellcheck disable=SC2034 # the variables are the caller's
sr_vt_topology() {
	local n=$1 m=$(($1 + 1)) v6l=${2:-}
	sr_veth_topology "10.$n.0.1" "10.$n.0.2" "fd$n::1" "fd$n::2"
	nsl=${SR_ID}l vl=${SR_ID}vl dl=${SR_ID}2
	ns_create "$nsl"
	sr_dummy "$nsl" "$vl"
	check ip -n "$nsl" addr add "10.$m.0.1/24" dev "$vl"
	[[ $v6l != v6l ]] || check ip -n "$nsl" addr add "fd$m::1/64" dev "$vl" nodad
	sr_link_add "$nsl" "$dl" "$vl"
	sr_wait_gid "$da" "10.$n.0.1"
	sr_wait_gid "$db" "10.$n.0.2"
	sr_wait_gid "$da" "fd$n::1"
	sr_wait_gid "$db" "fd$n::2"
	sr_wait_gid "$dl" "10.$m.0.1"
	[[ $v6l != v6l ]] || sr_wait_gid "$dl" "fd$m::1"
}

# sr_rc_qp_json DEV: DEV's (first) RC QP as one line of JSON, from "rdma -dd
# -j res show qp" in DEV's namespace, with the driver details (drv_*:
# kernel/sroce_res.c, DCQCN: kernel/sroce_cc.c); nothing if it has none.
sr_rc_qp_json() {
	ns_exec "${SR_NS_OF[$1]}" rdma -dd -j res show qp |
		jq -c --arg d "$1" '[.[] | select(.ifname == $d and .type == "RC")][0] // empty'
}

# sr_vt_case LIMIT TIMEOUT SUBCASES WHAT ARGS...: one run of the caller's
# verbs test program $bin (rc_bigmsg, rc_mt) over $da $db $dl, WHAT logged
# and reported, with ARGS, --timeout TIMEOUT (its own limit) and the next
# seed: $seed plus the run's number, so SROCE_SEED=$seed reproduces the
# whole test. Killed after LIMIT seconds. SUBCASES is a sed script that
# turns its output into TAP lines, a sub-case each ("ok - WRITE"), or ''
# for one sub-case, WHAT. A run that failed is added to the caller's
# array failed, which the caller checks at the end: every run runs.
_sr_vt_n=0
# shellcheck disable=SC2154 # bin, seed and failed are the caller's
sr_vt_case() {
	local limit=$1 timeout=$2 subcases=$3 what=$4 t0=$SECONDS rc=0 out
	shift 4
	_sr_vt_n=$((_sr_vt_n + 1))
	out=$(mktemp)
	log "### $what"
	sr_run_or_dump timeout "$limit" "$bin" --seed $((seed + _sr_vt_n)) \
		--timeout "$timeout" "$@" >"$out" 2>&1 || rc=$?
	cat "$out"
	if [[ $rc != 0 ]]; then
		failed+=("$what")
		log "$(basename "$bin") --seed $((seed + _sr_vt_n)) failed (see above)"
	fi
	if [[ -n $subcases ]]; then
		sed -nE "$subcases" "$out" >"$out.tap"
	else
		: >"$out.tap"
	fi
	subtests_from_tap "$out.tap" "$what" "$rc"
	rm -f "$out" "$out.tap"
	log "($what: $((SECONDS - t0)) s)"
}

# sr_run_or_dump CMD...: run CMD; if it fails, log the nonzero counters of
# the devices $da $db $dl (retransmissions, timeouts, drops tell what went
# wrong; they count from device creation) and return its status.
sr_run_or_dump() {
	local rc=0 d
	log "+ $*"
	"$@" || rc=$?
	[[ $rc != 0 ]] || return 0
	for d in "$da" "$db" "$dl"; do
		log "$d counters: $(rdma statistic show link "$d/1" | tr ' ' '\n' |
			awk 'NR > 2 && NR % 2 == 1 { k = $0 } NR > 2 && NR % 2 == 0 && $0 != 0 { printf "%s %s ", k, $0 }')"
	done
	log "FAILED: '$*' exited with $rc"
	return "$rc"
}

# sr_pp_topology sroce|rxe: the pingpong tests' topology.
# sroce: namespaces $nsa and $nsb joined by a veth pair $va/$vb with IPv4
# and IPv6 addresses ($v4a $v4b $v6a $v6b), a namespace $nsl with a dummy
# $vl ($v4l $v6l), and a sroce device on each netdev: $da $db $dl (the
# names sr_vt_topology uses).
# rxe: one rdma_rxe device on a dummy $rd in the initial namespace holding
# all those addresses (the two sides and the loopback are that device);
# skips the test when rdma_rxe cannot be loaded. Either way it sets srv4,
# srv6 and srvl (where a client reaches the server's TCP side channel: the
# pingpong servers listen on IPv4 only, even when the QPs use IPv6 GIDs),
# mtu_dev and mtu_peer (the netdevs a path MTU case changes, as NS DEV),
# and the GID indexes ga4 gb4 ga6 gb6 gl4 gl6, and logs them.
# shellcheck disable=SC2034 # the variables are the caller's
sr_pp_topology() {
	v4a=192.0.2.1 v4b=192.0.2.2 v6a=2001:db8::1 v6b=2001:db8::2
	v4l=198.51.100.1 v6l=2001:db8:1::1
	case $1 in
	sroce)
		sr_module_use
		sr_have_provider || skip "the provider build/user/libsroce-rdmav<N>.so is not built"
		nsa=${SR_ID}a nsb=${SR_ID}b nsl=${SR_ID}l
		va=${SR_ID}va vb=${SR_ID}vb vl=${SR_ID}vl
		da=${SR_ID}s0 db=${SR_ID}s1 dl=${SR_ID}sl
		ns_create "$nsa"
		ns_create "$nsb"
		ns_create "$nsl"
		veth_pair "$nsa" "$va" "$nsb" "$vb"
		check ip -n "$nsa" addr add "$v4a/24" dev "$va"
		check ip -n "$nsb" addr add "$v4b/24" dev "$vb"
		check ip -n "$nsa" addr add "$v6a/64" dev "$va" nodad
		check ip -n "$nsb" addr add "$v6b/64" dev "$vb" nodad
		sr_dummy "$nsl" "$vl"
		check ip -n "$nsl" addr add "$v4l/24" dev "$vl"
		check ip -n "$nsl" addr add "$v6l/64" dev "$vl" nodad
		sr_link_add "$nsa" "$da" "$va"
		sr_link_add "$nsb" "$db" "$vb"
		sr_link_add "$nsl" "$dl" "$vl"
		srv4=$v4a srv6=$v4a srvl=127.0.0.1
		mtu_dev=("$nsa" "$va") mtu_peer=("$nsb" "$vb")
		;;
	rxe)
		sr_rxe_use || skip "rdma_rxe cannot be loaded"
		nsa=- nsb=- nsl=-
		rd=${SR_ID}rd
		da=${SR_ID}rxe db=${SR_ID}rxe dl=${SR_ID}rxe
		sr_dummy - "$rd"
		check ip addr add "$v4a/24" dev "$rd"
		check ip addr add "$v4l/24" dev "$rd"
		check ip addr add "$v6a/64" dev "$rd" nodad
		check ip addr add "$v6l/64" dev "$rd" nodad
		check rdma link add "$da" type rxe netdev "$rd"
		defer_quiet rdma link delete "$da"
		v4b=$v4a v6b=$v6a
		srv4=127.0.0.1 srv6=127.0.0.1 srvl=127.0.0.1
		mtu_dev=(- "$rd") mtu_peer=()
		;;
	*) fail "the backend must be sroce or rxe, not '$1'" ;;
	esac
	ga4=$(sr_gid_of "$da" "$v4a") gb4=$(sr_gid_of "$db" "$v4b")
	ga6=$(sr_gid_of "$da" "$v6a") gb6=$(sr_gid_of "$db" "$v6b")
	gl4=$(sr_gid_of "$dl" "$v4l") gl6=$(sr_gid_of "$dl" "$v6l")
	log "GIDs: $da v4 #$ga4 v6 #$ga6; $db v4 #$gb4 v6 #$gb6; $dl v4 #$gl4 v6 #$gl6"
}

# sr_pp_begin PROG FIRST_PORT [SRV_LIMIT CLI_LIMIT [nqp]]: what a pingpong
# test (rc_, uc_, ud_, srq_pingpong.sh) needs before its topology: root,
# the test VM, the programs (PROG among them); $tmp (removed at exit),
# $failures (0) and $next_port (FIRST_PORT), which sr_pp uses. The
# limits (seconds, 150 and 120 by default) and "nqp" are for sr_pp4 and
# its siblings.
# shellcheck disable=SC2034 # the variables are the caller's
sr_pp_begin() {
	[[ $EUID == 0 ]] || skip "needs root"
	[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM (tools/vm/run -- selftests/run.sh)"
	require_cmd ip rdma ss jq "$1" ibv_devinfo timeout
	tmp=$(mktemp -d)
	defer rm -rf "$tmp"
	failures=0
	next_port=$2
	SR_PP_PROG=$1 SR_PP_LIMITS=("${3:-150}" "${4:-120}") SR_PP_NQP=${5:-}
}

# sr_pp4 / sr_pp6 / sr_ppl4 / sr_ppl6 TAG SIZE ITERS [NQP] [ARGS...]: one
# sr_pp exchange of sr_pp_begin's program under its limits, between
# sr_pp_topology's A (server) and B (client) over their IPv4 / IPv6 GIDs,
# or on the loopback device over its IPv4 / IPv6 GID. NQP is there if
# sr_pp_begin was given "nqp".
sr_pp4() { _sr_pp_at v4 "$@"; }
sr_pp6() { _sr_pp_at v6 "$@"; }
sr_ppl4() { _sr_pp_at l4 "$@"; }
sr_ppl6() { _sr_pp_at l6 "$@"; }
# shellcheck disable=SC2154 # the topology's variables are the caller's
_sr_pp_at() {
	local where=$1 tag=$2 size=$3 iters=$4 nqp=''
	local -a ends
	shift 4
	if [[ -n $SR_PP_NQP ]]; then
		nqp=$1
		shift
	fi
	case $where in
	v4) ends=("$nsa" "$da" "$ga4" "$nsb" "$db" "$gb4" "$srv4" "$v4a" "$v4b") ;;
	v6) ends=("$nsa" "$da" "$ga6" "$nsb" "$db" "$gb6" "$srv6" "$v6a" "$v6b") ;;
	l4) ends=("$nsl" "$dl" "$gl4" "$nsl" "$dl" "$gl4" "$srvl" "$v4l" "$v4l") ;;
	l6) ends=("$nsl" "$dl" "$gl6" "$nsl" "$dl" "$gl6" "$srvl" "$v6l" "$v6l") ;;
	esac
	sr_pp "$SR_PP_PROG" "${SR_PP_LIMITS[@]}" "$tag" "$size" "$iters" "$nqp" "${ends[@]}" "$@"
}

# sr_pp_mtu4096: raise the MTU of sr_pp_topology's $mtu_dev and $mtu_peer to
# 9000 and wait until $da and $db report active_mtu 4096 (or fail).
sr_pp_mtu4096() {
	local d ns
	_ns_ip "${mtu_dev[0]}" link set "${mtu_dev[1]}" mtu 9000
	[[ ${#mtu_peer[@]} == 0 ]] || _ns_ip "${mtu_peer[0]}" link set "${mtu_peer[1]}" mtu 9000
	for d in "$da" "$db"; do
		ns=$nsa
		[[ $d == "$da" ]] || ns=$nsb
		wait_for "ns_exec $ns ibv_devinfo -d $d | grep -q 'active_mtu:[[:space:]]*4096'" 10 ||
			fail "$d: active_mtu is not 4096 with netdev MTU 9000: $(ns_exec "$ns" ibv_devinfo -d "$d" | grep mtu)"
	done
	log "ok: active_mtu 4096 on $da and $db"
}

# sr_pp_e2e NAME LIMIT: build/user/tests/NAME (sroce_e2e_ud, sroce_e2e_srq)
# on the loopback device $dl with its IPv4 and IPv6 GIDs, under timeout
# LIMIT; its TAP lines are sub-cases "NAME: ..."; a failed run counts in
# the caller's $failures and shows the kernel log. Skipped if not built.
# shellcheck disable=SC2154 # $tmp is the caller's
sr_pp_e2e() {
	local name=$1 limit=$2 e2e=$SROCE_ROOT/build/user/tests/$1 rc=0
	if [[ ! -x $e2e ]]; then
		subtest_skip "$name" "build/user/tests/$name is not built (make user)"
		return 0
	fi
	log "=== $name on $dl, IPv4 and IPv6 GIDs"
	log "+ [$nsl] $e2e $dl $gl4 $gl6"
	ns_exec "$nsl" timeout "$limit" "$e2e" "$dl" "$gl4" "$gl6" >"$tmp/e2e" 2>&1 || rc=$?
	if [[ $rc == 0 ]]; then
		sed 's/^/  /' "$tmp/e2e"
	else
		failures=$((failures + 1))
		sed 's/^/  e2e| /' "$tmp/e2e"
		sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
	fi
	subtests_from_tap "$tmp/e2e" "$name" "$rc"
}

# sr_pp_end WHAT: the end of a pingpong test: show the kernel log's lines
# about sroce since sr_dmesg_mark, and fail if the caller's $failures counted
# any; WHAT names the runs ("ibv_rc_pingpong run(s)").
sr_pp_end() {
	local e missing=''
	if sr_dmesg_since | grep -qi sroce; then
		log "kernel log lines about sroce during the test:"
		sr_dmesg_since | grep -i sroce | tail -n 20 | sed 's/^/  dmesg| /'
	fi
	[[ $failures == 0 ]] || fail "$failures $1 failed (see NOT OK above)"
	# An exchange SROCE_PP_CASES names for this test that did not run is a
	# mistake that would skip the test's exchanges unnoticed.
	for e in ${SROCE_PP_CASES:-}; do
		[[ ${e%%:*} != "${SROCE_TEST_NAME:-}" || "${SR_PP_RAN:-} " == *" ${e#*:} "* ]] ||
			missing+=" ${e#*:}"
	done
	[[ -z $missing ]] || fail "SROCE_PP_CASES names exchanges that did not run here:$missing"
}

# sr_pp_wanted TAG: false if SROCE_PP_CASES names exchanges of this test
# ("rc_pingpong:v4-1 ud_pingpong:v6-events ...", TEST:TAG, by the test's
# name: $SROCE_TEST_NAME) and TAG is not one of them: a lane that runs a
# subset of the pingpong tests' exchanges (tools/kver-lane.sh). Tests it
# does not name run all of theirs.
sr_pp_wanted() {
	local t=${SROCE_TEST_NAME:-} l=" ${SROCE_PP_CASES:-} "
	l=${l//[$'\t\n']/ }
	[[ $l != *" $t:"* || $l == *" $t:$1 "* ]]
}

# sr_pp PROG SRV_TIMEOUT CLI_TIMEOUT TAG SIZE ITERS NQP SNS SDEV SGID CNS CDEV
#       CGID ADDR SADDR CADDR [ARGS...]:
# one ibv_*_pingpong (PROG) exchange: the server (SNS/SDEV/SGID) and the
# client (CNS/CDEV/CGID, connecting to ADDR over TCP), both with -s SIZE
# -n ITERS (and -q NQP unless NQP is empty) ARGS, each under its timeout;
# SADDR/CADDR are the addresses of their GIDs. Then both sides' reports are
# checked (sr_pp_verify) and the exchange is one subtest. Counts a failure
# in the caller's $failures rather than ending the test, so that one broken
# case does not hide the others. Uses the caller's $tmp and $next_port.
# shellcheck disable=SC2154 # $tmp is the caller's
sr_pp() {
	local prog=$1 st=$2 ct=$3 tag=$4 size=$5 iters=$6 nqp=$7 sns=$8 sdev=$9
	local sgid=${10} cns=${11} cdev=${12} cgid=${13} addr=${14} saddr=${15}
	local caddr=${16}
	shift 16
	if ! sr_pp_wanted "$tag"; then
		subtest_skip "$tag" "not in SROCE_PP_CASES (${SROCE_PP_CASES_WHY:-a subset})"
		return 0
	fi
	SR_PP_RAN+=" $tag"
	local port=$((next_port++)) spid src=0 crc=0 t0 why=''
	local -a common=("$prog" -p "$port" -s "$size" -n "$iters")
	[[ -z $nqp ]] || common+=(-q "$nqp")
	common+=("$@")
	log "--- $tag: size $size, $iters iters${nqp:+, $nqp QPs}${*:+, $*}"
	log "+ [${sns}] ${common[*]} -d $sdev -g $sgid"
	log "+ [${cns}] ${common[*]} -d $cdev -g $cgid $addr"
	t0=$SECONDS
	sr_untrapped ns_exec "$sns" timeout "$st" "${common[@]}" -d "$sdev" -g "$sgid" >"$tmp/$tag.srv" 2>&1 &
	spid=$!
	if ! wait_for "sr_listening $sns $port" 20; then
		kill "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
		why="server did not listen on TCP $port"
	else
		ns_exec "$cns" timeout "$ct" "${common[@]}" -d "$cdev" -g "$cgid" "$addr" >"$tmp/$tag.cli" 2>&1 || crc=$?
		# A client that failed leaves the server waiting for completions.
		[[ $crc == 0 ]] || wait_for "! kill -0 $spid" 5 || kill "$spid" 2>/dev/null || true
		wait "$spid" || src=$?
		[[ $crc == 0 ]] || why="client exited with $crc"
		[[ $src == 0 ]] || why="${why:+$why, }server exited with $src"
	fi
	[[ -n "$why" ]] || why=$(sr_pp_verify "$tmp/$tag" "$size" "$iters" "$nqp" "$saddr" "$caddr")
	if [[ -n "$why" ]]; then
		sr_case_failed "$tag" "$why" "$tmp/$tag"
		log "  $sdev: $(sr_counters_nz "$sdev")"
		[[ $cdev == "$sdev" ]] || log "  $cdev: $(sr_counters_nz "$cdev")"
		return 0
	fi
	log "ok: $tag ($((SECONDS - t0))s): $(grep -h 'bytes in' "$tmp/$tag.cli")," \
		"$(grep -h 'iters in' "$tmp/$tag.cli" | sed 's/.*= //')"
	subtest_ok "$tag"
}

# sr_case_failed TAG WHY BASE: a server/client case failed: count it in the
# caller's $failures, report TAG as failed with WHY, then show both sides'
# output (BASE.srv, BASE.cli) and the kernel log since the test began.
sr_case_failed() {
	failures=$((failures + 1))
	subtest_fail "$1" "$2"
	sed 's/^/  server| /' "$3.srv" 2>/dev/null || true
	sed 's/^/  client| /' "$3.cli" 2>/dev/null || true
	log "  kernel log since the start of the test:"
	sr_dmesg_since | tail -n 40 | sed 's/^/  dmesg| /'
}

# sr_pp_verify BASE SIZE ITERS NQP SADDR CADDR: empty output if both sides'
# reports (BASE.srv, BASE.cli, and BASE.srv.err, BASE.cli.err where stderr
# went apart) are right, else what is wrong: no -c data error, 2 x SIZE x
# ITERS bytes, ITERS iterations at a non-zero usec/iter,
# and the peer's GID as the remote address (once per QP if NQP is set).
sr_pp_verify() {
	local base=$1 size=$2 iters=$3 nqp=$4 saddr=$5 caddr=$6 side f peer line b n usec
	local want_bytes=$((2 * size * iters)) want_gid nrem
	for side in srv cli; do
		f=$base.$side
		if [[ $side == srv ]]; then peer=$caddr; else peer=$saddr; fi
		# (A side whose stderr went apart has it in $f.err.)
		if grep -qsi 'invalid data' "$f" "$f.err"; then
			echo "$side: received data failed the -c check: $(grep -hsi 'invalid data' "$f" "$f.err" | head -n 3 | xargs)"
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
		want_gid=$(sr_gid_text "$peer")
		if [[ -z $nqp ]]; then
			grep -qE "remote address: .* GID $want_gid\$" "$f" ||
				{ echo "$side: remote GID is not $want_gid"; return; }
		else
			nrem=$(grep -cE "remote address: .* GID $want_gid\$" "$f" || true)
			[[ $nrem == "$nqp" ]] ||
				{ echo "$side: $nrem remote addresses with GID $want_gid, want one per QP ($nqp)"; return; }
		fi
	done
	return 0
}
