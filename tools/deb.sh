#!/bin/bash
# make deb: the Debian packages sroce-dkms and ibverbs-provider-sroce, built
# by dpkg-buildpackage (debian/) on a clean export of this checkout into
# build/deb/: the files git tracks or would track, as they are now (the
# version then says "+dirty"), and no build products. Then lintian, which
# must find nothing (no overrides are needed today).
#
# The version is VERSION, plus "+<commits>.g<commit>" from git. The
# provider package depends on exactly the libibverbs1 it was built against.
#
# Options (for tools/deb/test.sh): --out DIR (default build/deb),
# --version-suffix S (appended to the version: a later package of the same
# tree, to test upgrades), --nocheck (skip the provider's host tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/deb
suffix=''
while [[ $# -gt 0 ]]; do
	case $1 in
	--out) out=$(realpath -m "$2") && shift ;;
	--version-suffix) suffix=$2 && shift ;;
	--nocheck) export DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" ;;
	*) echo "usage: $0 [--out DIR] [--version-suffix S] [--nocheck]" >&2 && exit 2 ;;
	esac
	shift
done
cd "$root"

ver=$(cat VERSION)
if git rev-parse --git-dir >/dev/null 2>&1; then
	commit=$(git rev-parse --short=8 HEAD)
	# The commit count keeps builds in order (a hash alone would not); the
	# hash says which. Short: lintian flags file names over 80 characters.
	ver+="+$(git rev-list --count HEAD).g$commit"
	if [[ -n $(git status --porcelain) ]]; then
		ver+="+dirty"
	fi
fi
ver+=$suffix

rm -rf "$out"
src=$out/sroce-$ver
mkdir -p "$src"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$src" -xf -
echo "$ver" >"$src/VERSION"
{
	echo "sroce ($ver) unstable; urgency=medium"
	echo
	echo "  * Built by make deb from $(git describe --always --dirty 2>/dev/null || echo 'a source tree')."
	echo
	echo " -- The sroce developers <sroce-devel@lists.example.org>  $(date -R)"
	echo
	cat debian/changelog
} >"$src/debian/changelog"

echo "deb: dpkg-buildpackage in $src (version $ver)"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
	exit 1
}
changes=$(echo "$out"/sroce_"$ver"_*.changes)
echo "deb: built"
for d in "$out"/*.deb; do echo "  $d"; done

# lintian: nothing at warning or error level, and every info/pedantic tag
# either fixed or overridden with a reason.
rc=0
lintian --fail-on error,warning,info --display-info "$changes" >"$out/lintian.log" 2>&1 || rc=$?
if [[ $rc == 0 ]]; then
	echo "deb: lintian clean ($out/lintian.log)"
else
	cat "$out/lintian.log" >&2
	echo "deb: lintian exited with $rc: the tags above, or its own failure" >&2
	exit 1
fi
