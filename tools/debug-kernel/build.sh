#!/bin/bash
# Build (once per machine) the debug guest kernel for "make test-debug":
# Debian's linux-source-6.1 with x86_64_defconfig + kvm_guest.config +
# tools/debug-kernel/debug.config (KASAN, lockdep, UBSAN, DEBUG_LIST,
# debug objects, kmemleak, and what the VM harness and the tests need).
#
# usage: tools/debug-kernel/build.sh [--print-dir] [--jobs N]
#   (no option)   build unless cached, then print the cache directory
#   --print-dir   only print the cache directory; exit 1 if it is not built
#   --jobs N      make -jN (default: the number of CPUs)
#
# The result lives outside the work tree, in
#   ${SROCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sroce}/debug-kernel/KEY/
# where KEY hashes the fragment, the source package's version and tarball,
# the compiler and LAYOUT below (bumped when this script changes what it
# produces; other edits of the script keep the cache). It holds:
#   bzImage            the kernel
#   modules/lib/modules/RELEASE/   modules_install output (--modules-dir for tools/vm/run)
#   linux/             the configured and built tree (KDIR for out-of-tree modules)
#   release            the kernel release string (uname -r)
#   build.log          make's output; build-time: seconds the build took
#   source-id          source package, tarball hash, compiler (see seeding below)
#   complete           written last, only when everything above succeeded
# The build runs under "nice -n ${DEBUG_KERNEL_NICE:-19}": other work on the
# machine (guest runs) keeps its CPU share. Concurrent invocations serialize
# on a lock; a second one finds the first one's result. A build of another
# fragment with the same source and compiler seeds a new one (incremental:
# minutes); the DEBUG_KERNEL_KEEP (2) newest builds are kept, each ~2 GB.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FRAG=$HERE/debug.config
# shellcheck source=tools/release.sh
source "$HERE/../release.sh"
SRC_PKG=$SROCE_LINUX_SOURCE
TARBALL=/usr/src/$SRC_PKG.tar.xz

die() { echo "debug-kernel: $*" >&2; exit 1; }
say() { echo "debug-kernel: $*" >&2; }

print_only=0 jobs=$(nproc)
while [[ $# -gt 0 ]]; do
	case "$1" in
	--print-dir) print_only=1; shift ;;
	--jobs) jobs=$2; shift 2 ;;
	-h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done

[[ -r $TARBALL ]] || die "no $TARBALL: run 'make deps-test' (package $SRC_PKG)"
src_version=$(dpkg-query -W -f='${Version}' "$SRC_PKG" 2>/dev/null) ||
	die "package $SRC_PKG is not installed: run 'make deps-test'"
cc=${CC:-gcc}
# What the objects depend on besides the configuration.
source_id="$SRC_PKG $src_version $(sha256sum "$TARBALL" | cut -d' ' -f1) $("$cc" --version | head -n1)"
LAYOUT=1
key=$({
	echo "$source_id layout $LAYOUT"
	sha256sum "$FRAG" | cut -d' ' -f1
} | sha256sum | cut -c1-16)
cache=${SROCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sroce}/debug-kernel
dir=$cache/$key

if [[ $print_only == 1 ]]; then
	echo "$dir"
	[[ -f $dir/complete ]]
	exit
fi

for tool in flex bison bc make "$cc" depmod; do
	command -v "$tool" >/dev/null || die "$tool is missing: run 'make deps-test'"
done
for hdr in /usr/include/libelf.h /usr/include/openssl/ssl.h; do
	[[ -r $hdr ]] || die "$hdr is missing (libelf-dev, libssl-dev): run 'make deps-test'"
done

mkdir -p "$cache"
exec 9>"$cache/.lock"
if ! flock -n 9; then
	say "another build holds $cache/.lock; waiting for it"
	flock 9
fi
if [[ -f $dir/complete ]]; then
	say "cached: $dir ($(cat "$dir/release"))"
	echo "$dir"
	exit 0
fi

