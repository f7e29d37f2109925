"""The ICRC against known answers, scapy, and real traffic."""

import os
import random
import socket
import struct
import time

from .proto import (ETH_P_ALL, ETH_P_IP, ETH_P_IPV6, RC_SEND_ONLY, ROCE_PORT, SO_RCVBUFFORCE,
                    VALID_OPCODES, bth, icrc, icrc_bitwise, log)
from .wire import NetNS
from . import scapyload


def selftest():
    """Known-answer vectors (Documentation's reference notes), and the fast
    ICRC against scapy's and against a bitwise CRC, over random packets."""
    try:
        scapyload.prepare()
        from scapy.contrib.roce import BTH
        from scapy.layers.inet import IP, UDP
        from scapy.packet import Raw
        import importlib.util
        if importlib.util.find_spec("pyverbs") is None:
            raise ImportError("no pyverbs")
    except ImportError as e:
        log("selftest: %s (python3-scapy and python3-pyverbs are needed)" % e)
        return None
    ok = True
    ip = bytes.fromhex("4502003c123440004011a527c0a80101c0a80102c12312b7002800000400ffff0000001180000001"
                       "000102030405060708090a0b0c0d0e0f")
    for name, pkt, want in (("RC SEND_ONLY", ip, "f71a20b9"), ):
        got = icrc(pkt).hex()
        bw = icrc_bitwise(pkt).hex()
        log("KAT %s: icrc %s, bitwise %s, want %s" % (name, got, bw, want))
        ok &= got == want == bw
    cnp_ip = bytes.fromhex("4502003c123440004011a527c0a80101c0a80102c12312b700280000"
                           "8100ffff400000d200000000") + b"\0" * 16
    got = icrc(cnp_ip).hex()
    log("KAT CNP: icrc %s, want 1dedd217" % got)
    ok &= got == "1dedd217"
    rng = random.Random(1)
    n = 60
    for i in range(n):
        payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
        p = (IP(src="10.0.0.%d" % rng.randrange(1, 250), dst="10.0.1.2", tos=rng.getrandbits(8),
                ttl=rng.randrange(1, 256), id=rng.getrandbits(16))
             / UDP(sport=rng.randrange(0xC000, 0x10000), dport=ROCE_PORT, chksum=rng.getrandbits(16))
             / BTH(opcode=rng.choice(VALID_OPCODES), dqpn=rng.getrandbits(24), psn=rng.getrandbits(24),
                   fecn=rng.getrandbits(1), becn=rng.getrandbits(1), resv6=rng.getrandbits(6),
                   ackreq=rng.getrandbits(1), padcount=rng.getrandbits(2))
             / Raw(payload))
        b = bytes(p)
        mine = icrc(b[:-4])
        if mine != b[-4:] or (i < 20 and icrc_bitwise(b[:-4]) != mine):
            log("mismatch with scapy on %s: scapy %s mine %s" % (b.hex(), b[-4:].hex(), mine.hex()))
            ok = False
    # IPv6 (scapy 2.5 computes no ICRC for IPv6): the masks make the ICRC
    # independent of traffic class, flow label and hop limit.
    base = bytearray(struct.pack("!IHBB16s16s", 6 << 28, 8 + 12 + 8 + 4, 17, 64, b"\xfd" + b"\0" * 14 + b"\1",
                                 b"\xfd" + b"\0" * 14 + b"\2") + struct.pack("!HHHH", 0xC000, ROCE_PORT, 32, 0)
                     + bth(RC_SEND_ONLY, 0x11, 1) + b"abcdefgh")
    ref = icrc(bytes(base))
    for tc, fl, hl in ((0xFF, 0xFFFFF, 1), (3, 0x12345, 255)):
        v = bytearray(base)
        v[0:4] = struct.pack("!I", (6 << 28) | (tc << 20) | fl)
        v[7] = hl
        ok &= icrc(bytes(v)) == ref == icrc_bitwise(bytes(v))
    log("selftest: %d random packets agree with scapy's ICRC; IPv6 masks %s"
        % (n, "ok" if ok else "FAILED"))
    return ok


def icrc_check(a):
    """Verify the ICRC of every RoCEv2 packet seen on --ifname for --seconds
    (both directions), with this file's code and, for IPv4, scapy's."""
    scapyload.prepare()
    from scapy.layers.l2 import Ether
    from scapy.contrib.roce import BTH
    with NetNS(a.ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
        s.bind((a.ifname, ETH_P_ALL))
    s.settimeout(0.2)
    if a.ready_file:
        open(a.ready_file, "w").close()
    end = time.monotonic() + a.seconds
    n = {4: 0, 6: 0}
    bad = 0
    scapy_checked = 0
    stopping = False
    while time.monotonic() < end:
        # Once told to stop, read what is queued, then stop.
        stopping = stopping or bool(a.stop_file and os.path.exists(a.stop_file))
        try:
            f = s.recv(65535)
        except socket.timeout:
            if stopping:
                break
            continue
        et = struct.unpack("!H", f[12:14])[0]
        if et == ETH_P_IP and f[23] == 17 and struct.unpack("!H", f[36:38])[0] == ROCE_PORT:
            ip = f[14:14 + struct.unpack("!H", f[16:18])[0]]
            v = 4
        elif et == ETH_P_IPV6 and f[20] == 17 and struct.unpack("!H", f[56:58])[0] == ROCE_PORT:
            ip = f[14:14 + 40 + struct.unpack("!H", f[18:20])[0]]
            v = 6
        else:
            continue
        n[v] += 1
        if icrc(ip[:-4]) != ip[-4:]:
            bad += 1
            if bad < 5:
                log("ICRC mismatch: %s" % ip.hex())
        if not a.stop_file and min(n.values()) >= a.min_packets and scapy_checked >= 20:
            break
        if v == 4 and scapy_checked < 50:
            p = Ether(f)
            if BTH in p:
                want = p[BTH].compute_icrc(bytes(p[BTH]))
                if want != ip[-4:]:
                    bad += 1
                    log("scapy's ICRC disagrees with the wire: %s" % ip.hex())
                scapy_checked += 1
    log("icrc-check: %d IPv4 and %d IPv6 RoCEv2 packets in %.1f s, %d checked by scapy too,"
        " %d bad ICRCs" % (n[4], n[6], a.seconds - (end - time.monotonic()), scapy_checked, bad))
    if min(n.values()) < a.min_packets:
        log("icrc-check: want at least %d packets of each family" % a.min_packets)
        return False
    return bad == 0


