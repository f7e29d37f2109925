"""The case runner: send frames, then check counters, answers, completions."""

import json
import subprocess
import struct
import time
import zlib

from .proto import (RC_CMP_SWAP, RC_FETCH_ADD, RC_READ_REQ, RC_SEND_ONLY, RC_WRITE_ONLY, ROCE_PORT,
                    UD_SEND_ONLY, WC_SUCCESS, WC_WR_FLUSH_ERR, _FF8, _stamp, deth, log, pattern,
                    tp)
from .wire import (Reply, Wire)
from .counters import (Counters, EXACT, EXACT_IF_PRESENT, NOISY, NOISY_IF_PRESENT, TEARDOWN,
                       TEARDOWN_IF_PRESENT, TrafficWatch, udp_in_errors)
from .verbs import Verbs
from . import scapyload
from .directed import directed as run_directed
from .flood import flood as run_flood
from .mutate import mutate as run_mutate


# --- the case runner ------------------------------------------------------------------


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
             after=None, xfail=None, udp_errors=0, wait=5.0, pace=0.0, between=None,
             upto=None):
        """Send frames, then check: counters in expect moved by exactly that
        much (EXACT ones not named must not move), those in atleast by at
        least that much, the target answered exactly `replies`
        ([(victim, kind, psn)...], in order per victim), and `cqes`
        ({victim: [status...]}) completed. after(): extra checks returning a
        list of problems. xfail: the reason this case is a known deviation
        (reported, not failed). pace: seconds between frames (0: all at
        once); between(), if given, runs after each paced frame and ends
        the stream early by returning True. upto: EXACT counters that may
        move by anything from 0 to that much (a race the case cannot
        avoid, named where it is used)."""
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
        if pace:
            for f in frames:
                self.w.send([f])
                if between and between():
                    break
                time.sleep(pace)
        else:
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
        upto = upto or {}
        for k in self.exact:
            want = expect.get(k, 0)
            if d[k] == want or k in upto and 0 <= d[k] <= upto[k]:
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

    # --- helpers of the cases ----------------------------------------------------

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
        scapyload.prepare()
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

    def _tx_dropped(self):
        """What the sending veth end dropped (it counts the peer's backlog
        drops too), and the target namespace's softnet drops."""
        cmd = ["ip", "-s", "-j", "link", "show", "dev", self.a.ifname]
        if self.a.ns:
            cmd[1:1] = ["-n", self.a.ns]
        st = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        st = st[0]["stats64"]
        return st["tx"]["dropped"] + st["rx"]["dropped"]


    # --- the phases (each a module of its own) -------------------------------------

    def directed(self):
        run_directed(self)

    def flood(self):
        run_flood(self)

    def mutate(self):
        run_mutate(self)
