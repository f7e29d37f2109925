#!/usr/bin/python3
"""sroce_inject: hostile RoCEv2 wire input for sroce (selftests/wire_hostile.sh).

Crafts RoCEv2 packets as raw Ethernet frames and sends them with an AF_PACKET
socket on a veth end, so that they arrive at the peer's sroce device exactly
as written: any IP/UDP length, any BTH, a right or wrong ICRC. Scapy
(scapy.contrib.roce) is the reference the ICRC here is checked against, on
random packets and on real sroce traffic; it builds the CNPs (with its own
ICRC). Everything else is built as bytes: scapy costs milliseconds per packet
in a TCG guest, and the mutation run sends 100k of them.

Run it in the initial namespace (where sysfs shows every RDMA device and its
counters) with --ns naming the namespace of the sending veth end: only the
packet sockets are created there. The target device (--dev) is on the other
end. pyverbs (with the sroce provider: RDMAV_DRIVERS) creates "victim" QPs
on it whose QPN, PSN, MRs and receive buffers the injector knows. Their
remote QPNs are phantoms (0xa0xxxx) on the sending side, so every ACK, NAK
and READ response they send is caught by a BPF-filtered sniffer on the veth
(and dropped by the sending side's device as rcvd_no_qp): each answer's
opcode, syndrome, PSN and ICRC is checked, not just the counters.

Commands:
  selftest     ICRC known-answer vectors, and the ICRC against scapy's on
               random packets (no root, no device). Exit 4 without scapy or
               pyverbs.
  icrc-check   sniff real RoCEv2 traffic on --ifname and verify every
               packet's ICRC with this file's code (and, for IPv4, scapy's).
  directed     the per-class cases: every malformed or invalid class, the
               counter each must move (exactly, unless real traffic moves it
               too), and the answer (ACK/NAK/none) the spec asks for. Known
               deviations are reported as XFAIL and do not fail the run.
  flood        --flood SENDs to unknown QPNs plus --cnps CNPs for unknown
               QPs, as fast as possible: all dropped and counted (less what
               the veth dropped); a victim answers right after.
  mutate       --count randomly mutated valid packets (--seed): bit flips,
               byte sets, truncation, extension, splices, field-aware changes
               of opcode/PSN/QPN/P_Key/pad/lengths/R_Key/VA/syndrome/Q_Key,
               IP/UDP length lies, IP options, IPv6, IP fragments, most with
               the ICRC fixed up so they reach the parser and the transport.
               Victims are reset every --cycle packets. Never aims at a QPN
               it does not own (real traffic may run on the device); ends
               with fresh probes of the victims.
  all          icrc-check (until --min-packets of each family), then
               directed, flood and mutate, in one process.
  sec-wire     the security cases of selftests/sec_wire.sh (--cases; the
               table and what each checks: tools/inject/sroce_secwire.py):
               forged-source UDP from a local user, duplicate READ
               amplification, oversize datagrams, a backlog flood behind a
               streaming READ.
  udp-forge    sec-wire's unprivileged sender: RoCEv2 requests with a
               right ICRC from an ordinary UDP socket to a local address.
  newlink-race rdma link add (netlink) racing with the deletion of its veth,
               for --seconds in --ns: no hang, no device left behind.

Exit status: 0 all checks passed, 1 a check failed, 2 usage error.
"""

import argparse
import ctypes
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time
import zlib

# --- RoCEv2 constants -----------------------------------------------------------

ROCE_PORT = 4791
ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
SO_RCVBUFFORCE = 33
PHANTOM_BASE = 0xA00000      # fake remote QPNs of the victims (sender side)
PHANTOM_SPAN = 0x10000
MCAST_QPN = 0xFFFFFF
GSI_QKEY = 0x80010000

# Opcodes (IBTA vol. 1 ch. 9, Annex A17 for the CNP).
RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST, RC_SEND_LAST_IMM = 0x00, 0x01, 0x02, 0x03
RC_SEND_ONLY, RC_SEND_ONLY_IMM = 0x04, 0x05
RC_WRITE_FIRST, RC_WRITE_MIDDLE, RC_WRITE_LAST, RC_WRITE_LAST_IMM = 0x06, 0x07, 0x08, 0x09
RC_WRITE_ONLY, RC_WRITE_ONLY_IMM, RC_READ_REQ = 0x0A, 0x0B, 0x0C
RC_READ_RESP_FIRST, RC_READ_RESP_MIDDLE, RC_READ_RESP_LAST, RC_READ_RESP_ONLY = 0x0D, 0x0E, 0x0F, 0x10
RC_ACK, RC_ATOMIC_ACK, RC_CMP_SWAP, RC_FETCH_ADD = 0x11, 0x12, 0x13, 0x14
RC_SEND_LAST_INV, RC_SEND_ONLY_INV, RC_ATOMIC_WRITE = 0x16, 0x17, 0x1D
UC = 0x20
UD_SEND_ONLY, UD_SEND_ONLY_IMM = 0x64, 0x65
CNP = 0x81
XRC = 0xA0

# Header length (BTH .. last extension header) of every opcode sroce knows;
# anything else is reserved or unimplemented and must be dropped as malformed.
HDR_LEN = {}
for _t in (0x00, 0x20):
    for _o, _l in ((0, 12), (1, 12), (2, 12), (3, 16), (4, 12), (5, 16), (6, 28), (7, 12),
                   (8, 12), (9, 16), (0xA, 28), (0xB, 32)):
        HDR_LEN[_t | _o] = _l
HDR_LEN.update({0x0C: 28, 0x0D: 16, 0x0E: 12, 0x0F: 16, 0x10: 16, 0x11: 16, 0x12: 24,
                0x13: 40, 0x14: 40, 0x16: 16, 0x17: 16, 0x1D: 28, 0x64: 20, 0x65: 24, 0x81: 28})
for _o in range(0x00, 0x1E):
    if _o in HDR_LEN and _o not in (0x1D,):
        _l = HDR_LEN[_o]
        # XRC requests carry a 4-byte XRCETH; responses are RC's.
        HDR_LEN[XRC | _o] = _l + 4 if _o in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xA, 0xB, 0xC, 0x13, 0x14,
                                            0x16, 0x17) else _l
HDR_LEN[XRC | 0x1D] = 32
VALID_OPCODES = sorted(HDR_LEN)
RESERVED_OPCODES = [op for op in range(256) if op not in HDR_LEN]

# AETH syndromes.
AETH_ACK = 0x1F            # ACK, credit count "invalid" (sroce sends this)
NAK_SEQ, NAK_INV, NAK_ACC, NAK_OP = 0x60, 0x61, 0x62, 0x63

# ibv_wc_status values used here.
WC_SUCCESS, WC_LOC_LEN_ERR, WC_LOC_PROT_ERR, WC_WR_FLUSH_ERR, WC_REM_INV_REQ_ERR = 0, 1, 4, 5, 9

# Counters (kernel/sroce_stats.c). EXACT ones move only for hostile input
# (real RC traffic never touches them), so a case must move them by exactly
# what it expects and leave the rest alone. NOISY ones are moved by real
# traffic too (retransmissions, duplicates): a case asks for "at least", and
# the sniffed ACK/NAKs give the exact check.
EXACT = ("rcvd_icrc_err", "rcvd_malformed", "rcvd_no_qp", "rcvd_bad_qp_state", "rcvd_bad_opcode",
         "rcvd_bad_pkey", "rcvd_cnp", "rcvd_bad_qkey", "rcvd_no_wqe_drop", "rcvd_ud_len_drop",
         "rem_access_nak_sent",
         "rem_inv_req_nak_sent", "rem_op_nak_sent", "rcvd_fatal_nak")
NOISY = ("duplicate_request", "out_of_seq_request", "seq_nak_sent", "rnr_nak_sent",
         "completer_drop", "rcvd_rnr_err", "rcvd_seq_err")
# Real-traffic teardown (a late packet for a QP just destroyed or being torn
# down) can move these two; tolerated only when a traffic run ended meanwhile.
TEARDOWN = ("rcvd_no_qp", "rcvd_bad_qp_state")
# Counters of the address, size and READ-responder checks (selftests/
# sec_wire.sh); used only where the module has them. A connected QP drops
# what does not come from its peer's address to its own (rcvd_bad_addr):
# every victim's path is --src-ip(6) -> --dst-ip(6), which is what the
# injector sends from and to, so its cases must not move it - except real
# traffic's teardown: a late packet of an IPv6 run whose QPN an IPv4 run's
# new QP now has. READ streams of real traffic may fill their backlog or
# re-request a READ, so the responder's two are NOISY.
EXACT_IF_PRESENT = ("rcvd_bad_addr", "rcvd_oversize")
NOISY_IF_PRESENT = ("resp_backlog_drop", "dup_read_drop")
TEARDOWN_IF_PRESENT = ("rcvd_bad_addr",)


def log(*a):
    print(*a, flush=True)


def _stamp():
    """ [t=N s] on the selftest's clock (SROCE_T0: its start, epoch s)."""
    t0 = os.environ.get("SROCE_T0")
    return " [t=%.0fs]" % (time.time() - float(t0)) if t0 else ""


# --- checksums and ICRC ---------------------------------------------------------

_FF8 = zlib.crc32(b"\xff" * 8)     # CRC state after the masked pseudo-LRH


def icrc(ip_pkt):
    """ICRC of an IP packet (IPv4 with IHL 5, or IPv6), ICRC excluded.

    CRC-32 (zlib's) over 8 bytes of ones, then the packet with IPv4 TOS, TTL
    and header checksum (IPv6 traffic class, flow label, hop limit), the UDP
    checksum and BTH byte 4 (FECN, BECN, resv6) forced to ones. Returned as
    the 4 bytes that go on the wire (least significant first).
    """
    if ip_pkt[0] >> 4 == 4:
        m = bytearray(ip_pkt[:40])
        rest = 40
        if len(m) == 40:
            m[1] = m[8] = m[10] = m[11] = m[26] = m[27] = m[32] = 0xFF
        else:
            _mask(m, (1, 8, 10, 11, 26, 27, 32))
    else:
        m = bytearray(ip_pkt[:60])
        m[0] |= 0x0F
        rest = 60
        _mask(m, (1, 2, 3, 7, 46, 47, 52))
    crc = zlib.crc32(m, _FF8)
    crc = zlib.crc32(memoryview(ip_pkt)[rest:], crc)
    return struct.pack("<I", crc)


def _mask(m, idx):
    for i in idx:
        if i < len(m):
            m[i] = 0xFF


