#!/bin/bash
# timeout: 180
#
# "rdma link add X type sroce ..." loads sroce.ko by itself through its
# rdma-link-sroce module alias, once modprobe can find the module (guest only:
# the guest's root is a throwaway overlay). Default: modprobe.d alias+install
# lines; SROCE_AUTOLOAD_DEPMOD=1: copy to updates/ + depmod -a (slow in TCG).
export SR_TAG=al # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

ns=$SR_ID dev=${SR_ID}d name=${SR_ID}ib mac=02:5a:00:00:90:01
installed=/lib/modules/$(uname -r)/updates/sroce.ko

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM"
require_cmd ip rdma ss jq modinfo depmod

sr_module_own
modprobe -a ib_uverbs udp_tunnel ip6_udp_tunnel
subtest_begin "module alias rdma-link-sroce, found by modprobe"
alias=$(modinfo -F alias "$(sroce_module_path)")
sr_expect_eq "alias declared by $(sroce_module_path)" "$alias" rdma-link-sroce
if [[ "${SROCE_AUTOLOAD_DEPMOD:-0}" == 1 ]]; then
	# The real install: copy into updates/ and depmod -a. Slow under TCG
	# (80 s to several minutes), hence opt-in. Undone without a second
	# depmod by putting back the modules.* index files.
	if [[ ! -e "$installed" ]]; then
		backup=$(mktemp -d)
		defer rm -rf "$backup"
		cp -a /lib/modules/"$(uname -r)"/modules.* "$backup/"
		defer_quiet cp -a "$backup/." /lib/modules/"$(uname -r)/"
		defer_quiet rm -f "$installed"
	fi
	t0=$SECONDS
	sroce_install_module
	log "install + depmod -a took $((SECONDS - t0))s"
	modinfo -F alias sroce | grep -qx 'rdma-link-sroce' ||
		fail "installed sroce has no rdma-link-sroce alias: $(modinfo -F alias sroce)"
	sr_expect_eq "modprobe's sroce" "$(modinfo -F filename sroce)" "$installed"
	cmp -s "$installed" "$(sroce_module_path)" || fail "$installed differs from $(sroce_module_path)"
else
	# Default: the same lookup without depmod. modprobe learns the alias
	# the module itself declares (read from the .ko above) and how to load
	# it from a modprobe.d file; the kernel's request_module() for
	# "rdma-link-sroce" then goes through modprobe exactly as after an
	# install. SROCE_AUTOLOAD_DEPMOD=1 does the real install instead.
	conf=/etc/modprobe.d/sroce-selftest-$$.conf
	defer rm -f "$conf"
	printf 'alias %s sroce\ninstall sroce /sbin/insmod %s\n' "$alias" "$(sroce_module_path)" >"$conf"
	log "modprobe.d: $(tr '\n' ';' <"$conf")"
fi
sr_expect_eq "modprobe resolves the alias to" "$(modprobe -R rdma-link-sroce | tail -n1)" sroce

ns_create "$ns"
sr_dummy "$ns" "$dev" "$mac"
subtest_begin "rdma link add loads sroce.ko"
[[ ! -e /sys/module/sroce ]] || fail "sroce is loaded before the test"
sr_link_add "$ns" "$name" "$dev"
[[ -e /sys/module/sroce ]] || fail "rdma link add worked but sroce.ko is not loaded?"
sr_expect_eq "sroce initstate" "$(cat /sys/module/sroce/initstate)" live
sr_expect_eq node_guid "$(cat "$SR_SYS/$name/node_guid")" "$(sr_guid_of_mac "$mac")"
sr_expect_port "$name" ACTIVE
sr_expect_sockets "$ns" yes
check ns_exec "$ns" rdma link delete "$name"
sr_expect_sockets "$ns" no
check rmmod sroce

subtest_begin "again after rmmod: autoload is repeatable"
sr_link_add "$ns" "$name" "$dev"
[[ -e /sys/module/sroce ]] || fail "sroce.ko not loaded by the second rdma link add"
check ns_exec "$ns" rdma link delete "$name"
check rmmod sroce
subtest_end
log "PASS"
