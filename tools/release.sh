#!/bin/bash
# shellcheck disable=SC2034  # the variables are for the scripts that source this
# The host's Debian release and what sroce takes from it, in one place
# (sourced by tools/deps.sh, tools/kver.sh, tools/debug-kernel/build.sh and
# the Makefile). Sets:
#   SROCE_RELEASE       debian:12, debian:13, ... (from /etc/os-release)
#   SROCE_RELEASE_NAME  its PRETTY_NAME
#   SROCE_SUPPORTED     1 for a release make deps has a package list for
#   SROCE_KSERIES       the release's own kernel series (6.1, 6.12; testing
#                       and unstable: linux-source's current one, e.g. 7.2)
#   SROCE_LINUX_SOURCE  the source package of that kernel (checkpatch, the
#                       debug kernel)
#   SROCE_CLANG_PKGS    clang and libFuzzer's runtime of that release
#   SROCE_LANE_KSERIES  a second kernel series the release ships, for the
#                       other-kernel lane (tools/kver-lane.sh; empty: none)
#   SROCE_LANE_KPKGS    its image and headers (make deps-test installs them)
# SROCE_DEPS_RELEASE=12|13 takes that release's choices on another system
# (at your own risk: package names differ between releases).
SROCE_RELEASE=unknown SROCE_RELEASE_NAME=unknown
SROCE_LANE_KSERIES='' SROCE_LANE_KPKGS=''
if [[ -r /etc/os-release ]]; then
	# shellcheck source=/dev/null
	SROCE_RELEASE=$(. /etc/os-release && echo "${ID:-}:${VERSION_ID:-${VERSION_CODENAME:-}}")
	# shellcheck source=/dev/null
	SROCE_RELEASE_NAME=$(. /etc/os-release && echo "${PRETTY_NAME:-$SROCE_RELEASE}")
fi
[[ -z ${SROCE_DEPS_RELEASE:-} ]] || SROCE_RELEASE=debian:$SROCE_DEPS_RELEASE
SROCE_SUPPORTED=1
case $SROCE_RELEASE in
debian:12)
	SROCE_KSERIES=6.1
	# Debian 12 carries 6.12 too (bookworm-security, for the move to 13).
	SROCE_LANE_KSERIES=6.12
	SROCE_LANE_KPKGS="linux-image-6.12-amd64 linux-headers-6.12-amd64"
	SROCE_CLANG_PKGS="clang-14 libclang-rt-14-dev"
	;;
debian:13)
	SROCE_KSERIES=6.12
	SROCE_CLANG_PKGS="clang-19 libclang-rt-19-dev"
	;;
debian:forky | debian:sid)
	# Testing and unstable (no VERSION_ID): their kernel series is the one
	# the linux-source metapackage points at today.
	SROCE_KSERIES=$(apt-cache depends linux-source 2>/dev/null |
		sed -n 's/^ *Depends: linux-source-\([0-9][0-9.]*\)$/\1/p' | head -n1)
	[[ -n $SROCE_KSERIES ]] || SROCE_SUPPORTED=0
	SROCE_CLANG_PKGS="clang libclang-rt-dev"
	;;
*)
	SROCE_SUPPORTED=0
	SROCE_KSERIES=''
	SROCE_CLANG_PKGS="clang libclang-rt-dev"
	;;
esac
SROCE_LINUX_SOURCE=linux-source${SROCE_KSERIES:+-$SROCE_KSERIES}
# Run rather than sourced: print them (for the Makefile and for people).
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	for v in SROCE_RELEASE SROCE_RELEASE_NAME SROCE_SUPPORTED SROCE_KSERIES SROCE_LINUX_SOURCE SROCE_CLANG_PKGS \
		SROCE_LANE_KSERIES SROCE_LANE_KPKGS; do
		echo "$v=${!v}"
	done
fi