prepare_tree() {
	# A complete build of the same source with the same compiler (an older
	# fragment) seeds this one: kbuild then recompiles only what the changed
	# options touch (minutes instead of half an hour). DEBUG_KERNEL_SEED=0: don't.
	seed=''
	if [[ ${DEBUG_KERNEL_SEED:-1} != 0 ]]; then
		for stamp in "$cache"/*/complete; do
			d=${stamp%/complete}
			[[ -f $stamp && $d != "$dir" && "$(cat "$d/source-id" 2>/dev/null)" == "$source_id" ]] || continue
			# the newest one
			[[ -n $seed && ! $stamp -nt $seed/complete ]] || seed=$d
		done
	fi
	if [[ -n $seed ]]; then
		say "seeding from $seed (same source and compiler; DEBUG_KERNEL_SEED=0 builds from scratch)"
		cp -a "$seed/linux" "$dir/linux"
		echo "$seed" >"$dir/seeded-from"
		# objtool is built with absolute paths: unless its recorded command lines
		# and dependencies name the new location, it is rebuilt, and with it
		# every object of the kernel.
		grep -rlF --include='.*.cmd' --include='.*.d' "$seed/linux/" "$dir/linux/tools" |
			while IFS= read -r f; do
				sed "s|$seed/linux/|$dir/linux/|g" "$f" >"$f.tmp"
				touch -r "$f" "$f.tmp"
				mv "$f.tmp" "$f"
			done
	else
		say "extracting $TARBALL"
		run tar -C "$dir" -xJf "$TARBALL"
		mv "$dir/$SRC_PKG" "$dir/linux"
	fi
	say "configuring: x86_64_defconfig + kvm_guest.config + ${FRAG##*/}"
	{
		make -C "$tree" x86_64_defconfig
		(cd "$tree" && scripts/kconfig/merge_config.sh -m .config kernel/configs/kvm_guest.config "$FRAG")
		make -C "$tree" olddefconfig
	} >"$log" 2>&1 || { tail -n 30 "$log" >&2; die "configuration failed; see $log"; }
	"$HERE/check-config" "$FRAG" "$tree/.config" >&2 ||
		die "the kernel configuration lacks options ${FRAG##*/} asks for (unmet dependencies?)"
	touch "$dir/configured"
}

start=$SECONDS
log=$dir/build.log
run() { nice -n "${DEBUG_KERNEL_NICE:-19}" "$@"; }
tree=$dir/linux

# A build that was stopped half way (CI stops it when its time budget runs
# out) resumes: kbuild recompiles only what is missing or out of date (make
# deletes the object it was writing when it is killed).
if [[ -f $dir/configured ]]; then
	say "resuming the unfinished build in $dir (make -j$jobs, nice ${DEBUG_KERNEL_NICE:-19})"
else
	say "building $SRC_PKG $src_version with ${FRAG#"$PWD"/} into $dir (make -j$jobs, nice ${DEBUG_KERNEL_NICE:-19}); this takes 20-40 minutes on 2 CPUs"
	rm -rf "$dir"
	mkdir -p "$dir"
	prepare_tree
fi

say "compiling (log: $log)"
if ! run make -C "$tree" -j"$jobs" bzImage modules >>"$log" 2>&1; then
	grep -E 'error|Error' "$log" | tail -n 20 >&2 || true
	die "the kernel build failed; see $log"
fi
release=$(cat "$tree/include/config/kernel.release")
say "installing modules of $release"
run make -C "$tree" INSTALL_MOD_PATH="$dir/modules" modules_install >>"$log" 2>&1 ||
	die "modules_install failed; see $log"
[[ -f $dir/modules/lib/modules/$release/modules.dep ]] || die "no modules.dep after modules_install"
cp "$tree/arch/x86/boot/bzImage" "$dir/bzImage"
echo "$release" >"$dir/release"
echo "$source_id" >"$dir/source-id"
echo "$((SECONDS - start))" >"$dir/build-time"
touch "$dir/complete"
say "done in $((SECONDS - start))s: $dir"

# Keep the DEBUG_KERNEL_KEEP (2) newest complete builds; drop the rest and
# any unfinished one (we hold the lock: nothing else is building).
keep=${DEBUG_KERNEL_KEEP:-2}
for d in "$cache"/*/; do
	d=${d%/}
	[[ $d != "$dir" ]] || continue
	if [[ ! -f $d/complete ]]; then
		say "removing the unfinished build $d"
		rm -rf "$d"
	fi
done
mapfile -t done_builds < <(find "$cache" -mindepth 2 -maxdepth 2 -name complete -printf '%T@ %h\n' | sort -rn | cut -d' ' -f2-)
for d in "${done_builds[@]:$keep}"; do
	say "removing the older build $d (DEBUG_KERNEL_KEEP=$keep)"
	rm -rf "$d"
done
echo "$dir"
