#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Generate ICRC test vectors and the parse fuzzer's seed corpus.

IPv4 packets are built and ICRC'd by scapy (scapy.contrib.roce), which is
independent of our C code. scapy cannot compute the ICRC over IPv6 ("TODO
support IPv6"), so IPv6 vectors use the small zlib-based icrc() below, which
is first checked against scapy on every IPv4 vector.

Usage: gen_vectors.py OUTDIR   (writes OUTDIR/icrc_vectors.inc and
OUTDIR/corpus/parse/*). Output is checked in; rerun only to change it.
"""
import os
import struct
import sys
import zlib

from scapy.compat import raw
from scapy.contrib.roce import BTH, cnp
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw


def icrc(ip_pkt):
    """ICRC of an IP packet (without its ICRC), rxe/Annex A17 masks."""
    b = bytearray(ip_pkt)
    if b[0] >> 4 == 4:
        ihl = 20
        b[1] = 0xff
        b[8] = 0xff
        b[10:12] = b'\xff\xff'
    else:
        ihl = 40
        b[0] |= 0x0f
        b[1:4] = b'\xff\xff\xff'
        b[7] = 0xff
    b[ihl + 6:ihl + 8] = b'\xff\xff'
    b[ihl + 8 + 4] = 0xff
    return zlib.crc32(b'\xff' * 8 + bytes(b)) & 0xffffffff


def be64(v):
    return struct.pack('>Q', v)


def be32(v):
    return struct.pack('>I', v)


def reth(va, rkey, ln):
    return be64(va) + be32(rkey) + be32(ln)


def aeth(syn, msn):
    return bytes([syn]) + struct.pack('>I', msn)[1:]


def deth(qkey, sqpn):
    return be32(qkey) + be32(sqpn & 0xffffff)


def xrceth(srqn):
    return be32(srqn & 0xffffff)


def payload(n, seed):
    return bytes((seed + i * 7) & 0xff for i in range(n))


def pad(n):
    return -n & 3


# (name, opcode, ext headers, payload length, BTH kwargs)
CASES = [
    ('rc_send_only', 0x04, b'', 16, dict(dqpn=0x11, ackreq=1, psn=1)),
    ('rc_send_first', 0x00, b'', 256, dict(dqpn=0x12, psn=0xfffffe)),
    ('rc_send_middle', 0x01, b'', 256, dict(dqpn=0x12, psn=0xffffff)),
    ('rc_send_last_imm', 0x03, be32(0xdeadbeef), 5,
     dict(dqpn=0x12, psn=0, ackreq=1, solicited=1)),
    ('rc_send_only_inv', 0x17, be32(0x1234), 3, dict(dqpn=0x99, psn=7)),
    ('rc_write_only', 0x0a, reth(0x7f0012345678, 0xabcd, 37), 37,
     dict(dqpn=0xabcdef, psn=0x123456, pkey=0x8001)),
    ('rc_write_only_imm', 0x0b, reth(0x1000, 0x55, 1) + be32(0xcafe), 1,
     dict(dqpn=0x10, psn=2, migreq=1)),
    ('rc_write_first', 0x06, reth(0x2000, 0x66, 4096), 1024,
     dict(dqpn=0x10, psn=3)),
    ('rc_read_req', 0x0c, reth(0xffffffffffff0000, 0x77, 0x10000), 0,
     dict(dqpn=0x21, psn=0x800000, ackreq=1)),
    ('rc_read_resp_only', 0x10, aeth(0x1f, 0x000042), 64,
     dict(dqpn=0x22, psn=0x800000)),
    ('rc_read_resp_middle', 0x0e, b'', 512, dict(dqpn=0x22, psn=9)),
    ('rc_ack', 0x11, aeth(0x00, 0xfffffe), 0, dict(dqpn=0x23, psn=5)),
    ('rc_rnr_nak', 0x11, aeth(0x3e, 0x10), 0, dict(dqpn=0x23, psn=6)),
    ('rc_nak_seq', 0x11, aeth(0x60, 0x11), 0, dict(dqpn=0x23, psn=7)),
    ('rc_cmp_swap', 0x13,
     be64(0x10000) + be32(0x88) + be64(1) + be64(2), 0,
     dict(dqpn=0x24, psn=8, ackreq=1)),
    ('rc_fetch_add', 0x14,
     be64(0x10008) + be32(0x88) + be64(0xffffffffffffffff) + be64(0), 0,
     dict(dqpn=0x24, psn=9, ackreq=1)),
    ('rc_atomic_ack', 0x12, aeth(0x00, 3) + be64(0x0123456789abcdef), 0,
     dict(dqpn=0x25, psn=9)),
    ('uc_write_last_imm', 0x29, be32(7), 255, dict(dqpn=0x30, psn=4)),
    ('ud_send_only', 0x64, deth(0x11111111, 0x000001), 8,
     dict(dqpn=0x31, psn=0, pkey=0x7fff)),
    ('ud_send_only_imm', 0x65, deth(0x80010000, 0x123456) + be32(9), 2,
     dict(dqpn=0xffffff, psn=0x5a5a5a)),
    ('rc_atomic_write', 0x1d, reth(0x10010, 0x88, 8), 8,
     dict(dqpn=0x24, psn=10, ackreq=1)),
    ('xrc_send_only', 0xa4, xrceth(0x000123), 16,
     dict(dqpn=0x40, psn=1, ackreq=1)),
    ('xrc_send_first', 0xa0, xrceth(0xabcdef), 256, dict(dqpn=0x40, psn=2)),
    ('xrc_send_last_imm', 0xa3, xrceth(0x000123) + be32(0x1234), 5,
     dict(dqpn=0x40, psn=3, ackreq=1, solicited=1)),
    ('xrc_write_only_imm', 0xab,
     xrceth(0x7) + reth(0x1000, 0x55, 3) + be32(0xcafe), 3,
     dict(dqpn=0x41, psn=4)),
    ('xrc_read_req', 0xac, xrceth(0x7) + reth(0x2000, 0x66, 8192), 0,
     dict(dqpn=0x41, psn=5, ackreq=1)),
    ('xrc_read_resp_first', 0xad, aeth(0x1f, 1), 256,
     dict(dqpn=0x42, psn=5)),
    ('xrc_cmp_swap', 0xb3,
     xrceth(0x9) + be64(0x10000) + be32(0x88) + be64(1) + be64(2), 0,
     dict(dqpn=0x41, psn=6, ackreq=1)),
    ('xrc_atomic_ack', 0xb2, aeth(0x00, 4) + be64(0xfedcba9876543210), 0,
     dict(dqpn=0x42, psn=6)),
    ('xrc_ack', 0xb1, aeth(0x00, 5), 0, dict(dqpn=0x42, psn=7)),
    ('xrc_send_only_inv', 0xb7, xrceth(0x123) + be32(0x4321), 7,
     dict(dqpn=0x40, psn=8)),
    ('xrc_atomic_write', 0xbd, xrceth(0x9) + reth(0x10018, 0x88, 8), 8,
     dict(dqpn=0x41, psn=9, ackreq=1)),
]


def roce4(name, op, ext, plen, kw, tos=0x02, ttl=64, sport=0xc123):
    pl = payload(plen, len(name))
    bth = BTH(opcode=op, padcount=pad(plen), **kw)
    pkt = (IP(src='192.168.1.1', dst='192.168.1.2', tos=tos, ttl=ttl,
              id=0x1234, flags='DF') /
           UDP(sport=sport, dport=4791, chksum=0) /
           bth / Raw(ext + pl + bytes(pad(plen))))
    return raw(pkt)


def roce6(name, op, ext, plen, kw):
    pl = payload(plen, len(name))
    body = raw(BTH(opcode=op, padcount=pad(plen), icrc=0, **kw))[:-4]
    body += ext + pl + bytes(pad(plen))
    udp_len = 8 + len(body) + 4
    udp = struct.pack('>HHHH', 0xd001, 4791, udp_len, 0xbeef)
    ip6 = raw(IPv6(src='fe80::1', dst='fe80::2', tc=0x8a, fl=0xabcde,
                   hlim=17, nh=17, plen=udp_len))
    pkt = ip6 + udp + body
    return pkt + struct.pack('<I', icrc(pkt))


def c_bytes(b):
    out = []
    for i in range(0, len(b), 12):
        out.append('\t' + ' '.join('0x%02x,' % x for x in b[i:i + 12]))
    return '\n'.join(out)


def main():
    outdir = sys.argv[1]
    vecs = []
    for name, op, ext, plen, kw in CASES:
        p4 = roce4(name, op, ext, plen, kw)
        want = struct.unpack('<I', p4[-4:])[0]
        assert icrc(p4[:-4]) == want, name   # our python == scapy
        vecs.append(('v4_' + name, p4, 'scapy'))
        vecs.append(('v6_' + name, roce6(name, op, ext, plen, kw), 'zlib'))
    c = raw(IP(src='192.168.1.1', dst='192.168.1.2', tos=0x02, ttl=64,
               id=0x1234, flags='DF') /
            UDP(sport=0xc123, dport=4791, chksum=0) / cnp(0xd2))
    assert icrc(c[:-4]) == struct.unpack('<I', c[-4:])[0]
    vecs.append(('v4_cnp', c, 'scapy'))

    with open(os.path.join(outdir, 'icrc_vectors.inc'), 'w') as f:
        f.write('/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */\n')
        f.write('/* Generated by gen_vectors.py; do not edit. */\n')
        for name, p, src in vecs:
            f.write('/* %s: ICRC from %s */\n' % (name, src))
            f.write('static const u8 vec_%s[] = {\n%s\n};\n' %
                    (name, c_bytes(p)))
        f.write('static const struct icrc_vector icrc_vectors[] = {\n')
        for name, p, src in vecs:
            f.write('\t{ "%s", vec_%s, sizeof(vec_%s) },\n' %
                    (name, name, name))
        f.write('};\n')

    cdir = os.path.join(outdir, 'corpus', 'parse')
    os.makedirs(cdir, exist_ok=True)
    for name, p, _ in vecs:
        with open(os.path.join(cdir, name), 'wb') as f:
            f.write(p)


if __name__ == '__main__':
    main()
