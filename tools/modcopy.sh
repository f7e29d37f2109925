# shellcheck shell=bash
# Out-of-tree builds of sroce.ko and the kernel-verbs test module for a
# kernel other than the main lane's (tools/kver-lane.sh: another Debian
# series; tools/debug-kernel/test.sh: the KASAN/lockdep kernel), from a copy
# of the sources, never in kernel/ itself: the main lane's objects stay, and
# a guest that loads kernel/sroce.ko over 9p is not disturbed. rsync keeps
# timestamps, so a rebuild is incremental. Sourced; the caller defines die.

# modcopy_sync OBJ: kernel/, include/ and selftests/kverbs/ into OBJ/src
# (kernel, include, kverbs), without build products or the host tests.
modcopy_sync() {
	local obj=$1 src dst
	mkdir -p "$obj/src"
	for src in kernel include selftests/kverbs; do
		dst=$obj/src/${src##*/}
		rsync -a --delete --exclude='*.o' --exclude='*.ko' --exclude='*.mod' \
			--exclude='*.mod.c' --exclude='.*.cmd' --exclude='*.a' --exclude='modules.order' \
			--exclude='Module.symvers' --exclude='.tmp_versions' --exclude='/proto/test' \
			"$ROOT/$src/" "$dst/" || die "copying $src to $dst failed"
	done
}

# modcopy_build KBUILD DIR WHAT: make W=1 in DIR (a copy from modcopy_sync)
# against the kernel build tree KBUILD; the log goes to DIR/../../build-NAME.log.
# A failed build dies with its log; warnings are printed on stderr, and
# the status is 1 if there were any.
modcopy_build() {
	local kbuild=$1 dir=$2 what=$3 log
	log=${dir%/src/*}/build-${dir##*/}.log
	make -s -C "$kbuild" M="$dir" W=1 modules >"$log" 2>&1 || {
		cat "$log" >&2
		die "building ${dir#"$ROOT"/} for $what failed"
	}
	! grep -E 'warning:' "$log" >&2
}
