#!/bin/bash
# make test-deb: build the packages twice (this tree as version 1 in
# build/deb, and as a later version 2 in build/deb-up), fetch the headers
# package of a second installed kernel, then boot a guest that installs,
# uses, upgrades and purges them (tools/deb/test-in-guest.sh). Ends with the
# guest's "N passed, N failed, N skipped".
#   KVER2=...   the second kernel (default: the newest installed Debian
#               kernel with headers other than KVER)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
kver=$(tools/kver.sh)
kver2=${KVER2:-}
if [[ -z $kver2 ]]; then
	for d in /lib/modules/*/build; do
		v=$(basename "$(dirname "$d")")
		[[ $v != "$kver" && $v == *-amd64 && -e $d/Makefile ]] || continue
		dpkg-query -W -f='${Status}' "linux-headers-$v" 2>/dev/null | grep -q 'install ok installed' || continue
		kver2=$(printf '%s\n%s\n' "$kver2" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
fi
[[ -n $kver2 ]] || {
	echo "test-deb: needs a second Debian kernel's headers installed (e.g. bookworm-backports' linux-headers-amd64), or KVER2=" >&2
	exit 1
}
tools/deb.sh
tools/deb.sh --out build/deb-up --version-suffix +u2 --nocheck
mkdir -p build/deb-hdr
rm -f build/deb-hdr/*.deb
hver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver2")
(cd build/deb-hdr && apt-get download "linux-headers-$kver2=$hver") >/dev/null
hdrdeb=$(echo build/deb-hdr/linux-headers-"$kver2"_*.deb)
echo "test-deb: guest on $kver; second kernel $kver2 ($hdrdeb)"
tools/vm/run --kver "$kver" --timeout "${DEB_TEST_TIMEOUT:-3000}" --mem 4G -- \
	tools/deb/test-in-guest.sh build/deb build/deb-up "$kver2" "$hdrdeb" | tee build/deb/test.log
rc=${PIPESTATUS[0]}
p=$(grep -E '^ok [0-9]+ - ' build/deb/test.log | grep -vc ' # SKIP' || true)
s=$(grep -cE '^ok [0-9]+ - .* # SKIP' build/deb/test.log || true)
f=$(grep -cE '^not ok [0-9]+ - ' build/deb/test.log || true)
((rc == 0 || f > 0)) || f=$((f + 1))
echo "$p passed, $f failed, $s skipped"
exit "$rc"
