"""The sending veth end: raw frames out, the victims' answers in."""

import ctypes
import os
import socket
import struct
import subprocess
import zlib

from .proto import (_FF8, ETH_P_ALL, ETH_P_IP, ETH_P_IPV6, HDR_LEN, NAK_ACC, NAK_INV, NAK_OP,
                    NAK_SEQ, PHANTOM_BASE, PHANTOM_SPAN, RC_ACK, RC_ATOMIC_ACK, RC_READ_RESP_FIRST,
                    RC_READ_RESP_ONLY, ROCE_PORT, SO_RCVBUFFORCE, icrc, inet_csum, log)


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

    def send_together(self, frames):
        """Send @frames so that the target receives them back to back, in
        one softirq run, however this process is scheduled between its
        send calls: they wait in a plug qdisc on the sending veth end and
        leave it together. Released, the plug stays as a plain FIFO (deleting
        it could drop what it has not passed on yet). A kernel without the
        plug qdisc (the debug lane's: CONFIG_NET_SCH_PLUG is not set) gets
        them one by one, as send() does, and a log line says so."""
        def plug(*args):
            return subprocess.run(["ip", "netns", "exec", self.ns, "tc", "qdisc", args[0],
                                   "dev", self.ifname, "root", "plug"] + list(args[1:]),
                                  capture_output=True, text=True)
        r = plug("replace")
        if r.returncode:
            why = (r.stderr or r.stdout).strip().splitlines()
            log("    (no plug qdisc here: %s; the %d frame(s) go one by one)"
                % (why[-1] if why else "tc failed", len(frames)))
            self.send(frames)
            return
        try:
            self.send(frames)
        finally:
            r = plug("change", "release_indefinite")
            if r.returncode:
                raise RuntimeError("tc: the plug qdisc on %s was not released: %s"
                                   % (self.ifname, r.stderr.strip()))

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
