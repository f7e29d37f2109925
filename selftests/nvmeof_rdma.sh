#!/bin/bash
# timeout: 900
#
# NVMe over Fabrics on sroce, with the kernel's own ULPs as the consumers:
# nvmet + nvmet-rdma export a file-backed namespace (buffered I/O on tmpfs),
# nvme-rdma connects to it ("nvme connect -t rdma"), and fio writes and then
# verifies (crc32c) random blocks of 4 KiB..128 KiB at queue depth 16.
#
# This drives sroce purely through kernel verbs: RDMA CM and IB CM over the
# GSI QP, fast-registration MRs (IB_WR_REG_MR) on the host, RDMA READ/WRITE
# by the target into them with the host's rkeys, SEND_WITH_INV remote
# invalidation and LOCAL_INV, and completion callbacks from kernel CQs.
#
# On 6.1 nvmet-rdma and nvme-rdma create their CM ids in the initial network
# namespace, so the sroce device lives there (on a dummy; target and host
# share it, like blktests does with rxe). rdma_rxe holds UDP 4791 in the
# initial namespace while it is loaded, so the test unloads it first (and
# skips if an rxe device is in use).
SR_TAG=nv
# shellcheck source=selftests/lib_sroce.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib_sroce.sh"

sr_setup
require_cmd nvme fio timeout
require_module nvmet nvmet-rdma nvme-rdma rdma_cm

if [[ -d /sys/module/rdma_rxe ]]; then
	modprobe -r rdma_rxe 2>/dev/null || skip "rdma_rxe is loaded and in use (it holds UDP 4791 in the initial namespace)"
fi

nd=${SR_ID}d dev=${SR_ID}0
addr=10.79.0.1
nqn=nqn.2026-11.io.sroce:selftest-$$
port_id=$((RANDOM % 1000 + 1))
cfs=/sys/kernel/config/nvmet

[[ -d /sys/kernel/config ]] || skip "no configfs"
mountpoint -q /sys/kernel/config || check mount -t configfs none /sys/kernel/config
[[ -d $cfs ]] || fail "nvmet configfs ($cfs) missing after modprobe nvmet"

sr_dummy - "$nd"
check ip addr add "$addr/24" dev "$nd"
sr_link_add - "$dev" "$nd"
wait_for "sr_gid_index $dev $addr" 10 || fail "$dev has no RoCE v2 GID for $addr"

tmp=$(mktemp -d)
defer rm -rf "$tmp"
img=$tmp/ns1.img
check truncate -s 256M "$img"

# --- target ------------------------------------------------------------------------
# Cleanup runs in reverse: port link, port, namespace, subsystem.
sub=$cfs/subsystems/$nqn
check mkdir "$sub"
defer_quiet rmdir "$sub"
echo 1 >"$sub/attr_allow_any_host"
check mkdir "$sub/namespaces/1"
defer_quiet rmdir "$sub/namespaces/1"
echo -n "$img" >"$sub/namespaces/1/device_path"
echo 1 >"$sub/namespaces/1/buffered_io"
echo 1 >"$sub/namespaces/1/enable" || fail "cannot enable the namespace"
defer_quiet sh -c "echo 0 > '$sub/namespaces/1/enable'"

port=$cfs/ports/$port_id
check mkdir "$port"
defer_quiet rmdir "$port"
echo rdma >"$port/addr_trtype"
echo ipv4 >"$port/addr_adrfam"
echo "$addr" >"$port/addr_traddr"
echo 4420 >"$port/addr_trsvcid"
ln -s "$sub" "$port/subsystems/$nqn" || fail "cannot enable the RDMA port (nvmet-rdma listen on $addr)"
defer_quiet rm -f "$port/subsystems/$nqn"

# --- host --------------------------------------------------------------------------
subtest_begin "nvme connect -t rdma: the 256 MiB namespace appears"
log "nvme connect -t rdma -a $addr -s 4420 -n $nqn"
check timeout 120 nvme connect -t rdma -a "$addr" -s 4420 -n "$nqn"
defer_quiet timeout 120 nvme disconnect -n "$nqn"

find_ns() { # the block device of our subsystem's namespace
	local b
	# nvmeXnY is the namespace (with native multipath, the head node);
	# nvmeXcYnZ are hidden per-path nodes.
	for b in /sys/block/nvme*n1; do
		[[ -e "$b" && ${b##*/} =~ ^nvme[0-9]+n1$ ]] || continue
		echo "/dev/${b##*/}"
		return 0
	done
	return 1
}
wait_for "find_ns" 30 || fail "no block device for $nqn after nvme connect"
blk=$(find_ns)
wait_for "[[ -b $blk ]]" 10 || fail "$blk is not a block device"
size=$(blockdev --getsize64 "$blk") || fail "blockdev --getsize64 $blk failed"
log "namespace: $blk ($size bytes)"
[[ "$size" == $((256 << 20)) ]] || fail "$blk has $size bytes, not the exported 256 MiB"

sent0=$(sr_hwc "$dev" sent_pkts)

fio_run() { # NAME ARGS...
	local name=$1
	shift
	subtest_begin "fio $name (crc32c verify)"
	if ! timeout 400 fio --name="$name" --filename="$blk" --ioengine=libaio --direct=1 \
		--iodepth=16 --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--output="$tmp/$name.out" "$@"; then
		cat "$tmp/$name.out"
		fail "fio $name failed"
	fi
	grep -E "err= *0|WRITE:|READ:" "$tmp/$name.out" | sed 's/^/  /'
	grep -q "err= *0" "$tmp/$name.out" || { cat "$tmp/$name.out"; fail "fio $name reported errors"; }
}
# Random writes of mixed sizes, then every block read back and checked.
fio_run randwrite-verify --rw=randwrite --bsrange=4k-128k --size=48M --randrepeat=0
# Sequential large blocks across a different region.
fio_run seqwrite-verify --rw=write --bs=128k --offset=128M --size=64M

subtest_begin "the traffic went over sroce; no error counted"
sent=$(sr_hwc "$dev" sent_pkts)
log "$dev: sent_pkts $sent0 -> $sent"
((sent > sent0 + 1000)) || fail "sent_pkts barely moved: NVMe traffic did not go over sroce"
for c in rcvd_malformed rcvd_icrc_err rcvd_no_qp retry_exceeded_err; do
	v=$(sr_hwc "$dev" "$c")
	[[ "$v" == 0 ]] || fail "counter $c = $v"
done
subtest_end
log "NVMe-oF over sroce: fio verify passed"