def _crc32_bitwise(data, crc=0xFFFFFFFF):
    """Independent CRC-32 (reflected 0xEDB88320), to cross-check zlib's use."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc


def icrc_bitwise(ip_pkt):
    """The ICRC the way rxe computes it: seed 0xdebb20e3, no pseudo-LRH."""
    v6 = ip_pkt[0] >> 4 == 6
    n = 60 if v6 else 40
    m = bytearray(ip_pkt[:n])
    if v6:
        m[0] |= 0x0F
        for i in (1, 2, 3, 7, 46, 47, 52):
            m[i] = 0xFF
    else:
        for i in (1, 8, 10, 11, 26, 27, 32):
            m[i] = 0xFF
    crc = _crc32_bitwise(bytes(m) + bytes(ip_pkt[n:]), 0xDEBB20E3)
    return struct.pack("<I", crc ^ 0xFFFFFFFF)


def inet_csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


# --- transport headers -----------------------------------------------------------


def bth(op, dqpn, psn, *, pad=0, se=0, mig=0, tver=0, pkey=0xFFFF, fecn=0, becn=0,
        resv6=0, ackreq=0, resv7=0):
    b1 = (se << 7) | (mig << 6) | ((pad & 3) << 4) | (tver & 0xF)
    b4 = (fecn << 7) | (becn << 6) | (resv6 & 0x3F)
    return struct.pack("!BBHII", op, b1, pkey, (b4 << 24) | (dqpn & 0xFFFFFF),
                       (((ackreq << 7) | resv7) << 24) | (psn & 0xFFFFFF))


def reth(va, rkey, dlen):
    return struct.pack("!QII", va & (2**64 - 1), rkey & 0xFFFFFFFF, dlen & 0xFFFFFFFF)


def atomiceth(va, rkey, swap_add, compare=0):
    return struct.pack("!QIQQ", va & (2**64 - 1), rkey, swap_add, compare)


def aeth(syndrome, msn=0):
    return struct.pack("!I", (syndrome << 24) | (msn & 0xFFFFFF))


def deth(qkey, sqpn):
    return struct.pack("!II", qkey, sqpn & 0xFFFFFF)


def tp(op, dqpn, psn, hdrs=b"", payload=b"", pad=None, padbytes=None, **kw):
    """A transport packet (BTH .. pad, no ICRC). PadCnt and the pad bytes
    follow the payload unless given."""
    if pad is None:
        pad = -len(payload) & 3
    if padbytes is None:
        padbytes = b"\0" * (-len(payload) & 3)
    return bth(op, dqpn, psn, pad=pad, **kw) + hdrs + payload + padbytes


def pattern(n, seed):
    return random.Random(seed).randbytes(n)


# --- the wire ----------------------------------------------------------------------


class NetNS:
    """Enter a named network namespace (ip netns) for the duration of a
    with block: sockets created inside stay in it. Counters and devices
    (sysfs, uverbs) are read from the namespace the injector started in."""

    CLONE_NEWNET = 0x40000000

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        if not self.name:
            return self
        libc = ctypes.CDLL(None, use_errno=True)
        self._setns = libc.setns
        self.home = os.open("/proc/self/ns/net", os.O_RDONLY)
        fd = os.open("/run/netns/" + self.name, os.O_RDONLY)
        try:
            if self._setns(fd, self.CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns(%s)" % self.name)
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        if not self.name:
            return
        try:
            if self._setns(self.home, self.CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns(back)")
        finally:
            os.close(self.home)


def _mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


class Wire:
    """Frames from the sending veth end to the target's, and a sniffer for
    the target's answers to the phantom QPNs."""

    def __init__(self, a):
        self.ifname = a.ifname
        self.eth4 = _mac(a.dst_mac) + _mac(a.src_mac) + struct.pack("!H", ETH_P_IP)
        self.eth6 = _mac(a.dst_mac) + _mac(a.src_mac) + struct.pack("!H", ETH_P_IPV6)
        self.sip4 = socket.inet_aton(a.src_ip)
        self.dip4 = socket.inet_aton(a.dst_ip)
        self.sip6 = socket.inet_pton(socket.AF_INET6, a.src_ip6) if a.src_ip6 else None
        self.dip6 = socket.inet_pton(socket.AF_INET6, a.dst_ip6) if a.dst_ip6 else None
        self.ns = a.ns
        with NetNS(self.ns):
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            self.sock.bind((a.ifname, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.sent = 0
        self.sniffer = None
        self._fast = {}

    # IPv4 header with a valid checksum (the IP layer checks it).
    def ip4(self, plen, tos=0, ttl=64, ident=0, frag=0x4000, opts=b"", tot_len=None,
            proto=17):
        ihl = 5 + len(opts) // 4
        tl = 20 + len(opts) + plen if tot_len is None else tot_len
        h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, tl, ident, frag, ttl, proto, 0,
                        self.sip4, self.dip4) + opts
        c = inet_csum(h)
        return h[:10] + struct.pack("!H", c) + h[12:]

    def ip6(self, plen, tc=0, fl=0, hlim=64):
        return struct.pack("!IHBB16s16s", (6 << 28) | (tc << 20) | fl, plen, 17, hlim,
                           self.sip6, self.dip6)

    def frame(self, t, *, v6=False, icrc_mode="good", sport=0xC000, udp_len=None,
              trailer=b"", tos=0, ttl=64, opts=b"", tc=0, fl=0, hlim=64, ident=0, frag=0x4000):
        """An Ethernet frame carrying transport packet t (BTH .. pad).

        icrc_mode: "good", "none" (no ICRC at all), a 4-byte value, or a
        callable(good_icrc_bytes) -> bytes. udp_len overrides the UDP length
        (the IP length always covers everything sent); trailer is junk after
        the ICRC inside the IP payload.
        """
        body_len = len(t) + (0 if icrc_mode == "none" else 4)
        ulen = 8 + body_len if udp_len is None else udp_len
        udp = struct.pack("!HHHH", sport, ROCE_PORT, ulen & 0xFFFF, 0)
        plen = 8 + body_len + len(trailer)
        if v6:
            iph = self.ip6(plen, tc, fl, hlim)
            eth = self.eth6
        else:
            iph = self.ip4(plen, tos, ttl, ident, frag=frag, opts=opts)
            eth = self.eth4
        pkt = iph + udp + t
        if icrc_mode == "good":
            ic = icrc(pkt)
        elif icrc_mode == "none":
            ic = b""
        elif callable(icrc_mode):
            ic = icrc_mode(icrc(pkt))
        else:
            ic = icrc_mode
        return eth + pkt + ic + trailer

    def frame6_ext(self, t):
        """t over IPv6 with an (empty, PadN) destination options header
        before the UDP header, and the ICRC as if it were not there."""
        ulen = 8 + len(t) + 4
        udp = struct.pack("!HHHH", 0xC000, ROCE_PORT, ulen, 0)
        ic = icrc(self.ip6(ulen) + udp + t)
        iph = struct.pack("!IHBB16s16s", 6 << 28, 8 + ulen, 60, 64, self.sip6, self.dip6)
        dopt = bytes([17, 0, 1, 4, 0, 0, 0, 0])
        return self.eth6 + iph + dopt + udp + t + ic

    def fast4(self, t):
        """frame(t) for the common case (IPv4, default header fields, good
        ICRC), with the masked IP/UDP part of the CRC cached per length."""
        plen = len(t) + 12
        c = self._fast.get(plen)
        if c is None:
            iph = self.ip4(plen)
            udp = struct.pack("!HHHH", 0xC000, ROCE_PORT, plen, 0)
            m = bytearray(iph + udp)
            m[1] = m[8] = m[10] = m[11] = m[26] = m[27] = 0xFF
            c = self._fast[plen] = (self.eth4 + iph + udp, zlib.crc32(m, _FF8))
        head, st = c
        if len(t) > 4:
            crc = zlib.crc32(t[5:], zlib.crc32(t[:4] + b"\xff", st))
        else:
            crc = zlib.crc32(t, st)
        return head + t + struct.pack("<I", crc)

    def fragments(self, t, ident, frag_payload=1480):
        """t as IPv4 fragments; the ICRC is that of the reassembled packet
        (IP ID kept, fragment field 0, total length of the whole)."""
        udp_payload_len = len(t) + 4
        udp = struct.pack("!HHHH", 0xC000, ROCE_PORT, 8 + udp_payload_len, 0)
        whole = self.ip4(8 + udp_payload_len, ident=ident, frag=0)
        data = udp + t + icrc(whole + udp + t)
        frames = []
        off = 0
        while off < len(data):
            chunk = data[off:off + frag_payload]
            more = off + len(chunk) < len(data)
            h = self.ip4(len(chunk), ident=ident, frag=(0x2000 if more else 0) | (off // 8))
            frames.append(self.eth4 + h + chunk)
            off += len(chunk)
        return frames

    def split4(self, f, size=1472):
        """An IPv4 frame (built with the fragment field 0) as fragments of
        at most size payload bytes (a multiple of 8)."""
        ip = f[14:]
        ihl = (ip[0] & 0xF) * 4
        hdr, data = bytearray(ip[:ihl]), ip[ihl:]
        out = []
        for off in range(0, len(data), size):
            chunk = data[off:off + size]
            h = bytearray(hdr)
            h[2:4] = struct.pack("!H", ihl + len(chunk))
            h[6:8] = struct.pack("!H", (0x2000 if off + size < len(data) else 0) | (off // 8))
            h[10:12] = b"\0\0"
            h[10:12] = struct.pack("!H", inet_csum(bytes(h)))
            out.append(f[:14] + bytes(h) + chunk)
        return out

    def send(self, frames):
        for f in frames:
            self.sock.send(f)
        self.sent += len(frames)

    # --- sniffer ----------------------------------------------------------------

    def open_sniffer(self):
        """An AF_PACKET socket that only sees RoCEv2 packets (IPv4 or IPv6,
        UDP 4791) whose BTH DestQP is a phantom QPN: the victims' answers."""
        with NetNS(self.ns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
        prog = _bpf_phantom_filter()
        buf = ctypes.create_string_buffer(prog)
        fprog = struct.pack("HL", len(prog) // 8, ctypes.addressof(buf))
        s.setsockopt(socket.SOL_SOCKET, 26, fprog)       # SO_ATTACH_FILTER
        with NetNS(self.ns):
            s.bind((self.ifname, ETH_P_ALL))
        s.setblocking(False)
        self.sniffer = s
        self._sniff_buf = buf
        self.drain()

    def drain(self):
        out = []
        while True:
            try:
                data, addr = self.sniffer.recvfrom(65535)
            except BlockingIOError:
                return out
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            out.append(data)


def _bpf_phantom_filter():
    """Classic BPF: IPv4/IPv6 + UDP dport 4791 + DestQP in the phantom range."""
    ins = []

    def op(code, jt, jf, k):
        ins.append((code, jt, jf, k))
    LDH, LDB, LDW, JEQ, JGE, AND, RET, JA = 0x28, 0x30, 0x20, 0x15, 0x35, 0x54, 0x06, 0x05
    # 0: ethertype
    op(LDH, 0, 0, 12)                       # 0
    op(JEQ, 0, 6, ETH_P_IP)                 # 1 -> 2 / 8
    op(LDB, 0, 0, 23)                       # 2 protocol
    op(JEQ, 0, 14, 17)                      # 3 -> 4 / 18
    op(LDH, 0, 0, 36)                       # 4 UDP dport (IHL 5)
    op(JEQ, 0, 12, ROCE_PORT)               # 5 -> 6 / 18
    op(LDW, 0, 0, 46)                       # 6 BTH bytes 4..7
    op(JA, 0, 0, 6)                         # 7 -> 14
    op(JEQ, 0, 9, ETH_P_IPV6)               # 8 -> 9 / 18
    op(LDB, 0, 0, 20)                       # 9 next header
    op(JEQ, 0, 7, 17)                       # 10 -> 11 / 18
    op(LDH, 0, 0, 56)                       # 11 UDP dport
    op(JEQ, 0, 5, ROCE_PORT)                # 12 -> 13 / 18
    op(LDW, 0, 0, 66)                       # 13 BTH bytes 4..7
    op(AND, 0, 0, 0xFFFFFF)                 # 14
    op(JGE, 0, 2, PHANTOM_BASE)             # 15 -> 16 / 18
    op(JGE, 1, 0, PHANTOM_BASE + PHANTOM_SPAN)  # 16 -> 18 / 17
    op(RET, 0, 0, 0x40000)                  # 17 accept
    op(RET, 0, 0, 0)                        # 18 drop
    return b"".join(struct.pack("HBBI", *i) for i in ins)


class Reply:
    """One packet the target sent to a phantom QPN, decoded."""

    def __init__(self, frame):
        et = struct.unpack("!H", frame[12:14])[0]
        ip = frame[14:]
        if et == ETH_P_IP:
            ihl = (ip[0] & 0xF) * 4
            tot = struct.unpack("!H", ip[2:4])[0]
            ip = ip[:tot]
            udp_off = ihl
            self.v6 = False
        else:
            plen = struct.unpack("!H", ip[4:6])[0]
            ip = ip[:40 + plen]
            udp_off = 40
            self.v6 = True
        t = ip[udp_off + 8:]
        self.icrc_ok = icrc(ip[:-4]) == ip[-4:]
        self.opcode = t[0]
        self.dqpn = struct.unpack("!I", t[4:8])[0] & 0xFFFFFF
        self.psn = struct.unpack("!I", t[8:12])[0] & 0xFFFFFF
        self.syndrome = None
        self.payload = b""
        self.orig = None
        h = HDR_LEN.get(self.opcode, 12)
        if self.opcode in (0x0D, 0x0F, 0x10, 0x11, 0x12):
            self.syndrome = t[12]
        if self.opcode == 0x12:
            self.orig = struct.unpack("!Q", t[16:24])[0]
        pad = (t[1] >> 4) & 3
        self.payload = bytes(t[h:len(t) - 4 - pad])
        self.frame = frame

    def kind(self):
        """ack / nak-seq / nak-inv / nak-acc / nak-op / rnr / read-<pos> /
        atomic-ack / cnp / op-0xNN."""
        if self.opcode == RC_ACK:
            s = self.syndrome
            if s >> 5 == 0:
                return "ack"
            if s >> 5 == 1:
                return "rnr"
            if s >> 5 == 3:
                return {NAK_SEQ: "nak-seq", NAK_INV: "nak-inv", NAK_ACC: "nak-acc",
                        NAK_OP: "nak-op"}.get(s, "nak-%#x" % s)
            return "aeth-%#x" % s
        if self.opcode == RC_ATOMIC_ACK:
            return "atomic-ack"
        if self.opcode == 0x81:
            return "cnp"
        if RC_READ_RESP_FIRST <= self.opcode <= RC_READ_RESP_ONLY:
            return "read-" + ("first", "middle", "last", "only")[self.opcode - RC_READ_RESP_FIRST]
        return "op-%#x" % self.opcode

    def __repr__(self):
        return "%s(qpn %#x psn %#x%s)" % (self.kind(), self.dqpn, self.psn,
                                          "" if self.icrc_ok else " BAD-ICRC")


# --- counters ----------------------------------------------------------------------


class Counters:
    def __init__(self, dev):
        self.dir = "/sys/class/infiniband/%s/ports/1/hw_counters" % dev
        self.names = sorted(os.listdir(self.dir))

    def snap(self, names=None):
        out = {}
        for n in names or self.names:
            with open(os.path.join(self.dir, n)) as f:
                out[n] = int(f.read())
        return out


def udp_in_errors(ns):
    """InErrors of UDP (and UDP6) in namespace ns."""
    total = 0
    for path, key in (("/proc/net/snmp", "Udp:"), ("/proc/net/snmp6", "Udp6InErrors")):
        out = subprocess.run(["ip", "netns", "exec", ns, "cat", path], capture_output=True,
                             text=True, check=True).stdout.splitlines()
        if key == "Udp:":
            rows = [ln.split() for ln in out if ln.startswith("Udp:")]
            total += int(rows[1][rows[0].index("InErrors")])
        else:
            for ln in out:
                f = ln.split()
                if f and f[0] == key:
                    total += int(f[1])
    return total


class TrafficWatch:
    """The selftest's real-traffic loop bumps a number in a file after each
    run: if it changed during a case, a run's teardown may have moved the
    TEARDOWN counters."""

    def __init__(self, path):
        self.path = path

    def gen(self):
        if not self.path:
            return 0
        try:
            with open(self.path) as f:
                return f.read().strip()
        except OSError:
            return None


# --- victims (pyverbs) ---------------------------------------------------------------


class Verbs:
    """The target device's resources: PD, CQ, MRs and victim QPs."""

    MR_LEN = 1 << 16
    RECV_SLOT = 4096 + 64
    RECV_SLOTS = 512

    def __init__(self, a):
        from pyverbs.device import Context
        from pyverbs.pd import PD
        from pyverbs.cq import CQ
        from pyverbs.mr import MR
        import pyverbs.enums as e
        self.e = e
        self.ctx = Context(name=a.dev)
        self.pctx = Context(name=a.peer_dev)
        self.gid4 = a.gid_index
        self.gid6 = a.gid_index6
        self.dgid4 = self.pctx.query_gid(1, a.peer_gid_index)
        self.dgid6 = self.pctx.query_gid(1, a.peer_gid_index6) if a.peer_gid_index6 is not None else None
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 8192)
        rw = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        self.mr = MR(self.pd, self.MR_LEN, rw | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)
        self.mr_wo = MR(self.pd, 4096, rw)
        self.rmr = MR(self.pd, self.RECV_SLOT * self.RECV_SLOTS, e.IBV_ACCESS_LOCAL_WRITE)
        self.lmr = MR(self.pd, self.MR_LEN, e.IBV_ACCESS_LOCAL_WRITE)   # requester's local buffers
        self.next_slot = 0
        self.next_phantom = PHANTOM_BASE + random.randrange(0x100) * 0x40
        self.victims = []
        self.pending = []       # CQEs polled but not yet claimed

    def slot(self):
        s = self.next_slot % self.RECV_SLOTS
        self.next_slot += 1
        return self.rmr.buf + s * self.RECV_SLOT

    def poll(self):
        while True:
            n, wcs = self.cq.poll(64)
            if not n:
                return
            self.pending.extend(wcs[:n])

    def cqes_of(self, v):
        self.poll()
        mine = [w for w in self.pending if w.qp_num == v.qpn]
        self.pending = [w for w in self.pending if w.qp_num != v.qpn]
        return mine

    def phantom(self):
        p = self.next_phantom
        self.next_phantom += 1
        return p


class Victim:
    """A QP on the target device whose state the injector knows.

    kind: rc, uc, ud. state: init, rtr, rts. The remote side is a phantom
    QPN on the sending netdev's device.
    """

    def __init__(self, vb, name, kind="rc", state="rtr", recvs=8, recv_len=1024, access=None,
                 ipv6=False, mtu=1024, qkey=0x1234567, timeout=14, retry_cnt=7, bad_lkey=False):
        from pyverbs.qp import QP, QPCap, QPInitAttr
        e = vb.e
        self.vb, self.name, self.kind, self.state_want = vb, name, kind, state
        self.ipv6 = ipv6
        self.mtu = mtu
        self.qkey = qkey
        self.timeout, self.retry_cnt = timeout, retry_cnt
        self.recv_len = recv_len
        self.nrecv = recvs
        self.lkey = vb.rmr.lkey ^ (0x5A00 if bad_lkey else 0)
        self.access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
                       | e.IBV_ACCESS_REMOTE_ATOMIC) if access is None else access
        qpt = {"rc": e.IBV_QPT_RC, "uc": e.IBV_QPT_UC, "ud": e.IBV_QPT_UD}[kind]
        cap = QPCap(max_send_wr=16, max_recv_wr=max(recvs, 1) + 16, max_send_sge=1, max_recv_sge=1)
        self.qp = QP(vb.pd, QPInitAttr(qp_type=qpt, scq=vb.cq, rcq=vb.cq, cap=cap))
        self.qpn = self.qp.qp_num
        self.remote = vb.phantom()
        self.posted = 0
        vb.victims.append(self)
        self.bring_up()

    def modify(self, mask, **kw):
        from pyverbs.qp import QPAttr
        attr = QPAttr()
        for k, v in kw.items():
            setattr(attr, k, v)
        self.qp.modify(attr, mask)

    def bring_up(self, psn=None, sq_psn=None):
        """RESET -> INIT -> RTR [-> RTS] with a fresh expected PSN; posts the
        receive WQEs."""
        from pyverbs.addr import AHAttr, GlobalRoute
        e = self.vb.e
        self.psn = random.getrandbits(24) if psn is None else psn     # expected (responder) PSN
        self.sq_psn = random.getrandbits(24) if sq_psn is None else sq_psn
        self.modify(e.IBV_QP_STATE, qp_state=e.IBV_QPS_RESET)
        self.vb.cqes_of(self)       # forget what the old incarnation completed
        self.posted = 0
        if self.kind == "ud":
            self.modify(e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY,
                        qp_state=e.IBV_QPS_INIT, pkey_index=0, port_num=1, qkey=self.qkey)
        else:
            self.modify(e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
                        qp_state=e.IBV_QPS_INIT, pkey_index=0, port_num=1,
                        qp_access_flags=self.access if self.kind == "rc" else
                        self.access & (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE))
        self.repost()
        if self.state_want == "init":
            return
        mtu_enum = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}[self.mtu]
        if self.kind == "ud":
            self.modify(e.IBV_QP_STATE, qp_state=e.IBV_QPS_RTR)
        else:
            gr = GlobalRoute(dgid=self.vb.dgid6 if self.ipv6 else self.vb.dgid4,
                             sgid_index=self.vb.gid6 if self.ipv6 else self.vb.gid4, hop_limit=64)
            ah = AHAttr(port_num=1, is_global=1, gr=gr)
            mask = (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
                    | e.IBV_QP_RQ_PSN)
            kw = dict(qp_state=e.IBV_QPS_RTR, ah_attr=ah, path_mtu=mtu_enum,
                      dest_qp_num=self.remote, rq_psn=self.psn)
            if self.kind == "rc":
                mask |= e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER
                kw.update(max_dest_rd_atomic=8, min_rnr_timer=12)
            self.modify(mask, **kw)
        if self.state_want == "rtr":
            return
        mask = e.IBV_QP_STATE | e.IBV_QP_SQ_PSN
        kw = dict(qp_state=e.IBV_QPS_RTS, sq_psn=self.sq_psn)
        if self.kind == "rc":
            mask |= e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC
            kw.update(timeout=self.timeout, retry_cnt=self.retry_cnt, rnr_retry=7, max_rd_atomic=8)
        self.modify(mask, **kw)

    def repost(self):
        from pyverbs.wr import RecvWR, SGE
        while self.posted < self.nrecv:
            addr = self.vb.slot()
            n = self.recv_len + (40 if self.kind == "ud" else 0)
            self.qp.post_recv(RecvWR(wr_id=addr, num_sge=1, sg=[SGE(addr, n, self.lkey)]))
            self.posted += 1

    def state(self):
        attr, _ = self.qp.query(self.vb.e.IBV_QP_STATE)
        return attr.qp_state

    def state_name(self):
        e = self.vb.e
        return {e.IBV_QPS_RESET: "RESET", e.IBV_QPS_INIT: "INIT", e.IBV_QPS_RTR: "RTR",
                e.IBV_QPS_RTS: "RTS", e.IBV_QPS_SQD: "SQD", e.IBV_QPS_SQE: "SQE",
                e.IBV_QPS_ERR: "ERR"}.get(self.state(), "?")

    def recv_data(self, wc, n):
        off = wc.wr_id - self.vb.rmr.buf
        return self.vb.rmr.read(n, off)

    # RDMA target addresses in the shared MR.
    @property
    def mr(self):
        return self.vb.mr

    def op(self, rc_op):
        """The opcode for this QP's transport."""
        return rc_op | UC if self.kind == "uc" else rc_op

    def post_read(self, length, raddr, rkey, wr_id=1):
        from pyverbs.wr import SendWR, SGE
        e = self.vb.e
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                    sg=[SGE(self.vb.lmr.buf, length, self.vb.lmr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)

    def post_fetch_add(self, raddr, rkey, add, off, wr_id=2):
        from pyverbs.wr import SendWR, SGE
        e = self.vb.e
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                    sg=[SGE(self.vb.lmr.buf + off, 8, self.vb.lmr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_atomic(rkey, raddr, add, 0)
        self.qp.post_send(wr)


# --- directed cases -------------------------------------------------------------------


class Check:
    """Collects failures; prints one line per case."""

    def __init__(self):
        self.failed = []
        self.xfailed = []
        self.cases = 0

    def fail(self, case, msg):
        self.failed.append("%s: %s" % (case, msg))
        log("    NOT OK: %s" % msg)


class Session:
    """The injector's state: the wire, the target's counters and victims,
    and the case runner."""

    def __init__(self, a):
        self.a = a
        self.w = Wire(a)
        self.w.open_sniffer()
        self.cnt = Counters(a.dev)
        have = set(self.cnt.names)
        self.exact = EXACT + tuple(k for k in EXACT_IF_PRESENT if k in have)
        self.noisy = NOISY + tuple(k for k in NOISY_IF_PRESENT if k in have)
        self.teardown = TEARDOWN + tuple(k for k in TEARDOWN_IF_PRESENT if k in have)
        self.tw = TrafficWatch(a.traffic_gen)
        self.vb = Verbs(a)
        self.chk = Check()
        self.replies_total = 0
        self.own_requests = 0

    # --- the case runner ----------------------------------------------------------

    def case(self, name, frames, expect=None, atleast=None, replies=(), cqes=None,
             after=None, xfail=None, udp_errors=0, wait=5.0):
        """Send frames, then check: counters in expect moved by exactly that
        much (EXACT ones not named must not move), those in atleast by at
        least that much, the target answered exactly `replies`
        ([(victim, kind, psn)...], in order per victim), and `cqes`
        ({victim: [status...]}) completed. after(): extra checks returning a
        list of problems. xfail: the reason this case is a known deviation
        (reported, not failed)."""
        expect = dict(expect or {})
        atleast = dict(atleast or {})
        cqes = cqes or {}
        self.chk.cases += 1
        log("--- %s: %d packet(s)%s" % (name, len(frames), _stamp()))
        t_start = time.monotonic()
        gen0 = self.tw.gen()
        self.w.drain()
        ue0 = udp_in_errors(self.a.peer_ns) if udp_errors else 0
        c0 = self.cnt.snap()
        self.w.send(frames)
        want_replies = len(replies)
        got = []
        got_cqes = {v: [] for v in cqes}
        deadline = time.monotonic() + wait
        watch = sorted(set(expect) | set(atleast))
        while True:
            got += self.answers()
            for v in cqes:
                got_cqes[v] += self.vb.cqes_of(v)
            c1 = self.cnt.snap(watch)
            d = {k: c1[k] - c0[k] for k in c1}
            done = (all(d[k] >= n for k, n in expect.items())
                    and all(d[k] >= n for k, n in atleast.items())
                    and len(got) >= want_replies
                    and all(len(got_cqes[v]) >= len(s) for v, s in cqes.items()))
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        # Settle: anything extra (a second NAK, a double count) shows now.
        time.sleep(0.2)
        got += self.answers()
        for v in cqes:
            got_cqes[v] += self.vb.cqes_of(v)
        c1 = self.cnt.snap()
        d = {k: c1[k] - c0[k] for k in c1}
        teardown = self.tw.gen() != gen0
        if not teardown and any(d[k] > expect.get(k, 0) for k in self.teardown):
            # A real-traffic run may have destroyed its QPs during the case
            # and not yet have been counted as done: look again shortly.
            time.sleep(1.5)
            teardown = self.tw.gen() != gen0
        problems = []
        for k in self.exact:
            want = expect.get(k, 0)
            if d[k] == want:
                continue
            if k in self.teardown and teardown and d[k] > want:
                log("    note: %s +%d, want +%d: a real-traffic run ended meanwhile" % (k, d[k], want))
                continue
            problems.append("%s +%d, want +%d" % (k, d[k], want))
        for k, n in expect.items():
            if k not in self.exact and d[k] != n:
                problems.append("%s +%d, want +%d" % (k, d[k], n))
        for k, n in atleast.items():
            if d[k] < n:
                problems.append("%s +%d, want at least +%d" % (k, d[k], n))
        # Answers.
        gotk = [(r.dqpn, r.kind(), r.psn) for r in got]
        wantk = [(v.remote, k, p & 0xFFFFFF) for v, k, p in replies]
        if gotk != wantk:
            problems.append("answers %s, want %s" % (self._fmt(gotk), self._fmt(wantk)))
        for r in got:
            if not r.icrc_ok:
                problems.append("answer %r has a bad ICRC" % r)
        self.replies_total += len(got)
        for v, statuses in cqes.items():
            st = [w.status for w in got_cqes[v]]
            if st[:len(statuses)] != list(statuses) or len(st) > len(statuses) and \
                    any(s != WC_WR_FLUSH_ERR for s in st[len(statuses):]):
                problems.append("%s completions %s, want %s" % (v.name, st, list(statuses)))
        self.last_cqes = got_cqes
        self.last_replies = got
        if after and not problems:
            problems += after() or []
        if udp_errors:
            ue = udp_in_errors(self.a.peer_ns) - ue0
            if ue != udp_errors:
                problems.append("UDP InErrors +%d, want +%d" % (ue, udp_errors))
        moved = ", ".join("%s +%d" % (k, v) for k, v in sorted(d.items())
                          if v and (k in self.exact or k in self.noisy or k in expect))
        log("    counters: %s" % (moved or "none of interest"))
        if got:
            log("    answers: %s" % ", ".join(repr(r) for r in got))
        if xfail and problems:
            self.chk.xfailed.append("%s: %s (%s)" % (name, "; ".join(problems), xfail))
            log("    XFAIL (known deviation: %s): %s" % (xfail, "; ".join(problems)))
            return
        if xfail:
            log("    XPASS: %s no longer shows the known deviation (%s)" % (name, xfail))
        for p in problems:
            self.chk.fail(name, p)
        if not problems:
            log("    ok (%.2f s)" % (time.monotonic() - t_start))

    def answers(self):
        """What the victims sent since the last call, without the requests
        of a victim's own send queue (a requester victim's READ or atomic to
        its phantom peer, and their retransmissions)."""
        out = []
        for f in self.w.drain():
            r = Reply(f)
            if r.opcode in (RC_READ_REQ, RC_CMP_SWAP, RC_FETCH_ADD, RC_SEND_ONLY, RC_WRITE_ONLY):
                self.own_requests += 1
                continue
            out.append(r)
        return out

    def _fmt(self, ks):
        return "[" + ", ".join("%s@%#x->%#x" % (k, p, q) for q, k, p in ks) + "]"

    # --- helpers ---------------------------------------------------------------------

    def f4(self, t, **kw):
        return self.w.frame(t, **kw)

    def f6(self, t, **kw):
        return self.w.frame(t, v6=True, **kw)

    def f(self, v, t, **kw):
        """A frame for victim v over its own IP family."""
        return self.w.frame(t, v6=v.ipv6, **kw)

    def send_only(self, v, payload, psn=None, ackreq=1, **kw):
        op = UD_SEND_ONLY if v.kind == "ud" else v.op(RC_SEND_ONLY)
        hdrs = deth(kw.pop("qkey", v.qkey), 0x11) if v.kind == "ud" else b""
        return tp(op, v.qpn, v.psn if psn is None else psn, hdrs, payload, ackreq=ackreq, **kw)

    def probe(self, v, tag="", n=64, **framekw):
        """A valid SEND_ONLY: ACKed (RC) and received with the right bytes."""
        data = pattern(n, v.psn ^ v.qpn)
        psn = v.psn
        t = self.send_only(v, data)
        rep = [(v, "ack", psn)] if v.kind == "rc" else []
        # Congestion Experienced: the QP's notification point answers with
        # a CNP (PSN 0) before the packet is acted on (DCQCN, RC and UC).
        ecn = framekw.get("tos", framekw.get("tc", 0)) & 3
        if ecn == 3 and v.kind in ("rc", "uc"):
            rep = [(v, "cnp", 0)] + rep

        def check():
            wcs = self.last_cqes[v]
            if not wcs:
                return ["no completion"]
            wc = wcs[0]
            off = 40 if v.kind == "ud" else 0
            if wc.byte_len != n + off:
                return ["byte_len %d, want %d" % (wc.byte_len, n + off)]
            got = v.recv_data(wc, n + off)[off:]
            if got != data:
                return ["received bytes differ from the payload sent"]
            v.posted -= 1
            v.repost()
            return []
        self.case("probe %s%s" % (v.name, tag), [self.f(v, t, **framekw)], replies=rep,
                  cqes={v: [WC_SUCCESS]}, after=check)
        if v.kind != "ud":
            v.psn += 1

    def expect_state(self, v, want):
        def check():
            s = v.state_name()
            return [] if s == want else ["%s is %s, want %s" % (v.name, s, want)]
        return check

    # --- the cases -------------------------------------------------------------------

    def directed(self):
        a, vb = self.a, self.vb
        mr = vb.mr
        rc = Victim(vb, "rc-main", "rc", "rtr", recvs=16)
        rc6 = Victim(vb, "rc-v6", "rc", "rtr", recvs=8, ipv6=True) if a.dst_ip6 else None
        rts = Victim(vb, "rc-rts", "rc", "rts", recvs=4)
        init = Victim(vb, "rc-init", "rc", "init", recvs=2)
        uc = Victim(vb, "uc", "uc", "rtr", recvs=8)
        ud = Victim(vb, "ud", "ud", "rts", recvs=8)
        log("victims on %s: %s" % (a.dev, ", ".join("%s qpn %#x psn %#x" % (v.name, v.qpn, v.psn)
                                                  for v in vb.victims)))
        log("MR va %#x len %#x rkey %#x; write-only MR rkey %#x" % (mr.buf, mr.length, mr.rkey,
                                                                  vb.mr_wo.rkey))

        # Valid packets first: the builders, the ICRC and its masks are right.
        self.probe(rc, " (IPv4)")
        if rc6:
            self.probe(rc6, " (IPv6)")
        self.probe(rc, ": TOS CE, TTL 1, FECN/BECN/resv6 set (ICRC-invariant fields)", tos=3, ttl=1)
        t = self.send_only(rc, pattern(64, 7), fecn=1, becn=1, resv6=0x3F)
        self.case("valid SEND with FECN, BECN, resv6 set", [self.f4(t)], replies=[(rc, "ack", rc.psn)],
                  cqes={rc: [WC_SUCCESS]}, after=lambda: self._consumed(rc))
        rc.psn += 1
        if rc6:
            self.probe(rc6, ": traffic class 0xff, flow label 0xabcde, hop limit 1",
                       tc=0xFF, fl=0xABCDE, hlim=1)
        t = self.send_only(rc, pattern(64, 8))
        self.case("UDP length shorter than the IP payload (trailing bytes ignored)",
                  [self.f4(t, trailer=b"\xde\xad\xbe\xef" * 3)], replies=[(rc, "ack", rc.psn)],
                  cqes={rc: [WC_SUCCESS]}, after=lambda: self._consumed(rc))
        rc.psn += 1
        t = self.send_only(rc, pattern(1000, 9))
        self.case("SEND in two IP fragments", self.w.fragments(t, ident=0x5101, frag_payload=512),
                  replies=[(rc, "ack", rc.psn)], cqes={rc: [WC_SUCCESS]},
                  after=lambda: self._consumed(rc))
        rc.psn += 1
        t = self.send_only(rc, pattern(32, 10), pkey=0x7FFF)
        self.case("P_Key 0x7fff (limited member of the default partition)", [self.f4(t)],
                  replies=[(rc, "ack", rc.psn)], cqes={rc: [WC_SUCCESS]},
                  after=lambda: self._consumed(rc))
        rc.psn += 1
        self.probe(ud, " (UD, right Q_Key)")

        # --- lengths, truncation, ICRC --------------------------------------------------
        full = self.send_only(rc, pattern(16, 11))
        frames = [self.f4(full[:n], icrc_mode="none") for n in (0, 4, 8, 11)]
        frames.append(self.f4(full[:12], icrc_mode="none"))       # BTH, no ICRC
        frames.append(self.f4(full[:8]))                            # 8 + ICRC = 12 < 16
        frames.append(self.f4(full[:11]))
        self.case("truncated: UDP payload shorter than BTH + ICRC", frames,
                  expect={"rcvd_malformed": len(frames)})
        psn = rc.psn
        frames = [
            self.f4(tp(RC_WRITE_ONLY, rc.qpn, psn, reth(mr.buf, mr.rkey, 16)[:8])),
            self.f4(tp(RC_READ_REQ, rc.qpn, psn)),
            self.f4(tp(RC_CMP_SWAP, rc.qpn, psn, atomiceth(mr.buf, mr.rkey, 1, 2)[:20])),
            self.f4(tp(RC_ACK, rts.qpn, rts.sq_psn)),
            self.f4(tp(UD_SEND_ONLY, ud.qpn, 0, deth(ud.qkey, 1)[:4])),
            self.f4(tp(RC_SEND_ONLY_IMM, rc.qpn, psn)),
            self.f4(tp(RC_ATOMIC_ACK, rts.qpn, rts.sq_psn, aeth(AETH_ACK))),
            self.f4(tp(CNP, rc.qpn, 0, b"\0" * 12)),
            self.f4(tp(XRC | RC_SEND_ONLY, rc.qpn, psn, b"\0\0")),
        ]
        self.case("truncated: extension headers cut short (valid ICRC)", frames,
                  expect={"rcvd_malformed": len(frames)})
        t = self.send_only(rc, pattern(64, 12))
        self.case("UDP length beyond the IP payload / below the UDP header (dropped by UDP)",
                  [self.f4(t, udp_len=8 + len(t) + 4 + 8), self.f4(t, udp_len=4)],
                  udp_errors=2)
        self.case("UDP length cuts into the ICRC / payload",
                  [self.f4(t, udp_len=8 + len(t) + 4 - 2), self.f4(t, udp_len=8 + len(t) - 8)],
                  expect={"rcvd_icrc_err": 2})
        frames = [self.f4(t, opts=b"\x01\x01\x01\x00")]
        if a.dst_ip6:
            frames.append(self.w.frame6_ext(t))
        self.case("IPv4 options (IHL 6)%s: no RoCEv2 ICRC is defined, dropped"
                  % (", IPv6 destination options header" if a.dst_ip6 else ""), frames,
                  expect={"rcvd_malformed": len(frames)})
        frames = [self.f4(t, icrc_mode=lambda g: bytes([g[0] ^ 1]) + g[1:]),
                  self.f4(t, icrc_mode=b"\0\0\0\0"),
                  self.f4(t, icrc_mode=lambda g: g[::-1]),
                  # TOS 0x03 on the wire, ICRC computed as if TOS were not masked:
                  self.f4(t, tos=3, icrc_mode=lambda g, t=t: self._icrc_unmasked_tos(t, 3))]
        if a.dst_ip6:
            frames.append(self.f6(t, icrc_mode=lambda g: g[:3] + bytes([g[3] ^ 0x80])))
        self.case("bad ICRC (flipped bit, zero, big-endian, unmasked TOS%s)"
                  % (", IPv6" if a.dst_ip6 else ""), frames, expect={"rcvd_icrc_err": len(frames)})
        frames = [
            self.f4(tp(RC_ACK, rts.qpn, rts.sq_psn - 1, aeth(AETH_ACK), pad=3)),
            self.f4(tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 8), pad=2)),
            self.f4(tp(RC_SEND_ONLY, rc.qpn, rc.psn, pad=3)),
            self.f4(tp(CNP, rc.qpn, 0, b"\0" * 16, pad=1)),
            self.f4(tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 0), pad=3)),
        ]
        self.case("pad count larger than what follows the headers (underflow)", frames,
                  expect={"rcvd_malformed": len(frames)})
        frames = [self.f4(tp(RC_SEND_ONLY, rc.qpn, rc.psn, payload=b"12345", padbytes=b"")),
                  self.f4(tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 7), b"1234567",
                             pad=0, padbytes=b""))]
        self.case("length not a whole number of 4-byte words", frames,
                  expect={"rcvd_malformed": len(frames)})
        frames = [self.f4(tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 8), b"abcd")),
                  self.f4(tp(RC_ACK, rts.qpn, rts.sq_psn - 1, aeth(AETH_ACK), b"abcdefgh")),
                  self.f4(tp(RC_CMP_SWAP, rc.qpn, rc.psn, atomiceth(mr.buf, mr.rkey, 1, 2), b"abcd")),
                  self.f4(tp(CNP, rc.qpn, 0, b"\0" * 16, b"abcd"))]
        self.case("payload on header-only opcodes (READ request, ACK, atomic, CNP)", frames,
                  expect={"rcvd_malformed": len(frames)})
        frames = [self.f4(tp(RC_SEND_FIRST, rc.qpn, rc.psn, payload=pattern(100, 1))),
                  self.f4(tp(RC_SEND_MIDDLE, rc.qpn, rc.psn)),
                  self.f4(tp(RC_SEND_LAST, rc.qpn, rc.psn)),
                  self.f4(tp(RC_WRITE_FIRST, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 4096), pattern(1024, 1),
                             pad=1)),
                  self.f4(tp(RC_ATOMIC_WRITE, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 8), pattern(16, 2)))]
        frames += self.w.fragments(self.send_only(rc, pattern(4100, 3)), ident=0x5102)
        self.case("payload length impossible for the opcode (FIRST not a PMTU, empty MIDDLE/LAST,"
                  " padded FIRST, 16-byte ATOMIC_WRITE, 4100-byte SEND in fragments)", frames,
                  expect={"rcvd_malformed": 6})
        rsv = [0x15, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1E, 0x1F, 0x2C, 0x3F, 0x40, 0x4C, 0x5F, 0x60,
               0x66, 0x7F, 0x80, 0x82, 0x9F, 0xB5, 0xBE, 0xC0, 0xE0, 0xFF]
        assert all(op in RESERVED_OPCODES for op in rsv)
        frames = [self.f4(tp(op, rc.qpn, rc.psn, b"\0" * 28, ackreq=1)) for op in rsv]
        self.case("reserved and unimplemented opcodes (RD, IB CNP 0x80, FLUSH, vendor)", frames,
                  expect={"rcvd_malformed": len(frames)})
        frames = [self.f4(self.send_only(rc, b"abcd", tver=tv)) for tv in (1, 8, 15)]
        self.case("BTH transport version != 0", frames, expect={"rcvd_malformed": 3})

        # --- QP type, state, keys, QPN ----------------------------------------------------
        frames = [self.f4(tp(UC | RC_SEND_ONLY, rc.qpn, rc.psn, payload=b"abcd")),
                  self.f4(tp(UD_SEND_ONLY, rc.qpn, rc.psn, deth(ud.qkey, 5), b"abcd")),
                  self.f4(tp(XRC | RC_SEND_ONLY, rc.qpn, rc.psn, b"\0\0\0\1", b"abcd")),
                  self.f4(tp(RC_SEND_ONLY, uc.qpn, uc.psn, payload=b"abcd")),
                  self.f4(tp(RC_READ_REQ, uc.qpn, uc.psn, reth(mr.buf, mr.rkey, 8))),
                  self.f4(tp(RC_ATOMIC_WRITE, uc.qpn, uc.psn, reth(mr.buf, mr.rkey, 8), b"\0" * 8)),
                  self.f4(tp(RC_SEND_ONLY, ud.qpn, 0, payload=b"abcd")),
                  self.f4(tp(RC_ACK, ud.qpn, 0, aeth(AETH_ACK))),
                  self.f4(tp(UC | RC_SEND_ONLY, MCAST_QPN, 0, payload=b"abcd")),
                  self.f4(tp(XRC | RC_ACK, rts.qpn, rts.sq_psn, aeth(AETH_ACK)))]
        self.case("opcode not valid for the QP type (UC/UD/XRC on RC, RC on UC/UD, non-UD on the"
                  " multicast QPN, XRC ACK on RC)", frames, expect={"rcvd_bad_opcode": len(frames)})
        self.case("response (ACK) to a QP in RTR", [self.f4(tp(RC_ACK, rc.qpn, rc.psn, aeth(AETH_ACK)))],
                  expect={"rcvd_bad_qp_state": 1})
        self.case("request to a QP in INIT", [self.f4(self.send_only(init, b"abcd"))],
                  expect={"rcvd_bad_qp_state": 1})
        frames = [self.f4(self.send_only(rc, b"abcd", pkey=pk)) for pk in (0x0000, 0x1234, 0x7FFE, 0x8001)]
        if a.dst_ip6 and rc6:
            frames.append(self.f6(self.send_only(rc6, b"abcd", pkey=0xFFFE)))
        self.case("wrong P_Key", frames, expect={"rcvd_bad_pkey": len(frames)})
        frames = [self.f4(self.send_only(ud, b"abcd", qkey=qk)) for qk in (0, ud.qkey ^ 1, 0xFFFFFFFF)]
        frames.append(self.f4(tp(UD_SEND_ONLY, 1, 0, deth(ud.qkey, 1), b"\0" * 256)))
        self.case("wrong Q_Key (UD victim, and the GSI QP 1)", frames, expect={"rcvd_bad_qkey": 4})
        qpns = [0, 2, 15, 0x7FFFFF, 0xABCDEF, 0xFFFFFE]
        frames = [self.f4(tp(RC_SEND_ONLY, q, 0, payload=b"abcd", ackreq=1)) for q in qpns]
        frames.append(self.f4(tp(RC_ACK, 0xABCDEF, 0, aeth(AETH_ACK))))
        frames.append(self.f4(tp(UD_SEND_ONLY, MCAST_QPN, 0, deth(ud.qkey, 1), b"abcd")))
        self.case("unknown destination QPN (and a UD SEND to the multicast QPN of a unicast"
                  " address: no group)", frames, expect={"rcvd_no_qp": len(frames)})
        t = self.send_only(ud, pattern(2000, 13))
        # IBTA class D (as rdma_rxe): dropped and counted, the receive WQE
        # kept for the next datagram, the QP stays up.
        self.case("UD SEND longer than the receive buffer: dropped, WQE kept, QP stays RTS",
                  self.w.fragments(t, ident=0x5103), expect={"rcvd_ud_len_drop": 1}, cqes={ud: []},
                  after=self.expect_state(ud, "RTS"), wait=2)
        ud.bring_up()
        t = tp(UD_SEND_ONLY, 1, 0, deth(GSI_QKEY, 1), pattern(1024, 14))
        self.case("UD SEND with the GSI Q_Key, longer than any MAD, to QP 1: dropped, QP 1 stays up",
                  [self.f4(t)], expect={"rcvd_ud_len_drop": 1}, after=self.gsi_alive)
        cnps = [self.scapy_cnp(q) for q in (0xABCDEF, 0x123456, 3, rc.qpn)]
        self.case("CNPs (scapy's, with scapy's ICRC) for unknown QPs and one live QP", cnps,
                  expect={"rcvd_cnp": len(cnps)})
        self.probe(rc, " (still alive)")

        # --- PSN window --------------------------------------------------------------
        e = rc.psn
        frames = [self.f4(self.send_only(rc, b"abcd", psn=e + d)) for d in (1, 1000, 0x7FFFFF)]
        self.case("PSN ahead of the expected one (out of sequence): one sequence NAK", frames,
                  atleast={"out_of_seq_request": 3, "seq_nak_sent": 1},
                  replies=[(rc, "nak-seq", e)])
        frames = [self.f4(self.send_only(rc, b"abcd", psn=e - d)) for d in (1, 2, 0x800000)]
        frames.append(self.f4(tp(RC_READ_REQ, rc.qpn, e - 3, reth(mr.buf, mr.rkey, 64))))
        self.case("PSN behind (duplicates): re-ACKed, unknown old READ ignored", frames,
                  atleast={"duplicate_request": 4},
                  replies=[(rc, "ack", e - 1)] * 3)
        self.probe(rc, " (in sequence again)")
        # A duplicate right after a READ: the newest PSN is the READ's, and
        # rdma_rxe's requester completes a READ from an ACK that names its
        # PSN, without the data. The duplicate is re-ACKed at its own PSN.
        e = rc.psn
        self.case("READ in sequence", [self.f4(tp(RC_READ_REQ, rc.qpn, e, reth(mr.buf, mr.rkey, 64)))],
                  replies=[(rc, "read-only", e)])
        rc.psn += 1
        self.case("duplicate SEND after a READ: re-ACKed at its own PSN, not the READ's",
                  [self.f4(self.send_only(rc, b"abcd", psn=e - 1))], atleast={"duplicate_request": 1},
                  replies=[(rc, "ack", e - 1)])
        self.probe(rc, " (after the READ)")

        # --- remote access violations: each NAKed, each kills its QP -----------------
        fatal = [
            ("WRITE with an unknown R_Key", "nak-acc",
             lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey ^ 0x5A5A00, 16), b"x" * 16,
                          ackreq=1)),
            ("WRITE past the end of the MR", "nak-acc",
             lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf + mr.length - 8, mr.rkey, 16),
                          b"x" * 16, ackreq=1)),
            ("WRITE whose VA + length wraps the address space", "nak-acc",
             lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(2**64 - 8, mr.rkey, 16), b"x" * 16,
                          ackreq=1)),
            ("READ whose VA + length wraps the address space", "nak-acc",
             lambda v: tp(RC_READ_REQ, v.qpn, v.psn, reth(2**64 - 0x100, mr.rkey, 0x1000))),
            ("READ longer than 2^31 bytes", "nak-inv",
             lambda v: tp(RC_READ_REQ, v.qpn, v.psn, reth(mr.buf, mr.rkey, 0x80000001))),
            ("READ from an MR without remote read rights", "nak-acc",
             lambda v: tp(RC_READ_REQ, v.qpn, v.psn, reth(vb.mr_wo.buf, vb.mr_wo.rkey, 64))),
            ("FETCH_ADD with an unknown R_Key", "nak-acc",
             lambda v: tp(RC_FETCH_ADD, v.qpn, v.psn, atomiceth(mr.buf, mr.rkey ^ 0x100, 1))),
            ("CMP_SWAP on a misaligned address", "nak-inv",
             lambda v: tp(RC_CMP_SWAP, v.qpn, v.psn, atomiceth(mr.buf + 4, mr.rkey, 1, 0))),
            ("FETCH_ADD just past the end of the MR", "nak-acc",
             lambda v: tp(RC_FETCH_ADD, v.qpn, v.psn, atomiceth(mr.buf + mr.length, mr.rkey, 1))),
            ("ATOMIC_WRITE on a misaligned address", "nak-inv",
             lambda v: tp(RC_ATOMIC_WRITE, v.qpn, v.psn, reth(mr.buf + 2, mr.rkey, 8), b"\0" * 8,
                          ackreq=1)),
            ("WRITE_ONLY whose payload differs from its DMA length", "nak-inv",
             lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey, 64), b"y" * 32, ackreq=1)),
            ("WRITE_FIRST with a DMA length over 2^31", "nak-inv",
             lambda v: tp(RC_WRITE_FIRST, v.qpn, v.psn, reth(mr.buf, mr.rkey, 0x80000001), b"z" * 1024)),
            ("SEND_MIDDLE without a SEND_FIRST", "nak-inv",
             lambda v: tp(RC_SEND_MIDDLE, v.qpn, v.psn, payload=b"m" * 1024)),
            ("SEND_ONLY_INV naming an R_Key that is not a fast-reg MR", "nak-inv",
             lambda v: tp(RC_SEND_ONLY_INV, v.qpn, v.psn, struct.pack("!I", mr.rkey), b"abcd",
                          ackreq=1)),
        ]
        nak_counter = {"nak-acc": "rem_access_nak_sent", "nak-inv": "rem_inv_req_nak_sent"}
        dead = []
        for title, kind, build in fatal:
            v = Victim(vb, "rc-fatal-%d" % len(dead), "rc", "rtr", recvs=2)
            want_cqe = {}
            if "SEND" in title:
                want_cqe = {v: [WC_REM_INV_REQ_ERR if "INV" in title else WC_WR_FLUSH_ERR]}
            self.case("%s -> %s, QP to error" % (title, kind), [self.f4(build(v))],
                      expect={nak_counter[kind]: 1}, replies=[(v, kind, v.psn)], cqes=want_cqe,
                      after=self.expect_state(v, "ERR"))
            dead.append(v)
        v = Victim(vb, "rc-small-rbuf", "rc", "rtr", recvs=2, recv_len=256)
        self.case("SEND longer than the receive buffer -> nak-inv, local length error",
                  [self.f4(self.send_only(v, pattern(512, 4)))], expect={"rem_inv_req_nak_sent": 1},
                  replies=[(v, "nak-inv", v.psn)], cqes={v: [WC_LOC_LEN_ERR]},
                  after=self.expect_state(v, "ERR"))
        dead.append(v)
        v = Victim(vb, "rc-no-access", "rc", "rtr", recvs=2, access=vb.e.IBV_ACCESS_LOCAL_WRITE)
        self.case("WRITE to a QP without remote write access -> nak-acc",
                  [self.f4(tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey, 8), b"w" * 8))],
                  expect={"rem_access_nak_sent": 1}, replies=[(v, "nak-acc", v.psn)],
                  after=self.expect_state(v, "ERR"))
        dead.append(v)
        v = Victim(vb, "rc-bad-lkey", "rc", "rtr", recvs=2, bad_lkey=True)
        self.case("SEND into a receive WQE whose L_Key is invalid -> nak-op (remote operational"
                  " error), local protection error",
                  [self.f4(self.send_only(v, b"abcd"))], expect={"rem_op_nak_sent": 1},
                  replies=[(v, "nak-op", v.psn)], cqes={v: [WC_LOC_PROT_ERR]},
                  after=self.expect_state(v, "ERR"))
        dead.append(v)
        self.case("requests to QPs in the error state",
                  [self.f4(self.send_only(v, b"abcd")) for v in dead],
                  expect={"rcvd_bad_qp_state": len(dead)})
        v = Victim(vb, "rc-no-recv", "rc", "rtr", recvs=0)
        self.case("SEND with no receive posted -> RNR NAK, QP stays up",
                  [self.f4(self.send_only(v, b"abcd"))], atleast={"rnr_nak_sent": 1},
                  replies=[(v, "rnr", v.psn)], after=self.expect_state(v, "RTR"))
        v.nrecv = 2
        v.repost()
        self.probe(v, " (after the RNR NAK)")
        # PMTU 256 QP: IBTA C9-92 (payload <= PMTU for ONLY/LAST packets).
        v = Victim(vb, "rc-pmtu256", "rc", "rtr", recvs=2, mtu=256)
        self.case("SEND_ONLY longer than the QP's path MTU (512 > 256) -> nak-inv",
                  [self.f4(self.send_only(v, pattern(512, 5)))], expect={"rem_inv_req_nak_sent": 1},
                  replies=[(v, "nak-inv", v.psn)], cqes={v: [WC_WR_FLUSH_ERR]},
                  after=self.expect_state(v, "ERR"), wait=2)

        # --- valid RDMA against the victim, checked in memory -------------------------
        data = pattern(256, 6)
        off = 0x1000
        t = tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf + off, mr.rkey, len(data)), data, ackreq=1)

        def wrote():
            return [] if mr.read(len(data), off) == data else ["MR contents differ from the WRITE"]
        self.case("valid WRITE_ONLY lands in the MR", [self.f4(t)], replies=[(rc, "ack", rc.psn)],
                  after=wrote)
        rc.psn += 1
        t = tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf + off, mr.rkey, 2048 + 256))

        def read_back():
            pl = b"".join(r.payload for r in self.last_replies)
            want = mr.read(2048 + 256, off)
            return [] if pl == want else ["READ response payload differs from the MR"]
        self.case("valid READ (3 responses at PMTU 1024)", [self.f4(t)],
                  replies=[(rc, "read-first", rc.psn), (rc, "read-middle", rc.psn + 1),
                           (rc, "read-last", rc.psn + 2)], after=read_back)
        rc.psn += 3
        mr.write(struct.pack("<Q", 1000), 8, 0x2000)
        t = tp(RC_FETCH_ADD, rc.qpn, rc.psn, atomiceth(mr.buf + 0x2000, mr.rkey, 5))

        def added():
            r = self.last_replies[0]
            probs = []
            if r.orig != 1000:
                probs.append("atomic ack original value %r, want 1000" % r.orig)
            if struct.unpack("<Q", mr.read(8, 0x2000))[0] != 1005:
                probs.append("memory after FETCH_ADD is not 1005")
            return probs
        self.case("valid FETCH_ADD", [self.f4(t)], replies=[(rc, "atomic-ack", rc.psn)], after=added)
        rc.psn += 1
        self.case("the same FETCH_ADD again (duplicate): answered from the cache, not re-executed",
                  [self.f4(t)], atleast={"duplicate_request": 1},
                  replies=[(rc, "atomic-ack", rc.psn - 1)], after=added)

        # --- the completer: responses nobody asked for --------------------------------
        s = rts.sq_psn
        frames = [self.f4(tp(RC_READ_RESP_ONLY, rts.qpn, s, aeth(AETH_ACK), pattern(64, 1))),
                  self.f4(tp(RC_READ_RESP_FIRST, rts.qpn, s, aeth(AETH_ACK), pattern(1024, 1))),
                  self.f4(tp(RC_READ_RESP_MIDDLE, rts.qpn, s + 1, payload=pattern(1024, 2))),
                  self.f4(tp(RC_READ_RESP_LAST, rts.qpn, s + 2, aeth(AETH_ACK), pattern(8, 3)))]
        self.case("READ responses nobody asked for", frames, atleast={"completer_drop": 4},
                  after=self.expect_state(rts, "RTS"))
        frames = [self.f4(tp(RC_ACK, rts.qpn, s + 10, aeth(AETH_ACK))),
                  self.f4(tp(RC_ACK, rts.qpn, s + 0x400000, aeth(AETH_ACK))),
                  self.f4(tp(RC_ATOMIC_ACK, rts.qpn, s, aeth(AETH_ACK) + struct.pack("!Q", 7))),
                  self.f4(tp(RC_ACK, rts.qpn, s - 1, aeth(0x40)))]
        self.case("ACKs for unsent PSNs, an unrequested atomic ACK, a reserved AETH syndrome", frames,
                  atleast={"completer_drop": 4}, after=self.expect_state(rts, "RTS"))
        frames = [self.f4(tp(RC_ACK, rts.qpn, s + 10, aeth(NAK_ACC))),
                  self.f4(tp(RC_ACK, rts.qpn, s + 0x100, aeth(NAK_SEQ)))]
        self.case("NAKs for PSNs never sent: ignored, counted, the QP stays RTS", frames,
                  atleast={"completer_drop": 2}, after=self.expect_state(rts, "RTS"))

        ghost = Victim(vb, "rc-rts-ghost", "rc", "rts", recvs=2)
        self.case("NAK (remote access) for the next, unsent PSN of an idle QP: ignored",
                  [self.f4(tp(RC_ACK, ghost.qpn, ghost.sq_psn, aeth(NAK_ACC)))],
                  atleast={"completer_drop": 1}, after=self.expect_state(ghost, "RTS"), wait=2)

        # --- the completer with a READ and an atomic outstanding ----------------------
        req = Victim(vb, "rc-req", "rc", "rts", recvs=0, timeout=20, retry_cnt=7)
        req.post_read(2048, 0x10000, 0x1234)
        req.post_fetch_add(0x20000, 0x1234, 1, off=4096)
        r = req.sq_psn
        time.sleep(0.1)
        self.w.drain()      # the READ and atomic requests themselves (to the phantom)
        frames = [self.f4(tp(RC_READ_RESP_FIRST, req.qpn, r + 1, aeth(AETH_ACK), pattern(1024, 1))),
                  self.f4(tp(RC_READ_RESP_FIRST, req.qpn, r, aeth(AETH_ACK), pattern(512, 1))),
                  self.f4(tp(RC_READ_RESP_LAST, req.qpn, r, aeth(AETH_ACK), pattern(8, 1))),
                  self.f4(tp(RC_READ_RESP_ONLY, req.qpn, r, aeth(0x62), pattern(8, 1))),
                  self.f4(tp(RC_ATOMIC_ACK, req.qpn, r, aeth(AETH_ACK) + struct.pack("!Q", 1)))]
        self.case("READ responses with the wrong PSN, length or position, a NAK-syndrome READ"
                  " response, an atomic ACK for a READ", frames, atleast={"completer_drop": 5},
                  after=self.expect_state(req, "RTS"))
        resp = pattern(2048, 77)
        frames = [self.f4(tp(RC_READ_RESP_FIRST, req.qpn, r, aeth(AETH_ACK), resp[:1024])),
                  self.f4(tp(RC_READ_RESP_LAST, req.qpn, r + 1, aeth(AETH_ACK), resp[1024:])),
                  self.f4(tp(RC_ATOMIC_ACK, req.qpn, r + 3, aeth(AETH_ACK) + struct.pack("!Q", 9))),
                  self.f4(tp(RC_ATOMIC_ACK, req.qpn, r + 2, aeth(AETH_ACK) + struct.pack("!Q", 41)))]

        def completed():
            probs = []
            if vb.lmr.read(2048, 0) != resp:
                probs.append("READ data differs from the responses")
            if struct.unpack("<Q", vb.lmr.read(8, 4096))[0] != 41:
                probs.append("FETCH_ADD result is not the original value 41")
            return probs
        self.case("the right READ responses and atomic ACK complete the WRs (a wrong-PSN atomic ACK"
                  " in between is dropped)", frames, atleast={"completer_drop": 1},
                  cqes={req: [WC_SUCCESS, WC_SUCCESS]}, after=completed)
        self.case("ACK for a PSN the requester never sent, after completion",
                  [self.f4(tp(RC_ACK, req.qpn, r + 5, aeth(AETH_ACK)))],
                  atleast={"completer_drop": 1}, after=self.expect_state(req, "RTS"))

        # --- UC: no NAKs, the message is dropped, the QP stays up -------------------------
        self.probe(uc, " (UC)")
        frames = [self.f4(tp(UC | RC_SEND_MIDDLE, uc.qpn, uc.psn, payload=b"m" * 1024)),
                  self.f4(tp(UC | RC_WRITE_ONLY, uc.qpn, uc.psn + 1, reth(mr.buf, mr.rkey ^ 0x77, 8),
                             b"w" * 8))]
        self.case("UC: SEND_MIDDLE without FIRST, WRITE with a bad R_Key (dropped, no answer)", frames,
                  atleast={"out_of_seq_request": 2}, after=self.expect_state(uc, "RTR"))
        uc.psn += 2
        self.probe(uc, " (UC, still alive)")
        self.probe(rc, " (end)")
        if rc6:
            self.probe(rc6, " (end)")

    def gsi_alive(self):
        out = subprocess.run(["rdma", "res", "show", "qp", "lqpn", "1", "-j"], capture_output=True,
                             text=True).stdout
        try:
            qps = [q for q in json.loads(out) if q.get("ifname", "").split("/")[0] == self.a.dev]
        except ValueError:
            return ["cannot parse rdma res show qp: %r" % out[:200]]
        if not qps:
            return ["rdma res show qp shows no QP 1 on %s" % self.a.dev]
        st = qps[0].get("state")
        return [] if st == "RTS" else ["QP 1 of %s is %s" % (self.a.dev, st)]

    def scapy_cnp(self, dqpn):
        """A whole CNP frame built by scapy.contrib.roce, ICRC included."""
        from scapy.contrib.roce import cnp
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Ether
        a = self.a
        p = (Ether(src=a.src_mac, dst=a.dst_mac) / IP(src=a.src_ip, dst=a.dst_ip, flags="DF", ttl=64)
             / UDP(sport=0xC000, dport=ROCE_PORT, chksum=0) / cnp(dqpn))
        return bytes(p)

    def _consumed(self, v):
        wcs = self.last_cqes[v]
        v.posted -= len(wcs)
        v.repost()
        return []

    def _icrc_unmasked_tos(self, t, tos):
        # The ICRC of the same packet with TOS not masked: what a broken
        # implementation (or a rewritten TOS without masking) would give.
        ip = self.w.ip4(8 + len(t) + 4, tos=tos)
        udp = struct.pack("!HHHH", 0xC000, ROCE_PORT, 8 + len(t) + 4, 0)
        m = bytearray(ip + udp + t)
        m[8] = m[10] = m[11] = 0xFF
        m[26] = m[27] = m[32] = 0xFF
        return struct.pack("<I", zlib.crc32(m, _FF8))

    def close(self):
        """Destroy every verbs object now, in order (QPs, MRs, CQ, PD, then
        the contexts), rather than in the interpreter's teardown."""
        self.vb.ctx.close()
        self.vb.pctx.close()

    def finish(self, what):
        c = self.chk
        log("%s: %d cases, %d packets sent, %d answers checked, %d failed, %d known deviations"
            % (what, c.cases, self.w.sent, self.replies_total, len(c.failed), len(c.xfailed)))
        for x in c.xfailed:
            log("  XFAIL %s" % x)
        for f in c.failed:
            log("  FAIL %s" % f)
        self.chk = Check()
        self.w.sent = self.replies_total = 0
        return not c.failed

    # --- flood ---------------------------------------------------------------------

    def flood(self):
        """Valid-looking SENDs to an unknown QPN and CNPs for unknown QPs, as
        fast as one process can send: every one dropped and counted (what
        the veth itself dropped aside), and the victims still answer."""
        a, vb = self.a, self.vb
        rc = Victim(vb, "rc-flood", "rc", "rtr", recvs=8)
        self.probe(rc, " (before the flood)")
        n, ncnp = a.flood, a.cnps
        qpns = [0xABCDEF, 0x800000, 0xFEDCBA, 0x7FFFFF]
        sends = [self.f4(tp(RC_SEND_ONLY, qpns[i % 4], i, payload=pattern(256, i), ackreq=1))
                 for i in range(64)]
        cnps = [self.f4(tp(CNP, 0x900000 + i, 0, b"\0" * 16, becn=1)) for i in range(64)]
        drop0 = self._tx_dropped()
        c0 = self.cnt.snap()
        t0 = time.monotonic()
        send = self.w.sock.send
        for i in range(n):
            send(sends[i & 63])
        for i in range(ncnp):
            send(cnps[i & 63])
        dt = time.monotonic() - t0
        self.w.sent += n + ncnp
        want = {"rcvd_no_qp": n, "rcvd_cnp": ncnp}
        dropped = self._tx_dropped() - drop0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c1 = self.cnt.snap()
            if c1["rcvd_no_qp"] + c1["rcvd_cnp"] - c0["rcvd_no_qp"] - c0["rcvd_cnp"] >= n + ncnp - dropped:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        c1 = self.cnt.snap()
        dropped = self._tx_dropped() - drop0
        d = {k: c1[k] - c0[k] for k in c1}
        log("flood: %d SENDs to unknown QPNs + %d CNPs in %.1f s (%.0f packets/s); veth dropped %d"
            % (n, ncnp, dt, (n + ncnp) / dt, dropped))
        log("flood: rcvd_no_qp +%d, rcvd_cnp +%d, rcvd_pkts +%d" % (d["rcvd_no_qp"], d["rcvd_cnp"],
                                                                  d["rcvd_pkts"]))
        got = d["rcvd_no_qp"] + d["rcvd_cnp"]
        self.chk.cases += 1
        if got != n + ncnp - dropped or d["rcvd_no_qp"] > n or d["rcvd_cnp"] > ncnp:
            self.chk.fail("flood", "rcvd_no_qp +%d and rcvd_cnp +%d: want %d + %d in all, less the"
                          " %d the veth dropped" % (d["rcvd_no_qp"], d["rcvd_cnp"], n, ncnp, dropped))
        for k in self.exact:
            if k not in want and d[k] and not (k in self.teardown):
                self.chk.fail("flood", "%s moved by %d" % (k, d[k]))
        t1 = time.monotonic()
        self.probe(rc, " (right after the flood)")
        log("flood: the victim answered %.2f s after the flood" % (time.monotonic() - t1))

    def _tx_dropped(self):
        """What the sending veth end dropped (it counts the peer's backlog
        drops too), and the target namespace's softnet drops."""
        cmd = ["ip", "-s", "-j", "link", "show", "dev", self.a.ifname]
        if self.a.ns:
            cmd[1:1] = ["-n", self.a.ns]
        st = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        st = st[0]["stats64"]
        return st["tx"]["dropped"] + st["rx"]["dropped"]

    # --- mutation ------------------------------------------------------------------------

    def mutate(self):
        """--count mutated packets in cycles of --cycle; victims reset per cycle."""
        a, vb = self.a, self.vb
        seed = a.seed
        rng = random.Random(seed)
        random.seed(seed ^ 0x5EED)
        log("mutate: seed %d (SROCE_SEED=%d replays the same choices; QPNs, keys and addresses"
            " come from the device), %d packets, cycles of %d" % (seed, seed, a.count, a.cycle))
        big = 4096
        vs = [Victim(vb, "m-rc", "rc", "rtr", recvs=32, recv_len=big),
              Victim(vb, "m-rc-rts", "rc", "rts", recvs=32, recv_len=big),
              Victim(vb, "m-req", "rc", "rts", recvs=8, timeout=12, retry_cnt=3),
              Victim(vb, "m-uc", "uc", "rtr", recvs=32, recv_len=big),
              Victim(vb, "m-ud", "ud", "rts", recvs=32, recv_len=big),
              Victim(vb, "m-rc-small", "rc", "rtr", recvs=8, recv_len=256, mtu=256)]
        if a.dst_ip6:
            vs.append(Victim(vb, "m-rc6", "rc", "rtr", recvs=32, recv_len=big, ipv6=True))
        owned = [v.qpn for v in vs]
        owned_set = set(owned)
        # Every mutated packet whose DestQP is not a victim's is aimed at a
        # QPN no real-traffic QP can have (>= 0x10000 is never allocated here:
        # QPNs start at 16 and the tests create a few thousand at most).
        M = Mutator(rng, vb, vs)
        # The victims answer thousands of packets: nobody listens meanwhile.
        self.w.sniffer.close()
        c0 = self.cnt.snap()
        drop0 = self._tx_dropped()
        t0 = time.monotonic()
        sent = 0
        stats = {}
        send = self.w.sock.send
        frame = self.w.frame
        fast4 = self.w.fast4
        icrc_modes = M.icrc_modes
        nmodes = len(icrc_modes)
        nowned = len(owned)
        rnd = rng.random
        mut = M.mutate
        while sent < a.count:
            n = min(a.cycle, a.count - sent)
            for v in vs:
                v.bring_up()
            req = vs[2]
            req.post_read(4096, vs[0].mr.buf, vs[0].mr.rkey, wr_id=1)
            req.post_fetch_add(vs[0].mr.buf + 64, vs[0].mr.rkey, 1, off=8192, wr_id=2)
            tmpl = M.templates()
            nt = len(tmpl)
            for _ in range(n):
                v6, base = tmpl[int(rnd() * nt)]
                t = bytearray(base)
                k = rnd()
                mut(t)
                if k >= 0.7:
                    mut(t)
                    if k >= 0.93:
                        mut(t)
                        mut(t)
                if len(t) >= 8:
                    q = (t[5] << 16) | (t[6] << 8) | t[7]
                    if q < 0x10000 and q not in owned_set:
                        q = owned[int(rnd() * nowned)]
                        t[5], t[6], t[7] = q >> 16, (q >> 8) & 0xFF, q & 0xFF
                r = rnd()
                mode = icrc_modes[int(rnd() * nmodes)]
                if r >= 0.06 and mode == "good" and not v6 and len(t) < 1400:
                    send(fast4(bytes(t)))
                    continue
                kw = {}
                if r < 0.06:
                    kw = M.ip_udp_lie(len(t))
                    name = "ip/udp:" + kw.pop("_name")
                    stats[name] = stats.get(name, 0) + 1
                if v6 or r > 0.97:
                    if a.dst_ip6:
                        kw["v6"] = True
                        kw.pop("opts", None)
                        kw.pop("tos", None)
                        kw.pop("ttl", None)
                f = frame(bytes(t), icrc_mode=mode, **kw)
                if len(f) <= 1514:
                    send(f)
                elif kw.get("v6"):
                    # Too big for the veth: cut it (no IPv6 fragments here).
                    send(frame(bytes(t[:1400]), icrc_mode=mode, **kw))
                    stats["v6-cut"] = stats.get("v6-cut", 0) + 1
                else:
                    # Too big for the veth: IPv4 fragments (the ICRC covers
                    # the reassembled header, whose fragment field is 0).
                    f = frame(bytes(t), icrc_mode=mode, frag=0, ident=rng.getrandbits(16), **kw)
                    for x in self.w.split4(f):
                        send(x)
                    stats["ip-fragmented"] = stats.get("ip-fragmented", 0) + 1
            sent += n
            vb.poll()
            vb.pending = []
            el = time.monotonic() - t0
            log("mutate: %d/%d sent, %.0f packets/s" % (sent, a.count, sent / el))
        dt = time.monotonic() - t0
        self.w.sent += sent
        time.sleep(1)
        c1 = self.cnt.snap()
        d = {k: c1[k] - c0[k] for k in c1}
        log("mutate: %d packets in %.1f s (%.0f/s), veth dropped %d; seed %d"
            % (sent, dt, sent / dt, self._tx_dropped() - drop0, seed))
        stats.update(M.stats)
        log("mutate: mutations: %s" % ", ".join("%s %d" % kv for kv in sorted(stats.items())))
        log("mutate: counter deltas: %s" % ", ".join("%s +%d" % (k, v) for k, v in sorted(d.items()) if v))
        # The device must still be healthy: fresh victims and probes.
        self.w.open_sniffer()
        for v in vs:
            v.bring_up()
        for v in (vs[0], vs[3], vs[4]) + ((vs[-1],) if a.dst_ip6 else ()):
            self.probe(v, " (after the mutation run)")
        t = tp(RC_READ_REQ, vs[0].qpn, vs[0].psn, reth(vs[0].mr.buf, vs[0].mr.rkey, 1024))
        self.case("READ after the mutation run", [self.f4(t)], replies=[(vs[0], "read-only", vs[0].psn)])


