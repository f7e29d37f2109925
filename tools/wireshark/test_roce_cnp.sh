#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Host test for tools/wireshark/roce_cnp.lua (RoCEv2 CNP dissector).
#
# Builds pcaps with /usr/bin/python3 + scapy in a temporary directory:
#  - CNPs, good and broken, one per case (frame N = case N below);
#  - ordinary RoCE packets (SEND, ACK, NAK, WRITE, a truncated WRITE, UD
#    SEND, opcode 0x80, IPv6),
# then checks with tshark that every CNP is dissected as roce_cnp with the
# expected BECN / ICRC verdict and exactly the expected expert info, that
# good CNPs have no expert info at all, and that the other packets dissect
# as they do without the plugin.
#
# Usage: tools/wireshark/test_roce_cnp.sh [-v]   (-v: print tshark's views)
# KEEP=1 keeps the temporary directory. Prints "N passed, N failed" and exits
# 1 if anything failed; exits 4 (kselftest skip) without tshark or scapy.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LUA=$HERE/roce_cnp.lua
PYTHON=${PYTHON:-/usr/bin/python3}
VERBOSE=0
[[ ${1:-} == -v ]] && VERBOSE=1

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
nok() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # description, then a command
	local what=$1
	shift
	if "$@"; then ok "$what"; else nok "$what"; fi
}

if ! command -v tshark >/dev/null 2>&1 ||
	! "$PYTHON" -c 'import scapy.contrib.roce' 2>/dev/null; then
	echo "tshark or $PYTHON with scapy missing; skipping"
	echo "0 passed, 0 failed, 1 skipped"
	exit 4
fi

TMP=$(mktemp -d /tmp/test_roce_cnp.XXXXXX)
if [[ -n ${KEEP:-} ]]; then
	echo "temporary files in $TMP"
else
	trap 'rm -rf "$TMP"' EXIT
fi
# An empty personal configuration, so user preferences change nothing.
export WIRESHARK_CONFIG_DIR=$TMP/wsconf
mkdir -p "$WIRESHARK_CONFIG_DIR"

ts() { tshark -n "$@" 2>>"$TMP/tshark.err"; }
tsl() { ts -X "lua_script:$LUA" "$@"; }

# --------------------------------------------------------------------------
# Packets.

"$PYTHON" - "$TMP" <<'EOF' || { echo "pcap generation failed"; echo "0 passed, 1 failed"; exit 1; }
import logging
import struct
import sys
import zlib

logging.getLogger("scapy").setLevel(logging.ERROR)
from scapy.compat import raw
from scapy.contrib.roce import AETH, BTH, CNPPadding, cnp
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

out = sys.argv[1]


def icrc(ip):
    """ICRC of IP packet bytes without the ICRC: the rxe / Annex A17 masks,
    written independently of the Lua plugin (and of scapy, which cannot do
    IPv6)."""
    b = bytearray(ip)
    if b[0] >> 4 == 4:
        h = 20
        b[1] = 0xff                 # TOS
        b[8] = 0xff                 # TTL
        b[10:12] = b'\xff\xff'      # header checksum
    else:
        h = 40
        b[0] |= 0x0f                # traffic class
        b[1:4] = b'\xff\xff\xff'    # traffic class, flow label
        b[7] = 0xff                 # hop limit
    b[h + 6:h + 8] = b'\xff\xff'    # UDP checksum
    b[h + 8 + 4] = 0xff             # FECN, BECN, resv6
    return zlib.crc32(b'\xff' * 8 + bytes(b)) & 0xffffffff


def v4(bth, tos=0xc2, sport=0xc000):
    return (Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02') /
            IP(src='192.168.1.1', dst='192.168.1.2', tos=tos, flags='DF') /
            UDP(sport=sport, dport=4791, chksum=0) / bth)


def v6(bth, tc=0x62, fl=0x12345, sport=0xc000):
    return (Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02') /
            IPv6(src='fd00::1', dst='fd00::2', tc=tc, fl=fl) /
            UDP(sport=sport, dport=4791) / bth)


def fix(p):
    """Write the zlib ICRC (LSB first) into a built packet; for IPv4 it
    must equal scapy's. Then recompute the IPv6 UDP checksum."""
    b = bytearray(raw(p))
    c = icrc(bytes(b[14:-4]))
    if IP in p:
        assert struct.unpack('<I', b[-4:])[0] == c, 'zlib ICRC != scapy ICRC'
    b[-4:] = struct.pack('<I', c)
    q = Ether(bytes(b))
    if IPv6 in q:
        del q[UDP].chksum
    return Ether(raw(q))


