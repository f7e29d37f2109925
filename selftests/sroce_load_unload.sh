#!/bin/bash
# timeout: 480
#
# 20 x (SROCE_LOAD_CYCLES) (insmod sroce.ko, create a device on a dummy,
# check it, rmmod). After every rmmod: module gone, device gone, no UDP 4791
# socket in the namespace. At the end the Slab total (/proc/meminfo) may have
# grown from the first cycle to the last by at most SLAB_BOUND_KB. This is a
# coarse check only: the stock Debian kernel has no kmemleak; the debug-kernel
# lane does the precise leak check (and sets SROCE_SLAB_CHECK=0: KASAN's
# quarantine keeps freed objects in the slab for a while). The bound allows
# for slab noise of the rest of the system (the 9p root, namespaces, sysfs)
# while catching a per-cycle leak of a few 10 kB (an ib_device with its
# port/GID tables is several kB).
export SR_TAG=lu # name prefix, see lib_sroce.sh
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

readonly CYCLES=${SROCE_LOAD_CYCLES:-20} SLAB_BOUND_KB=1024
ns=$SR_ID dev=${SR_ID}d name=${SR_ID}ib mac=02:5a:00:00:10:01

[[ $EUID == 0 ]] || skip "needs root"
[[ -n "${SROCE_IN_GUEST:-}" ]] || skip "runs only in the test VM"
require_cmd ip rdma ss jq

# This test owns the module: it must start unloaded. Restore the state found.
sr_module_own

ns_create "$ns"
sr_dummy "$ns" "$dev" "$mac"
guid=$(sr_guid_of_mac "$mac")

slab_kb() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1 # let RCU-deferred frees run
	awk '$1 == "Slab:" {print $2}' /proc/meminfo
}

sr_dmesg_mark
subtest_begin "$CYCLES x insmod, create, check, rmmod"
for ((i = 1; i <= CYCLES; i++)); do
	log "--- cycle $i"
	sroce_load
	[[ "$(cat /sys/module/sroce/initstate)" == live ]] || fail "cycle $i: module not live"
	sr_expect_sockets "$ns" no
	sr_link_add "$ns" "$name" "$dev"
	sr_expect_eq "cycle $i: node_guid" "$(cat "$SR_SYS/$name/node_guid")" "$guid"
	sr_expect_eq "cycle $i: netdev" "$(sr_link_field "$name" netdev)" "$dev"
	sr_expect_eq "cycle $i: port state" "$(sr_port_attr "$name" state)" "4: ACTIVE"
	sr_expect_sockets "$ns" yes
	check rmmod sroce
	[[ ! -e /sys/module/sroce ]] || fail "cycle $i: /sys/module/sroce still exists after rmmod"
	sr_exists "$name" && fail "cycle $i: $name survived rmmod"
	sr_expect_sockets "$ns" no
	if ((i == 1)); then slab1=$(slab_kb); fi
done
slab20=$(slab_kb)

# "sroce: version 0.1.0+g1234abcd loaded (uverbs ABI N)" (kernel/sroce_main.c;
# "version unknown" when built from a copy of kernel/ alone: the debug lane)
loaded=$(sr_dmesg_since | grep -cE 'sroce: version [^ ]+ loaded \(uverbs ABI [0-9]+\)$') || true
unloaded=$(sr_dmesg_since | grep -c 'sroce: unloaded') || true
created=$(sr_dmesg_since | grep -c "sroce: $name created on $dev") || true
sr_expect_eq "'sroce: version V loaded' lines" "$loaded" "$CYCLES"
sr_expect_eq "'sroce: unloaded' lines" "$unloaded" "$CYCLES"
sr_expect_eq "'$name created' lines" "$created" "$CYCLES"

growth=$((slab20 - slab1))
log "Slab after cycle 1: ${slab1} kB, after cycle $CYCLES: ${slab20} kB, growth ${growth} kB (bound ${SLAB_BOUND_KB} kB)"
if [[ ${SROCE_SLAB_CHECK:-1} == 0 ]]; then
	subtest_skip "slab growth over the cycles" "SROCE_SLAB_CHECK=0: figures unchecked (growth ${growth} kB)"
else
	subtest_begin "slab growth over the cycles"
	((growth <= SLAB_BOUND_KB)) || fail "Slab grew by ${growth} kB over $((CYCLES - 1)) load/unload cycles (bound ${SLAB_BOUND_KB} kB)"
	subtest_end
fi
log "PASS: $CYCLES load/create/unload cycles"