class Mutator:
    """Valid packets for the victims, and the mutations applied to them."""

    INTERESTING8 = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x3F, 0x40, 0x20, 0x10)
    INTERESTING32 = (0, 1, 3, 4, 7, 8, 0xFF, 0x100, 0x3FF, 0x400, 0x401, 0xFFF, 0x1000, 0x7FFFFFFF,
                     0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFC, 0x10000, 0xFFFF)

    def __init__(self, rng, vb, vs):
        self.rng, self.vb, self.vs = rng, vb, vs
        self.ops = [(self.flip, 14), (self.setbyte, 8), (self.truncate, 6), (self.extend, 5),
                    (self.opcode, 10), (self.bth1, 5), (self.pkey, 3), (self.dqpn, 6), (self.psn, 10),
                    (self.ackbyte, 3), (self.field32, 14), (self.va, 6), (self.splice, 4),
                    (self.paylen, 6), (self.syndrome, 4)]
        self.table = [f for f, w in self.ops for _ in range(w)]
        self.ntable = len(self.table)
        self.counts = [0] * self.ntable
        self.rnd = rng.random
        self.icrc_modes = ["good"] * 16 + ["none", self._icrc_flip, self._icrc_rand]
        self._tmpl = []

    @property
    def stats(self):
        out = {}
        for f, n in zip(self.table, self.counts):
            out[f.__name__] = out.get(f.__name__, 0) + n
        return out

    def _icrc_flip(self, g):
        i = self.rng.randrange(32)
        b = bytearray(g)
        b[i >> 3] ^= 1 << (i & 7)
        return bytes(b)

    def _icrc_rand(self, g):
        return bytes(self.rng.getrandbits(8) for _ in range(4))

    def templates(self):
        """Valid packets for the victims' current PSNs (call after bring_up)."""
        vs, mr, r = self.vs, self.vb.mr, self.rng
        rc, rts, req, uc, ud, small = vs[:6]
        rc6 = vs[6] if len(vs) > 6 else None
        out = []

        def add(t, v6=False, w=1):
            out.extend([(v6, t)] * w)
        for v in [rc, rts, small] + ([rc6] if rc6 else []):
            p, q, mtu = v.psn, v.qpn, v.mtu
            v6 = v.ipv6
            va = mr.buf + r.randrange(0, mr.length - 8192) & ~7
            add(tp(RC_SEND_ONLY, q, p, payload=pattern(64, p), ackreq=1), v6, 3)
            add(tp(RC_SEND_FIRST, q, p, payload=pattern(mtu, 1)), v6)
            add(tp(RC_SEND_MIDDLE, q, p + 1, payload=pattern(mtu, 2)), v6)
            add(tp(RC_SEND_LAST, q, p + 2, payload=pattern(100, 3), ackreq=1), v6)
            add(tp(RC_SEND_LAST_IMM, q, p + 2, struct.pack("!I", 0x1234), pattern(8, 3)), v6)
            add(tp(RC_SEND_ONLY_IMM, q, p, struct.pack("!I", 0xABCD), pattern(12, 4), se=1), v6)
            add(tp(RC_SEND_ONLY_INV, q, p, struct.pack("!I", mr.rkey), pattern(12, 4)), v6)
            add(tp(RC_WRITE_ONLY, q, p, reth(va, mr.rkey, 64), pattern(64, 5), ackreq=1), v6, 2)
            add(tp(RC_WRITE_ONLY_IMM, q, p, reth(va, mr.rkey, 16) + struct.pack("!I", 7), pattern(16, 5)), v6)
            add(tp(RC_WRITE_FIRST, q, p, reth(va, mr.rkey, 2 * mtu + 40), pattern(mtu, 6)), v6)
            add(tp(RC_WRITE_MIDDLE, q, p + 1, payload=pattern(mtu, 7)), v6)
            add(tp(RC_WRITE_LAST, q, p + 2, payload=pattern(40, 8)), v6)
            add(tp(RC_WRITE_LAST_IMM, q, p + 2, struct.pack("!I", 9), pattern(40, 8)), v6)
            add(tp(RC_READ_REQ, q, p, reth(va, mr.rkey, r.choice((8, 64, 1000, 3000, 4096)))), v6, 2)
            add(tp(RC_CMP_SWAP, q, p, atomiceth(va, mr.rkey, 5, 0)), v6)
            add(tp(RC_FETCH_ADD, q, p, atomiceth(va + 8, mr.rkey, 1)), v6)
            add(tp(RC_ATOMIC_WRITE, q, p, reth(va + 16, mr.rkey, 8), pattern(8, 9)), v6)
        for v in (rts, req):
            s, q = v.sq_psn, v.qpn
            add(tp(RC_ACK, q, s, aeth(AETH_ACK)), w=2)
            add(tp(RC_ACK, q, s, aeth(NAK_SEQ)))
            add(tp(RC_ACK, q, s, aeth(0x20 | 3)))
            add(tp(RC_READ_RESP_FIRST, q, s, aeth(AETH_ACK), pattern(1024, 1)), w=2)
            add(tp(RC_READ_RESP_MIDDLE, q, s + 1, payload=pattern(1024, 2)), w=2)
            add(tp(RC_READ_RESP_LAST, q, s + 3, aeth(AETH_ACK), pattern(1024, 3)), w=2)
            add(tp(RC_READ_RESP_ONLY, q, s, aeth(AETH_ACK), pattern(64, 4)))
            add(tp(RC_ATOMIC_ACK, q, s + 4, aeth(AETH_ACK) + struct.pack("!Q", 5)), w=2)
        p, q = uc.psn, uc.qpn
        add(tp(UC | RC_SEND_ONLY, q, p, payload=pattern(64, 1)), w=2)
        add(tp(UC | RC_SEND_FIRST, q, p, payload=pattern(1024, 1)))
        add(tp(UC | RC_SEND_LAST, q, p + 1, payload=pattern(64, 1)))
        add(tp(UC | RC_WRITE_ONLY, q, p, reth(mr.buf + 0x8000, mr.rkey, 32), pattern(32, 1)))
        add(tp(UC | RC_WRITE_FIRST, q, p, reth(mr.buf + 0x8000, mr.rkey, 1100), pattern(1024, 1)))
        add(tp(UC | RC_WRITE_LAST_IMM, q, p + 1, struct.pack("!I", 3), pattern(76, 1)))
        add(tp(UD_SEND_ONLY, ud.qpn, 0, deth(ud.qkey, 0x77), pattern(64, 1)), w=3)
        add(tp(UD_SEND_ONLY_IMM, ud.qpn, 0, deth(ud.qkey, 0x77) + struct.pack("!I", 1), pattern(32, 1)))
        add(tp(UD_SEND_ONLY, MCAST_QPN, 0, deth(ud.qkey, 0x77), pattern(32, 1)))
        add(tp(CNP, rc.qpn, 0, b"\0" * 16, becn=1))
        add(tp(RC_SEND_ONLY, 0xABCDEF, 0, payload=pattern(32, 1)))
        add(tp(XRC | RC_SEND_ONLY, rc.qpn, rc.psn, struct.pack("!I", 5), pattern(16, 1)))
        self._tmpl = [t for _, t in out]
        return out

    def mutate(self, t):
        i = int(self.rnd() * self.ntable)
        self.counts[i] += 1
        self.table[i](t)

    # Each mutation edits t (a bytearray: BTH .. pad) in place.
    def flip(self, t):
        if t:
            rnd, n = self.rnd, len(t) * 8
            for _ in range(1 + int(rnd() * 4)):
                i = int(rnd() * n)
                t[i >> 3] ^= 1 << (i & 7)

    def setbyte(self, t):
        if t:
            i = self.rng.randrange(min(len(t), 64))
            t[i] = self.rng.choice(self.INTERESTING8) if self.rng.random() < 0.5 else self.rng.getrandbits(8)

    def truncate(self, t):
        r = self.rng.random()
        n = self.rng.randrange(len(t) + 1) if r < 0.5 else max(0, len(t) - self.rng.choice((1, 2, 3, 4, 8, 12, 16)))
        del t[n:]

    def extend(self, t):
        n = self.rng.choice((1, 2, 3, 4, 8, 16, 28, 64, 1024))
        t += bytes(self.rng.getrandbits(8) for _ in range(min(n, 64))) + b"\0" * max(0, n - 64)

    def opcode(self, t):
        if t:
            t[0] = self.rng.choice(VALID_OPCODES) if self.rng.random() < 0.8 else self.rng.getrandbits(8)

    def bth1(self, t):
        # SE, MigReq, PadCnt, TVer
        if len(t) > 1:
            t[1] = self.rng.choice((0x10, 0x20, 0x30, 0x80, 0x40, 0x01, 0x0F)) if self.rng.random() < 0.7 \
                else self.rng.getrandbits(8)

    def pkey(self, t):
        if len(t) > 3:
            v = self.rng.choice((0x0000, 0x7FFF, 0x8000, 0xFFFE, 0x1234, self.rng.getrandbits(16)))
            t[2], t[3] = v >> 8, v & 0xFF

    def dqpn(self, t):
        if len(t) > 7:
            r = self.rng.random()
            if r < 0.7:
                q = self.vs[self.rng.randrange(len(self.vs))].qpn
            elif r < 0.8:
                q = MCAST_QPN
            else:
                q = self.rng.randrange(0x10000, 0xFFFFFF)
            t[5], t[6], t[7] = q >> 16, (q >> 8) & 0xFF, q & 0xFF

    def psn(self, t):
        if len(t) > 11:
            p = (t[9] << 16) | (t[10] << 8) | t[11]
            r = self.rng.random()
            if r < 0.6:
                p += self.rng.randrange(-3, 5)
            elif r < 0.8:
                p += self.rng.choice((0x7FFFFF, 0x800000, 0x800001, -0x800000, 1 << 22))
            else:
                p = self.rng.getrandbits(24)
            p &= 0xFFFFFF
            t[9], t[10], t[11] = p >> 16, (p >> 8) & 0xFF, p & 0xFF

    def ackbyte(self, t):
        if len(t) > 8:
            t[8] = self.rng.choice((0x80, 0x7F, 0xFF, 0x00))
            if len(t) > 4 and self.rng.random() < 0.5:
                t[4] = self.rng.getrandbits(8)      # FECN/BECN/resv6: masked by the ICRC

    def field32(self, t):
        # A 32-bit field after the BTH: an R_Key, DMA length, Q_Key, AETH,
        # ImmDt, IETH, half a VA or an atomic operand.
        if len(t) >= 16:
            off = 12 + 4 * self.rng.randrange((min(len(t), 48) - 12) // 4)
            r = self.rng.random()
            if r < 0.5:
                v = self.rng.choice(self.INTERESTING32)
            elif r < 0.7:
                v = self.vb.mr.rkey ^ (1 << self.rng.randrange(32))
            elif r < 0.8:
                v = self.rng.choice((self.vb.mr_wo.rkey, self.vb.rmr.lkey, self.vb.lmr.rkey))
            else:
                v = self.rng.getrandbits(32)
            t[off:off + 4] = struct.pack("!I", v)

    def va(self, t):
        # A 64-bit VA (RETH/AtomicETH) near the MR's edges, misaligned, or wrapping.
        if len(t) >= 20:
            mr = self.vb.mr
            v = self.rng.choice((mr.buf - 8, mr.buf + mr.length - 8, mr.buf + mr.length, mr.buf + 4,
                                 mr.buf + 1, 2**64 - 8, 2**64 - 1, 0, 1 << 63, mr.buf + mr.length - 1,
                                 self.rng.getrandbits(64)))
            t[12:20] = struct.pack("!Q", v & (2**64 - 1))

    def splice(self, t):
        if self._tmpl:
            o = self._tmpl[self.rng.randrange(len(self._tmpl))]
            i = self.rng.randrange(len(t) + 1)
            j = self.rng.randrange(len(o) + 1)
            t[i:] = o[j:]

    def paylen(self, t):
        # Grow or shrink the payload by words, with PadCnt set to match or not.
        n = self.rng.choice((-1024, -512, -64, -4, 4, 8, 512, 1024, 3072))
        if n < 0:
            del t[max(12, len(t) + n):]
        else:
            t += b"\xA5" * n
        if len(t) > 1 and self.rng.random() < 0.3:
            t[1] = (t[1] & ~0x30) | (self.rng.getrandbits(2) << 4)

    def syndrome(self, t):
        if len(t) > 12:
            t[12] = self.rng.choice((0x00, 0x1F, 0x20, 0x3F, 0x40, 0x5F, 0x60, 0x61, 0x62, 0x63, 0x64,
                                     0x7F, 0x80, 0xFF))

    def ip_udp_lie(self, tlen):
        """IP/UDP-level mutations: a UDP length that lies, trailing bytes,
        IP options, ECN/TTL changes (ICRC-invariant)."""
        r = self.rng.random()
        if r < 0.3:
            d = self.rng.choice((-12, -8, -4, -2, -1, 1, 4, 8, 1000))
            return {"_name": "udp_len", "udp_len": max(0, 8 + tlen + 4 + d)}
        if r < 0.5:
            return {"_name": "trailer", "trailer": b"\0" * self.rng.choice((1, 4, 16))}
        if r < 0.6:
            return {"_name": "ip_options", "opts": b"\x01\x01\x01\x00"}
        return {"_name": "tos_ttl", "tos": self.rng.getrandbits(8), "ttl": self.rng.choice((1, 2, 255))}


# --- selftest, ICRC check against real traffic -------------------------------------------


def selftest():
    """Known-answer vectors (Documentation's reference notes), and the fast
    ICRC against scapy's and against a bitwise CRC, over random packets."""
    try:
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


# --- main ------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("selftest", "icrc-check", "directed", "flood", "mutate", "all",
                                        "sec-wire", "udp-forge", "newlink-race"))
    ap.add_argument("--ifname", help="sending veth end")
    ap.add_argument("--ns", help="network namespace of --ifname (ip netns name; default: this one)")
    ap.add_argument("--src-mac")
    ap.add_argument("--dst-mac", help="MAC of the target's netdev")
    ap.add_argument("--src-ip")
    ap.add_argument("--dst-ip", help="IPv4 address of the target's netdev")
    ap.add_argument("--src-ip6")
    ap.add_argument("--dst-ip6")
    ap.add_argument("--dev", help="target sroce device")
    ap.add_argument("--peer-dev", help="the sroce device on --ifname (for its GIDs)")
    ap.add_argument("--gid-index", type=int, help="target's RoCE v2 GID index for --dst-ip")
    ap.add_argument("--gid-index6", type=int)
    ap.add_argument("--peer-gid-index", type=int, help="peer device's GID index for --src-ip")
    ap.add_argument("--peer-gid-index6", type=int)
    ap.add_argument("--peer-ns", help="the target's network namespace (UDP counters)")
    ap.add_argument("--traffic-gen", help="file the real-traffic loop bumps after each run")
    ap.add_argument("--count", type=int, default=100000, help="mutate: packets")
    ap.add_argument("--flood", type=int, default=50000, help="flood: SENDs to unknown QPNs")
    ap.add_argument("--cnps", type=int, default=5000, help="flood: CNPs for unknown QPs")
    ap.add_argument("--cycle", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--min-packets", type=int, default=100)
    ap.add_argument("--stop-file", help="icrc-check: stop once this file exists")
    ap.add_argument("--ready-file", help="icrc-check: created once the sniffer listens")
    g = ap.add_argument_group("sec-wire (selftests/sec_wire.sh; tools/inject/sroce_secwire.py)")
    g.add_argument("--cases", help="sec-wire: comma-separated cases (default: all)")
    g.add_argument("--peer-ifname", help="sec-wire: the target's veth end (its MTU is raised)")
    g.add_argument("--dup-read-kb", type=int, default=1024, help="sec-wire: the duplicated READ")
    g.add_argument("--flood-read-mb", type=int, default=128, help="sec-wire: the READ under the flood")
    g.add_argument("--backlog-flood", type=int, default=4000, help="sec-wire: requests in the flood")
    g.add_argument("--mem-limit-kb", type=int, default=6144,
                   help="sec-wire: slab growth allowed during the flood")
    g.add_argument("--step-timeout", type=float, default=60, help="sec-wire: seconds per step")
    g = ap.add_argument_group("udp-forge (sec-wire's unprivileged sender)")
    g.add_argument("--transport", choices=("rc", "uc"), default="rc")
    g.add_argument("--qpn", type=int)
    g.add_argument("--psn", type=int)
    g.add_argument("--rkey", type=int)
    g.add_argument("--va", type=int)
    g.add_argument("--ops", default="write@0", help="udp-forge: write@K,send@K,... (PSN offsets)")
    g = ap.add_argument_group("newlink-race (sec-wire's rdma link add / netdev removal race)")
    g.add_argument("--prefix", default="nlr", help="newlink-race: netdev and device name prefix")
    g.add_argument("--hang-seconds", type=int, default=15)
    g.add_argument("--min-rounds", type=int, default=3,
                   help="newlink-race: race rounds (after 3 calibration rounds) run even past --seconds")
    g.add_argument("--orphan-ms", type=int, default=700,
                   help="newlink-race: longest a device may outlive its netdev's unlisting")
    a = ap.parse_args()
    if a.command in ("sec-wire", "udp-forge", "newlink-race"):
        # sroce_secwire imports this file as sroce_inject: the same module.
        sys.modules.setdefault("sroce_inject", sys.modules[__name__])
        import sroce_secwire
        if a.command == "udp-forge":
            for k in ("dst_ip", "qpn", "psn", "rkey", "va"):
                if getattr(a, k) is None:
                    ap.error("--%s is required for udp-forge" % k.replace("_", "-"))
            return sroce_secwire.udp_forge(a)
        if a.command == "newlink-race":
            if not a.ns:
                ap.error("--ns is required for newlink-race")
            return sroce_secwire.newlink_race(a)
    if a.command == "selftest":
        ok = selftest()
        return 4 if ok is None else 0 if ok else 1
    if a.command == "icrc-check":
        return 0 if icrc_check(a) else 1
    for k in ("ifname", "src_mac", "dst_mac", "src_ip", "dst_ip", "dev", "peer_dev", "gid_index",
              "peer_gid_index", "peer_ns"):
        if getattr(a, k) is None:
            ap.error("--%s is required for %s" % (k.replace("_", "-"), a.command))
    if a.seed is None:
        a.seed = random.SystemRandom().getrandbits(31)
    random.seed(a.seed)
    ok = True
    if a.command == "sec-wire":
        return sroce_secwire.run(a)
    if a.command == "all":
        # One process for every phase (python and scapy take seconds to
        # start in a TCG guest): first the ICRC of the real traffic, before
        # anything is injected, until both families have been seen.
        log("### ICRC of real traffic%s" % _stamp())
        a.stop_file = None
        a.seconds = max(a.seconds, 60)
        ok = icrc_check(a)
        phases = ("directed", "flood", "mutate")
    else:
        phases = (a.command,)
    s = Session(a)
    for ph in phases:
        t0 = time.monotonic()
        if len(phases) > 1:
            log("### %s%s" % (ph, _stamp()))
        getattr(s, ph)()
        ok &= s.finish(ph)
        log("%s: %.1f s" % (ph, time.monotonic() - t0))
    s.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