def mutate(p, fn):
    """Change header fields without touching the ICRC; IP header and UDP
    checksums follow (the UDP one only if it was set)."""
    q = Ether(raw(p))
    fn(q)
    if IP in q:
        del q[IP].chksum
    if q[UDP].chksum:
        del q[UDP].chksum
    return Ether(raw(q))


def flip_last(p):
    b = bytearray(raw(p))
    b[-1] ^= 0x01
    return Ether(bytes(b))


good4 = fix(v4(cnp(0xd2)))
good6 = fix(v6(cnp(0x1a2b3c)))

# Reference vector (../shared/reference/roce-wire-and-dcqcn.md 1.5 and
# kernel/proto/test/icrc_vectors.inc v4_cnp), ICRC 1d ed d2 17.
ref = Ether(raw(Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02',
                      type=0x0800)) + bytes.fromhex(
    '4502003c123440004011a527c0a80101c0a80102c12312b700280000'
    '8100ffff400000d2' '00000000' + '00' * 16 + '1dedd217'))


def ce4(q):
    q[IP].tos = 0x03                # CE, other DSCP
    q[IP].ttl = 17


def ce6(q):
    q[IPv6].tc = 0x03
    q[IPv6].fl = 0xabcde
    q[IPv6].hlim = 7


def fecn(q):
    q[BTH].fecn = 1


def resv6(q):
    q[BTH].resv6 = 0x3f


def sport(q):
    q[UDP].sport = 0xc001


def ipid(q):
    q[IP].id = 0x4321


def udpsum(q):
    q[UDP].chksum = None            # now a real checksum, not 0


cases = [
    ('good_v4', good4),
    ('good_v6', good6),
    ('ref_vector', ref),
    ('ce_marked_v4', mutate(mutate(good4, ce4), udpsum)),
    ('ce_marked_v6', mutate(good6, ce6)),
    ('fecn_set', mutate(good4, fecn)),
    ('resv6_set', mutate(good4, resv6)),
    ('psn_nonzero', fix(v4(BTH(opcode=0x81, becn=1, dqpn=0xd2, psn=7) /
                           CNPPadding()))),
    ('bad_icrc_v4', flip_last(good4)),
    ('bad_icrc_v6', flip_last(good6)),
    ('sport_changed', mutate(good4, sport)),
    ('ipid_changed', mutate(good4, ipid)),
    ('becn_clear', fix(v4(BTH(opcode=0x81, dqpn=0xd2) / CNPPadding()))),
    ('reserved_nonzero', fix(v4(BTH(opcode=0x81, becn=1, dqpn=0xd2) /
                                CNPPadding(reserved2=0x100)))),
    ('truncated', fix(v4(BTH(opcode=0x81, becn=1, dqpn=0xd2) /
                         Raw(b'\0' * 8)))),
    ('extra_bytes', fix(v4(cnp(0xd2) / Raw(b'\0' * 4)))),
    ('pkey', fix(v4(BTH(opcode=0x81, becn=1, pkey=0x8001, dqpn=0xd2) /
                    CNPPadding()))),
    ('tiny', v4(Raw(bytes.fromhex('8100ffff400000d2')))),
]
wrpcap(out + '/cnp.pcap', [p for _, p in cases])
with open(out + '/cases', 'w') as f:
    for i, (name, _) in enumerate(cases, 1):
        f.write('%d %s\n' % (i, name))

data = bytes(range(16))
noncnp = [
    fix(v4(BTH(opcode=0x04, dqpn=0x11, ackreq=1, psn=1) / Raw(data))),
    fix(v4(BTH(opcode=0x11, dqpn=0x11, psn=1) / AETH(syndrome=0x1f, msn=1))),
    fix(v4(BTH(opcode=0x11, dqpn=0x11, psn=9) / AETH(syndrome=0x60, msn=2))),
    fix(v4(BTH(opcode=0x0a, dqpn=0x11, psn=2) /
           Raw(struct.pack('>QII', 0x7f0000001000, 0x1234, 16) + data))),
    # WRITE_ONLY cut inside its RETH: malformed with and without the plugin.
    v4(BTH(opcode=0x0a, dqpn=0x11, psn=3, icrc=0) / Raw(b'\1' * 4)),
    fix(v4(BTH(opcode=0x64, dqpn=0x22, psn=4) /
           Raw(struct.pack('>II', 0x11111111, 0x33) + data))),
    fix(v4(BTH(opcode=0x80, becn=1, dqpn=0xd2) / Raw(b'\0' * 16))),
    fix(v6(BTH(opcode=0x04, dqpn=0x11, ackreq=1, psn=1) / Raw(data))),
]
wrpcap(out + '/noncnp.pcap', noncnp)
EOF

