#!/bin/bash
# PID 1 of a tools/vm/run guest, started by the initramfs after switch_root.
# Runs with the host's userland (the host root, read-only over 9p, under a
# tmpfs overlay). Sets up a minimal system, runs the requested command with the
# repo as cwd, and leaves everything the host needs in the output share:
#   env.sh      (written by the host) SROCE_VM_* settings, exported env, cmd=()
#   stdout.txt / stderr.txt   the command's output (also streamed to the console)
#   status      the command's exit status (124 if the guest-side timeout fired)
#   dmesg.txt   the full kernel log, taken after the command finished
# then powers off. Nothing here may exit: PID 1 exiting panics the kernel.
set -uo pipefail

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=${TERM:-linux} LANG=C.UTF-8

console() { echo "guest-init: $*" >/dev/console; }

poweroff_now() {
	sync
	# sysrq 'o' always works for root via the trigger file, whatever
	# kernel.sysrq says. It is asynchronous, and PID 1 must not exit
	# meanwhile (that panics), nor exec anything (the 9p root is going
	# away), so wait with a builtin on a fifo nobody writes to.
	echo o >/proc/sysrq-trigger
	while :; do
		read -rt 3600 <>/run/sroce-idle || true
	done
}

# The initramfs normally mounted all of these already (it is much faster at
# it); check without forking, and mount only what is missing.
mounted=" "
while read -r _ m _; do mounted+="$m "; done </proc/mounts
mnt() { # mnt FSTYPE DIR [OPTIONS]
	[[ "$mounted" != *" $2 "* ]] || return 0
	mkdir -p "$2"
	mount -t "$1" ${3:+-o "$3"} "$1" "$2" || console "mount $1 on $2 failed"
}
mnt proc /proc
mnt sysfs /sys
mnt devtmpfs /dev       # /dev/infiniband/uverbsN appear here by themselves
mnt devpts /dev/pts "gid=5,mode=620,ptmxmode=666"
mnt tmpfs /dev/shm "mode=1777"
mnt debugfs /sys/kernel/debug
mnt tmpfs /tmp "mode=1777"
mnt tmpfs /run "mode=0755"
[[ -p /run/sroce-idle ]] || mkfifo /run/sroce-idle
[[ -e /dev/ptmx ]] || ln -sf pts/ptmx /dev/ptmx
[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
[[ -e /dev/stdin ]] || ln -s /proc/self/fd/0 /dev/stdin
[[ -e /dev/stdout ]] || ln -s /proc/self/fd/1 /dev/stdout
[[ -e /dev/stderr ]] || ln -s /proc/self/fd/2 /dev/stderr

OUT=/run/sroce-out
if [[ "$mounted" != *" $OUT "* ]]; then
	mkdir -p "$OUT"
	if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 sroceout "$OUT"; then
		console "cannot mount the output share; nothing can be reported"
		poweroff_now
	fi
fi

cmd=()   # set by env.sh
# shellcheck source=/dev/null
source "$OUT/env.sh" || { console "cannot read $OUT/env.sh"; poweroff_now; }

# tools/vm/run --share: a host directory another guest may share too (no
# caching, so that what one guest writes the other sees at once).
if [[ "${SROCE_VM_SHARE:-}" == 1 ]]; then
	mkdir -p /run/sroce-share
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 sroceshare /run/sroce-share ||
		console "cannot mount the shared directory (--share)"
fi

# A self-built kernel (debug lane) brings its own modules directory.
if [[ -n "${SROCE_VM_MODULES_DIR:-}" ]]; then
	kmods=/lib/modules/$(uname -r)
	mkdir -p "$kmods"
	mount --bind "$SROCE_VM_MODULES_DIR" "$kmods" || console "cannot bind $SROCE_VM_MODULES_DIR"
fi

echo sroce-vm >/proc/sys/kernel/hostname
[[ "$(</sys/class/net/lo/operstate)" != down ]] || ip link set lo up
ulimit -l unlimited     # RDMA memory registration pins pages
ulimit -c 0

cd "$SROCE_ROOT" || console "cannot cd to $SROCE_ROOT"
export SROCE_ROOT SROCE_IN_GUEST=1
unset sroce_init sroce_onlcr   # from the kernel command line / initramfs

if [[ "${SROCE_VM_INTERACTIVE:-0}" == 1 ]]; then
	# A controlling tty needs a real tty device, not /dev/console.
	stty -F /dev/ttyS0 onlcr
	[[ -z "${SROCE_VM_ROWS:-}" ]] || stty -F /dev/ttyS0 rows "$SROCE_VM_ROWS" cols "${SROCE_VM_COLS:-80}"
	setsid -c -w "${cmd[@]}" </dev/ttyS0 >/dev/ttyS0 2>&1
	rc=$?
else
	# Stream to the console (the host shows it live) and save a copy. The
	# serial line would turn each \n into \r\n; keep the output byte-exact.
	[[ "${sroce_onlcr:-}" == off ]] || stty -F /dev/console -onlcr 2>/dev/null
	[[ -p /run/sroce-stdout ]] || mkfifo /run/sroce-stdout /run/sroce-stderr
	tee "$OUT/stdout.txt" </run/sroce-stdout >/dev/console &
	tee_out=$!
	tee "$OUT/stderr.txt" </run/sroce-stderr >/dev/console &
	tee_err=$!
	echo "guest-init: boot took ${SECONDS}s of guest userspace, $(cut -d' ' -f1 /proc/uptime)s since kernel start" >"$OUT/boot-time"
	# timeout(1) puts the command in its own process group and signals all
	# of it, so helpers the command started are stopped too.
	timeout -k 10 "$SROCE_VM_TIMEOUT" "${cmd[@]}" </dev/null >/run/sroce-stdout 2>/run/sroce-stderr
	rc=$?
	# A daemon the command left behind may hold the fifos open; don't wait
	# for it forever.
	for ((i = 0; i < 50; i++)); do
		kill -0 "$tee_out" 2>/dev/null || kill -0 "$tee_err" 2>/dev/null || break
		sleep 0.1
	done
	kill "$tee_out" "$tee_err" 2>/dev/null
fi

echo "$rc" >"$OUT/status"
dmesg >"$OUT/dmesg.txt" 2>&1
poweroff_now
