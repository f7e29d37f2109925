"""The mutation run: randomly mutated valid packets at the victims."""

import random
import struct
import time

from .proto import (AETH_ACK, CNP, MCAST_QPN, NAK_SEQ, RC_ACK, RC_ATOMIC_ACK, RC_ATOMIC_WRITE,
                    RC_CMP_SWAP, RC_FETCH_ADD, RC_READ_REQ, RC_READ_RESP_FIRST, RC_READ_RESP_LAST,
                    RC_READ_RESP_MIDDLE, RC_READ_RESP_ONLY, RC_SEND_FIRST, RC_SEND_LAST,
                    RC_SEND_LAST_IMM, RC_SEND_MIDDLE, RC_SEND_ONLY, RC_SEND_ONLY_IMM,
                    RC_SEND_ONLY_INV, RC_WRITE_FIRST, RC_WRITE_LAST, RC_WRITE_LAST_IMM,
                    RC_WRITE_MIDDLE, RC_WRITE_ONLY, RC_WRITE_ONLY_IMM, UC, UD_SEND_ONLY,
                    UD_SEND_ONLY_IMM, VALID_OPCODES, XRC, aeth, atomiceth, deth, log, pattern,
                    reth, tp)
from .verbs import Victim


def mutate(sess):
    """--count mutated packets in cycles of --cycle; victims reset per cycle."""
    a, vb = sess.a, sess.vb
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
    sess.w.sniffer.close()
    c0 = sess.cnt.snap()
    drop0 = sess._tx_dropped()
    t0 = time.monotonic()
    sent = 0
    stats = {}
    send = sess.w.sock.send
    frame = sess.w.frame
    fast4 = sess.w.fast4
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
                for x in sess.w.split4(f):
                    send(x)
                stats["ip-fragmented"] = stats.get("ip-fragmented", 0) + 1
        sent += n
        vb.poll()
        vb.pending = []
        el = time.monotonic() - t0
        log("mutate: %d/%d sent, %.0f packets/s" % (sent, a.count, sent / el))
    dt = time.monotonic() - t0
    sess.w.sent += sent
    time.sleep(1)
    c1 = sess.cnt.snap()
    d = {k: c1[k] - c0[k] for k in c1}
    log("mutate: %d packets in %.1f s (%.0f/s), veth dropped %d; seed %d"
        % (sent, dt, sent / dt, sess._tx_dropped() - drop0, seed))
    stats.update(M.stats)
    log("mutate: mutations: %s" % ", ".join("%s %d" % kv for kv in sorted(stats.items())))
    log("mutate: counter deltas: %s" % ", ".join("%s +%d" % (k, v) for k, v in sorted(d.items()) if v))
    # The device must still be healthy: fresh victims and probes.
    sess.w.open_sniffer()
    for v in vs:
        v.bring_up()
    for v in (vs[0], vs[3], vs[4]) + ((vs[-1],) if a.dst_ip6 else ()):
        sess.probe(v, " (after the mutation run)")
    t = tp(RC_READ_REQ, vs[0].qpn, vs[0].psn, reth(vs[0].mr.buf, vs[0].mr.rkey, 1024))
    sess.case("READ after the mutation run", [sess.f4(t)], replies=[(vs[0], "read-only", vs[0].psn)])


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