# --------------------------------------------------------------------------
# The CNP cases: expected BECN, expected icrc_ok ("" = no ICRC), expected
# expert info (roce_cnp.<name>, sorted; "-" = none).

declare -A BECN ICRC_OK EXPERTS
expect() { BECN[$1]=$2 ICRC_OK[$1]=$3 EXPERTS[$1]=$4; }
expect good_v4          1 1 -
expect good_v6          1 1 -
expect ref_vector       1 1 -
expect ce_marked_v4     1 1 -
expect ce_marked_v6     1 1 -
expect fecn_set         1 1 unexpected_bits
expect resv6_set        1 1 unexpected_bits
expect psn_nonzero      1 1 psn_nonzero
expect bad_icrc_v4      1 0 icrc_bad
expect bad_icrc_v6      1 0 icrc_bad
expect sport_changed    1 0 icrc_bad
expect ipid_changed     1 0 icrc_bad
expect becn_clear       0 1 becn_clear
expect reserved_nonzero 1 1 reserved_nonzero
expect truncated        1 1 len_short
expect extra_bytes      1 1 len_long
expect pkey             1 1 pkey_not_default
expect tiny             1 "" len_short

# All of the plugin's expert fields, and which are below warning.
ALL_EXPERTS=(len_short len_long icrc_bad icrc_unverified ip_options becn_clear
	reserved_nonzero pkey_not_default tver_nonzero psn_nonzero unexpected_bits)
NOTE_EXPERTS=" icrc_unverified psn_nonzero unexpected_bits "

tshark -n -X "lua_script:$LUA" -r "$TMP/cnp.pcap" -c 1 >"$TMP/load.out" 2>"$TMP/load.err"
check "plugin loads (no Lua errors) and dissects frame 1 as roce_cnp" \
	bash -c "! grep -qi 'lua\|error' '$TMP/load.err' && grep -q 'RoCEv2 CNP' '$TMP/load.out'"

fields=(-e frame.number -e frame.protocols -e roce_cnp.opcode -e roce_cnp.becn
	-e roce_cnp.icrc_ok -e roce_cnp.icrc -e roce_cnp.icrc_calc -e _ws.malformed
	-e _ws.expert.severity)
for e in "${ALL_EXPERTS[@]}"; do
	fields+=(-e "roce_cnp.$e")
done
tsl -r "$TMP/cnp.pcap" -T fields -E separator='|' -E occurrence=a \
	-E aggregator=',' "${fields[@]}" >"$TMP/cnp.fields"
((VERBOSE)) && tsl -r "$TMP/cnp.pcap" -V -Y roce_cnp

