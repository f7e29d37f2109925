#!/bin/bash
# timeout: 360
#
# The GID table of port 1 follows the netdev's IP addresses: the IPv6
# link-local address, added IPv4 (as ::ffff:a.b.c.d) and IPv6 addresses appear
# as "RoCE v2" GIDs of that netdev (sysfs gids/N, gid_attrs/types/N,
# gid_attrs/ndevs/N and ibv_devinfo -v), and disappear when the address is
# deleted. Addresses of another netdev in the same namespace never show up.
export SR_TAG=gi # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns=$SR_ID dev=${SR_ID}d other=${SR_ID}o name=${SR_ID}ib mac=02:5a:00:00:40:01
v4=10.77.0.1 v6=2001:db8:77::1 other4=10.78.0.1 other6=2001:db8:78::1

sr_setup
ns_create "$ns"
sr_dummy "$ns" "$dev" "$mac"
sr_dummy "$ns" "$other"
check ip -n "$ns" addr add "$other4/24" dev "$other"
check ip -n "$ns" addr add "$other6/64" dev "$other" nodad
sr_link_add "$ns" "$name" "$dev"
provider=0
if sr_have_provider; then
	provider=1
else
	log "NOTE: no provider: ibv_devinfo GID lines NOT checked"
fi

# The link-local address from the MAC (EUI-64, like the node GUID).
ll=fe80::$(sr_guid_of_mac "$mac")

# expect_gid ADDR yes|no: sysfs (and ibv_devinfo -v) has / lacks ADDR's GID.
expect_gid() {
	local addr=$1 want=$2 idx v4m text
	if [[ $want == yes ]]; then
		wait_for "sr_gid_index $name $addr" 10 || fail "no RoCE v2 GID for $addr; table: $(sr_gids "$name")"
		idx=$(sr_gid_index "$name" "$addr")
		sr_expect_eq "GID[$idx] ($addr) ndev" "$(cat "$SR_SYS/$name/ports/1/gid_attrs/ndevs/$idx")" "$dev"
	else
		wait_for "! sr_gid_index $name $addr" 10 || fail "GID for $addr still present: $(sr_gids "$name")"
		log "ok: no GID for $addr"
	fi
	((provider)) || return 0
	text=$(sr_devinfo "$name" -v) || fail "ibv_devinfo -v -d $name failed: $(cat "$SR_DEVINFO_ERR")"
	v4m=$(sr_ip_text "$addr")
	if [[ $want == yes ]]; then
		grep -qE "GID\[ *$idx\]:[[:space:]]+$v4m, RoCE v2\$" <<<"$text" ||
			fail "ibv_devinfo -v lacks 'GID[$idx]: $v4m, RoCE v2': $(grep GID <<<"$text")"
		log "ok: ibv_devinfo: GID[$idx] $v4m, RoCE v2"
	elif grep -qE "[[:space:]]$v4m, " <<<"$text"; then
		fail "ibv_devinfo -v still shows $v4m: $(grep GID <<<"$text")"
	fi
}

subtest_begin "link-local GID from the MAC"
expect_gid "$ll" yes
subtest_begin "added IPv4 and IPv6 addresses become GIDs"
expect_gid "$v4" no
check ip -n "$ns" addr add "$v4/24" dev "$dev"
expect_gid "$v4" yes
check ip -n "$ns" addr add "$v6/64" dev "$dev" nodad
expect_gid "$v6" yes
expect_gid "$v4" yes

subtest_begin "only RoCE v2 GIDs, only of the device's netdev"
gids=$(sr_gids "$name")
log "GID table: $gids"
while read -r idx gid t1 t2 ndev; do
	[[ "$t1 $t2" == "RoCE v2" ]] || fail "GID[$idx] $gid has type '$t1 $t2'"
	[[ "$ndev" == "$dev" ]] || fail "GID[$idx] $gid belongs to '$ndev', not $dev"
done <<<"$gids"
sr_expect_eq "number of GIDs (link-local, IPv4, IPv6)" "$(wc -l <<<"$gids")" 3
expect_gid "$other4" no
expect_gid "$other6" no

subtest_begin "deleted addresses lose their GIDs"
check ip -n "$ns" addr del "$v4/24" dev "$dev"
expect_gid "$v4" no
expect_gid "$v6" yes
check ip -n "$ns" addr del "$v6/64" dev "$dev"
expect_gid "$v6" no
expect_gid "$ll" yes
sr_expect_eq "number of GIDs left" "$(sr_gids "$name" | wc -l)" 1

subtest_begin "re-added while the port is down"
check ip -n "$ns" link set "$dev" down
check ip -n "$ns" addr add "$v4/24" dev "$dev"
check ip -n "$ns" link set "$dev" up
expect_gid "$v4" yes
subtest_end
log "PASS"