declare -A NAME
while read -r n name; do NAME[$n]=$name; done <"$TMP/cases"
ncases=${#NAME[@]}
check "one line of fields per CNP case ($ncases)" \
	test "$(wc -l <"$TMP/cnp.fields")" -eq "$ncases"

warn_frames=()
while IFS='|' read -r -a f; do
	n=${f[0]} name=${NAME[${f[0]}]:-?}
	protos=${f[1]:-} opcode=${f[2]:-} becn=${f[3]:-} icrc_ok=${f[4]:-}
	malformed=${f[7]:-} sev=${f[8]:-}
	got_e=() i=9 nwarn=0
	for e in "${ALL_EXPERTS[@]}"; do
		if [[ -n ${f[$i]:-} ]]; then
			got_e+=("$e")
			[[ $NOTE_EXPERTS == *" $e "* ]] || nwarn=$((nwarn + 1))
		fi
		i=$((i + 1))
	done
	got_s=$(printf '%s\n' "${got_e[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
	[[ -z $got_s ]] && got_s=-
	# Every expert item is one of ours (no Lua errors or others' items).
	nsev=0
	[[ -n $sev ]] && nsev=$(tr ',' '\n' <<<"$sev" | wc -l)
	((nwarn > 0)) && warn_frames+=("$n")

	check "$name: dissected as roce_cnp, opcode 0x81 ($protos)" \
		test "$opcode" = 0x81 -a "${protos##*:}" = roce_cnp
	check "$name: becn=${BECN[$name]}" test "$becn" = "${BECN[$name]}"
	check "$name: icrc_ok=${ICRC_OK[$name]:-(absent)}" \
		test "$icrc_ok" = "${ICRC_OK[$name]}"
	check "$name: expert info {${EXPERTS[$name]}} (got {$got_s})" \
		test "$got_s" = "${EXPERTS[$name]}" -a "$nsev" -eq "${#got_e[@]}"
	# The length errors are in the Malformed group, hence _ws.malformed.
	if [[ ${EXPERTS[$name]} == len_* ]]; then
		check "$name: _ws.malformed (wrong length)" test -n "$malformed"
	else
		check "$name: not malformed" test -z "$malformed"
	fi
	if [[ $name == ref_vector ]]; then
		check "$name: ICRC 1d ed d2 17 read as 0x17d2ed1d, computed the same" \
			test "${f[5]:-}" = 0x17d2ed1d -a "${f[6]:-}" = 0x17d2ed1d
	fi
done <"$TMP/cnp.fields"

# The filter a selftest would use finds exactly the broken CNPs.
want=$(printf '%s\n' "${warn_frames[@]}" | sort -n | tr '\n' ' ')
got=$(tsl -r "$TMP/cnp.pcap" -Y '_ws.expert.severity >= warning' \
	-T fields -e frame.number | tr '\n' ' ')
check "-Y '_ws.expert.severity >= warning' matches frames {$want}" \
	test "$got" = "$want"
want=
for n in $(printf '%s\n' "${!NAME[@]}" | sort -n); do
	name=${NAME[$n]}
	[[ ${ICRC_OK[$name]} == 0 || ${BECN[$name]} == 0 ]] && want+="$n "
done
got=$(tsl -r "$TMP/cnp.pcap" -Y 'roce_cnp.icrc_ok == 0 || roce_cnp.becn == 0' \
	-T fields -e frame.number | tr '\n' ' ')
check "-Y 'roce_cnp.icrc_ok == 0 || roce_cnp.becn == 0' matches frames {$want}" \
	test "$got" = "$want"

# --------------------------------------------------------------------------
# Other RoCE packets: untouched.

ts -r "$TMP/noncnp.pcap" -V >"$TMP/noncnp.plain"
tsl -r "$TMP/noncnp.pcap" -V >"$TMP/noncnp.lua"
((VERBOSE)) && cat "$TMP/noncnp.lua"
nnon=$(ts -r "$TMP/noncnp.pcap" -T fields -e frame.number | wc -l)
nib=$(ts -r "$TMP/noncnp.pcap" -Y infiniband -T fields -e frame.number | wc -l)
check "non-CNP pcap: all $nnon frames are InfiniBand without the plugin" \
	test "$nib" -eq "$nnon" -a "$nnon" -eq 8
check "non-CNP pcap: the truncated WRITE is malformed without the plugin" \
	test "$(ts -r "$TMP/noncnp.pcap" -Y _ws.malformed | wc -l)" -eq 1
check "non-CNP pcap: -Y roce_cnp matches nothing" \
	test "$(tsl -r "$TMP/noncnp.pcap" -Y roce_cnp | wc -l)" -eq 0
# The only difference allowed: frame.protocols lists the plugin's protocol,
# which every UDP 4791 packet now passes through.
sed -i 's/^\(    \[Protocols in frame: .*:udp\):roce_cnp:/\1:/' "$TMP/noncnp.lua"
if diff -u "$TMP/noncnp.plain" "$TMP/noncnp.lua" >"$TMP/noncnp.diff"; then
	ok "non-CNP pcap: tshark -V identical with and without the plugin" \
		"($(wc -l <"$TMP/noncnp.plain") lines, frame.protocols aside)"
else
	nok "non-CNP pcap: tshark -V differs with the plugin:"
	head -n 40 "$TMP/noncnp.diff"
fi

if grep -qi 'lua' "$TMP/tshark.err"; then
	nok "tshark reported Lua errors:"
	grep -i lua "$TMP/tshark.err" | head -n 10
fi

echo "$pass passed, $fail failed"
((fail == 0))
