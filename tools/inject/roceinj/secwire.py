"""roceinj.secwire: the wire-side security cases of selftests/sec_wire.sh.

Imported by sroce_inject.py (command sec-wire; udp-forge is in udpforge.py,
newlink-race in newlink_race.py); the
wire, ICRC, victims and counters it uses are those of roceinj/. The cases are
the table CASES at the end; each returns a list of problems (empty: passed)
and ends with a line

    RESULT <name> ok|FAIL [<first problem>]

that sec_wire.sh turns into its TAP line.

  local_udp_rc, local_udp_uc
      A real RC (UC) pair between the peer device (netns A) and the target
      (netns B). An unprivileged local user in netns B (nobody, through
      setpriv, no capabilities) sends ICRC-correct WRITE_ONLY / SEND_ONLY
      packets to B's own address, UDP 4791, from an ordinary UDP socket,
      naming the target QP, its expected PSN, the R_Key and VA of its MR
      (given to it: even with every secret known, a packet whose IP source
      is not the QP's peer must be refused). The MR must stay byte for byte
      as it was, no receive completes, rcvd_bad_addr moves by the number of
      packets sent, and the pair still passes a verified WRITE and SEND.
  dup_read_amplification
      From the peer's address (raw frames from netns A, as the injector's
      other cases), to a victim RC QP: a READ of --dup-read-kb, then
      duplicates of it. Genuine resumes (each from a PSN not before the last
      one) are answered once each; resumes going backwards, the first PSN
      again (repeatedly) and resumes of a stream from a PSN it has not sent
      yet are not answered. Every response is sniffed and its bytes counted;
      dup_read_drop must count each refused request.
  backlog_flood
      A real RC pair; the requester READs --flood-read-mb from the target
      and SENDs right after it (a request that must wait behind the READ
      stream and then execute). While the READ streams, --backlog-flood
      WRITE requests (4000-byte payloads, veth MTU 9000) go to the target
      QP from the peer's address, half with PSNs 2^22 ahead of the expected
      one, then half 2^22 behind it: for each half, resp_backlog_drop counts
      them all (less what the veth dropped) and kernel slab memory grows by
      less than --mem-limit-kb (0: not checked); the READ completes with
      the right data and the SEND is received.
  oversize
      Veth MTU 9000 on both ends: datagrams longer than the longest RoCE
      packet (BTH + XRCETH + AtomicETH + 4096 + 3 + ICRC = 4147 bytes): 8000
      bytes in one frame, 60000 in IP fragments, and 4148, all with a bad
      ICRC, are counted in rcvd_oversize and not in rcvd_icrc_err; one of
      4147 bytes still counts in rcvd_icrc_err.

newlink-race (a command of its own; selftests/sec_wire.sh runs it in its
newlink_race case) is described at newlink_race() below.

On a module without the new counters every case fails (the counter is
missing), and the memory, bytes and completions are still checked and
reported, to show what the attack does there.
"""

import os
import struct
import subprocess
import sys
import time
import traceback

from roceinj import proto as inj
from roceinj.harness import Session
from roceinj.proto import log, tp, reth, pattern
from roceinj.verbs import Victim
from roceinj.secwire_pair import (ENTRY, FAR, MTU, Jumbo, Pair, Snap, first_diff, meminfo_kb, ndiff,
                                  slab_active, verified_exchange, want_delta)


# --- the cases -----------------------------------------------------------------------


class SecWire:
    def __init__(self, s):
        self.s = s
        self.a = s.a
        self.snap = Snap(s.cnt)

    # --- 1. local UDP sender, forged source ---------------------------------------------

    def local_udp(self, kind):
        a = self.a
        p = Pair(self.s, kind, 1 << 16)
        try:
            return self._local_udp(p, kind, a)
        finally:
            p.close()

    def _local_udp(self, p, kind, a):
        content = pattern(1 << 16, 0x5EC)
        p.mr_b.write(content, len(content), 0)
        e = p.psn_a
        va, rkey = p.mr_b.buf + 0x1000, p.mr_b.rkey
        ops = ["write@0", "send@0", "send@1"] if kind == "rc" else ["write@0", "send@0"]
        log("  victim %s QP %#x on %s, expected PSN %#x, MR va %#x rkey %#x; peer QP %#x on %s"
            % (kind.upper(), p.qb.qp_num, a.dev, e, va, rkey, p.qa.qp_num, a.peer_dev))
        cmd = ["ip", "netns", "exec", a.peer_ns, "setpriv", "--reuid=65534", "--regid=65534",
               "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
               sys.executable, ENTRY, "udp-forge", "--dst-ip", a.dst_ip,
               "--transport", kind, "--qpn", str(p.qb.qp_num), "--psn", str(e),
               "--rkey", str(rkey), "--va", str(va), "--ops", ",".join(ops)]
        c0 = self.snap.take()
        log("  + %s" % " ".join(cmd[4:6] + cmd[12:]))
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ,
                           PYTHONDONTWRITEBYTECODE="1"), timeout=120)
        for ln in (r.stdout + r.stderr).splitlines():
            log("    attacker: %s" % ln)
        probs = []
        if r.returncode != 0:
            probs.append("the unprivileged sender exited %d" % r.returncode)
        # The datagrams are handled in the sender's softirq; let any answer
        # or completion show.
        time.sleep(1.0)
        c1 = self.snap.take()
        got = p.mr_b.read(len(content), 0)
        if got != content:
            probs.append("victim memory changed: %d byte(s) differ, the first at MR offset %#x"
                         " (the forged WRITE landed)" % (ndiff(got, content), first_diff(got, content)))
        else:
            log("  ok: victim memory unchanged (%d bytes compared)" % len(content))
        wcs = Pair.poll(p.cq_b, 4, 0.3)
        if wcs:
            probs.append("%d completion(s) on the victim: %s (a forged SEND was received)"
                         % (len(wcs), [(w.opcode, w.status, w.byte_len) for w in wcs]))
            for w in wcs:
                p.post_recv(w.wr_id)
        else:
            log("  ok: no completion on the victim")
        n = len(ops)
        d = want_delta(probs, self.snap, c0, c1, "rcvd_bad_addr", n)
        if d == n:
            log("  ok: rcvd_bad_addr +%d" % d)
            out = subprocess.run(["rdma", "statistic", "show", "link", "%s/1" % a.dev],
                                 capture_output=True, text=True).stdout
            if "rcvd_bad_addr %d" % c1["rcvd_bad_addr"] not in out:
                probs.append("rdma statistic does not show rcvd_bad_addr %d: %s"
                             % (c1["rcvd_bad_addr"], out.strip()))
        icrc = self.snap.delta(c0, c1, "rcvd_icrc_err")
        if icrc:
            probs.append("rcvd_icrc_err +%d: the sender's ICRC was wrong, the test proves nothing"
                         % icrc)
        moved = ", ".join("%s +%d" % (k, c1[k] - c0[k]) for k in sorted(c1) if c1[k] != c0[k])
        log("  counters: %s" % (moved or "none moved"))
        ex = verified_exchange(p, content)
        if not ex:
            log("  ok: verified WRITE and SEND between the pair afterwards")
        return probs + ex

    # --- 2. duplicate READ amplification ------------------------------------------------

    def dup_read(self):
        from pyverbs.mr import MR
        a, vb = self.a, self.s.vb
        e_ = vb.e
        L = a.dup_read_kb * 1024
        n = L // MTU
        big = MR(vb.pd, L, e_.IBV_ACCESS_LOCAL_WRITE | e_.IBV_ACCESS_REMOTE_READ)
        v = Victim(vb, "dup-read", "rc", "rtr", recvs=0, mtu=MTU)
        try:
            return self._dup_read(big, v, L, n)
        finally:
            v.qp.close()
            big.close()

    def _dup_read(self, big, v, L, n):
        content = os.urandom(L)
        big.write(content, L, 0)
        e = v.psn
        log("  victim RC QP %#x (peer: phantom QPN %#x), PSN %#x; READ of %d KiB = %d responses"
            " at PMTU %d" % (v.qpn, v.remote, e, L >> 10, n, MTU))

        def req(k):
            return tp(inj.RC_READ_REQ, v.qpn, e + k, reth(big.buf + k * MTU, big.rkey, L - k * MTU))
        # Each step: (what, [(PSN offset of a request, copies)...] sent back to
        # back, the offset the one answer must start at (None: no answer),
        # dup_read_drop wanted). A duplicate READ may restart the responses
        # only from a PSN not before the last restart point and, while they
        # stream, only from one already sent: the requests "ahead" below ask
        # for PSNs the stream they follow has not reached (it takes far
        # longer to get there than the requests take to arrive).
        h, q, o, x = n // 2, n // 4, n // 8, n // 16
        steps = [
            ("the READ, and 8 requests to resume it at +%d, ahead of its stream" % h,
             [(0, 1), (h, 8)], 0, 8),
            ("a genuine resume at +%d" % o, [(o, 1)], o, 0),
            ("a resume going backwards (+%d)" % x, [(x, 1)], None, 1),
            ("the READ's first PSN again, 8 times", [(0, 8)], None, 8),
            ("a genuine resume further on (+%d), and 8 requests to resume at +%d, ahead of"
             " its stream" % (h, n - 8), [(h, 1), (n - 8, 8)], h, 8),
            ("a resume going backwards again (+%d: between the READ and the last resume)" % q,
             [(q, 1)], None, 1),
        ]
        probs = []
        total = excess = 0
        for i, (what, reqs, frm, drops) in enumerate(steps):
            frames = [self.s.f4(req(k)) for k, c in reqs for _ in range(c)]
            pr, nbytes = self.read_step(v, "step %d: %s" % (i + 1, what), frames, e, frm, n,
                                        content, drops, first=(i == 0))
            probs += pr
            total += nbytes
            excess += max(0, nbytes - (0 if frm is None else L - frm * MTU))
            if i == 0:
                v.psn = e + n
        log("  READ response payload on the wire: %d bytes in all (%.1f x the READ), %d of them"
            " more than the genuine requests asked for" % (total, total / L, excess))
        return probs

    def read_step(self, v, title, frames, e, frm, n, content, drops, first=False):
        """Send READ request frames; collect the victim's responses until
        they stop. frm: the PSN offset the only answer must start at (None:
        no answer). Returns (problems, response payload bytes)."""
        s = self.s
        log("  --- %s: %d request(s)%s" % (title, len(frames), inj._stamp()))
        s.w.drain()
        self._sniff_stats()
        c0 = self.snap.take()
        t0 = time.monotonic()
        # Back to back at the target, whatever this process's scheduling:
        # a step's "ahead of its stream" requests must not arrive after the
        # stream got there (seen with two guests at once on 2 CPUs).
        s.w.send_together(frames)
        want = 0 if frm is None else n - frm
        got = []
        last = time.monotonic()
        deadline = t0 + self.a.step_timeout
        while time.monotonic() < deadline:
            new = s.answers()
            now = time.monotonic()
            if new:
                got += new
                last = now
            c1 = self.snap.take()
            dd = self.snap.delta(c0, c1, "dup_read_drop")
            counted = dd is None or dd >= drops
            # Done when what is wanted is in and nothing came for a while
            # (longer when nothing is wanted: a refused request's answer
            # would have to be seen), or when nothing came for 5 s.
            quiet = 1.0 if want else 2.0
            if now - last >= quiet and now - t0 >= quiet and (
                    len(got) >= want and counted or now - last >= 5 and now - t0 >= 5):
                break
            time.sleep(0.02)
        el = time.monotonic() - t0
        c1 = self.snap.take()
        lost = self._sniff_stats()
        nbytes = sum(len(r.payload) for r in got)
        sent = self.snap.delta(c0, c1, "sent_pkts")
        sent_b = self.snap.delta(c0, c1, "sent_bytes")
        log("    %d response(s), %d payload bytes sniffed in %.1f s (the target's sent_pkts +%s,"
            " sent_bytes +%s%s)" % (len(got), nbytes, el, sent, sent_b,
                                   ", the sniffer dropped %d" % lost if lost else ""))
        probs = []
        if frm is None:
            if got or (sent or 0) > 0:
                probs.append("%s: answered with %d response(s), %d bytes; want no answer"
                             % (title, max(len(got), sent or 0), nbytes))
        else:
            # Each PSN once, whatever the order the sniffer saw them in: a
            # veth delivers through the sending CPU's backlog, so a stream
            # whose work item moved to the other CPU can arrive reordered
            # (seen on the preemptible debug kernel, two guests at once).
            inorder = [r.psn for r in got]
            got = sorted(got, key=lambda r: (r.psn - e) & 0xFFFFFF)
            psns = [r.psn for r in got]
            if psns != inorder:
                log("    (the sniffer saw the responses out of PSN order; compared in PSN order)")
            want_psns = [(e + frm + i) & 0xFFFFFF for i in range(want)]
            pl = b"".join(r.payload for r in got)
            if psns != want_psns:
                probs.append("%s: %d response(s) with PSNs %s..%s, want %d from %#x once"
                             % (title, len(got), hex(psns[0]) if psns else "-",
                                hex(psns[-1]) if psns else "-", want, want_psns[0]))
            elif pl != content[frm * MTU:]:
                probs.append("%s: response payload differs from the MR (first at %#x)"
                             % (title, first_diff(pl, content[frm * MTU:])))
            if any(not r.icrc_ok for r in got):
                probs.append("%s: a response has a bad ICRC" % title)
            if first and got and (got[0].kind() != ("read-first" if n > 1 else "read-only")):
                probs.append("%s: first response is %s" % (title, got[0].kind()))
        d = want_delta(probs, self.snap, c0, c1, "dup_read_drop", drops, " (%s)" % title)
        log("    dup_read_drop +%s (want +%d)" % ("?" if d is None else d, drops))
        log("    ok" if not probs else "    NOT OK (%d problem(s), listed at the end)" % len(probs))
        return probs, nbytes

    def _sniff_stats(self):
        """Packets the sniffer dropped since the last call (PACKET_STATISTICS)."""
        try:
            b = self.s.w.sniffer.getsockopt(263, 6, 8)      # SOL_PACKET, PACKET_STATISTICS
            return struct.unpack("II", b)[1]
        except OSError:
            return 0

    # --- 4. backlog flood while a long READ streams ---------------------------------------

    def backlog_flood(self):
        a = self.a
        L = a.flood_read_mb << 20
        with Jumbo(a):
            p = Pair(self.s, "rc", L)
            try:
                return self._backlog_flood(p, L)
            finally:
                p.close()

    def _backlog_flood(self, p, L):
        a, s = self.a, self.s
        n = L // MTU
        log("  filling %d MiB" % (L >> 20))
        content = os.urandom(L)
        p.mr_b.write(content, L, 0)
        msg = pattern(256, 0xF100D)
        after = (p.psn_a + n + 1) & 0xFFFFFF      # qb's expected PSN once READ and SEND are in
        log("  READ of %d MiB (%d responses) by QP %#x from QP %#x, then a SEND (the expected PSN"
            " is %#x after both)" % (L >> 20, n, p.qa.qp_num, p.qb.qp_num, after))
        # Two halves: PSNs 2^22 ahead of the expected one, then 2^22 behind
        # it; each must be dropped and counted, none held. Built beforehand:
        # the READ does not last long.
        payload = b"\xEE" * 4000
        halves = [(half, sign, [s.f4(tp(inj.RC_WRITE_ONLY, p.qb.qp_num,
                                        (after + sign * (FAR + i)) & 0xFFFFFF,
                                        reth(p.mr_b.buf, p.mr_b.rkey, len(payload)), payload,
                                        ackreq=1)) for i in range(128)])
                  for half, sign in (("ahead", 1), ("behind", -1))]
        drop0 = s._tx_dropped()
        c0 = self.snap.take()
        p.read(L)
        t_read = time.monotonic()
        p.send(msg)
        def progress():
            """READ responses the target has sent so far (it sends nothing else)."""
            return self.s.cnt.snap(["sent_pkts"])["sent_pkts"] - c0["sent_pkts"]
        # The stream has started when the target has sent a response.
        end = time.monotonic() + 20
        while time.monotonic() < end and progress() < 1:
            time.sleep(0.005)
        log("  the stream started %.2f s after the READ was posted" % (time.monotonic() - t_read))
        probs = []
        early = []
        got = {}
        for half, sign, frames in halves:
            n_half = a.backlog_flood // 2
            h0 = self.snap.take()
            slab0, skb0 = meminfo_kb("Slab"), slab_active("skbuff_head_cache")
            sent = 0
            t0 = time.monotonic()
            send = s.w.sock.send
            while sent < n_half:
                k = min(250, n_half - sent)
                for i in range(k):
                    send(frames[(sent + i) & 127])
                sent += k
                time.sleep(0.002)
            t_flood = time.monotonic() - t0
            s.w.sent += sent
            slab1, skb1 = meminfo_kb("Slab"), slab_active("skbuff_head_cache")
            h1 = self.snap.take()
            done = progress()
            early = Pair.poll(p.cq_a, 2, 0)
            d = got[half] = self.snap.delta(h0, h1, "resp_backlog_drop")
            log("  flood %s: %d WRITEs of %d bytes with PSNs %#x %s %#x.. in %.2f s;"
                " resp_backlog_drop +%s; slab %+d kB, skbuff_head_cache %+d objects; %.1f s after"
                " the READ was posted, %d of its %d responses sent"
                % (half, sent, len(frames[0]), after, "+" if sign > 0 else "-", FAR, t_flood,
                   "?" if d is None else d, slab1 - slab0, skb1 - skb0, time.monotonic() - t_read,
                   done, n))
            pr = []
            if early or done >= n:
                pr.append("the READ completed before the flood (%s) was over: it did not run against"
                          " a streaming READ; raise --flood-read-mb" % half)
            if a.mem_limit_kb and slab1 - slab0 > a.mem_limit_kb:
                pr.append("kernel slab memory grew by %d kB during the flood %s (limit %d kB): it is"
                          " being held" % (slab1 - slab0, half, a.mem_limit_kb))
            log("    ok" if not pr else "    NOT OK (%d problem(s), listed at the end)" % len(pr))
            probs += pr
            if early or done >= n:
                break
        # The veth's drops, if any (never seen), are not in the target's counters.
        dropped = s._tx_dropped() - drop0
        for half, d in got.items():
            want = a.backlog_flood // 2
            if d is None:
                probs.append("the module has no resp_backlog_drop counter")
            elif not want - dropped <= d <= want:
                probs.append("resp_backlog_drop +%d for the flood %s, want +%d (the veth dropped %d"
                             " of the whole flood)" % (d, half, want, dropped))
        wcs = early + Pair.poll(p.cq_a, 2 - len(early), a.step_timeout * 2)
        t_done = time.monotonic() - t_read
        rw = Pair.poll(p.cq_b, 1, 5)
        c1 = self.snap.take()
        st = [(w.wr_id, w.status) for w in wcs]
        if sorted(st) != [(12, 0), (13, 0)]:
            probs.append("requester completions %s, want the READ (13) and the SEND (12), both"
                         " successful" % st)
        else:
            got = p.mr_a.read(L, 0)
            if got != content:
                probs.append("the READ's data differ from the target's MR (%d byte(s), the first"
                             " at %#x)" % (ndiff(got, content), first_diff(got, content)))
            else:
                log("  ok: the READ completed in %.1f s with the right %d MiB" % (t_done, L >> 20))
        if len(rw) != 1 or rw[0].status != 0 or p.rb.read(len(msg), rw[0].wr_id * p.recv_len) != msg:
            probs.append("the SEND behind the READ was not received intact: %s"
                         % [(w.status, w.byte_len) for w in rw])
        else:
            log("  ok: the SEND that waited behind the READ was received")
        moved = ", ".join("%s +%d" % (k, c1[k] - c0[k]) for k in sorted(c1)
                          if c1[k] != c0[k] and "bytes" not in k)
        log("  counters: %s" % moved)
        return probs

    # --- 3. oversize datagrams -----------------------------------------------------------

    def oversize(self):
        with Jumbo(self.a):
            return self._oversize()

    def _oversize(self):
        s = self.s
        w = s.w
        bad = b"\xde\xad\xbe\xef"
        qpn = 0x123456      # the QPN does not matter: no QP is looked up
        big = tp(inj.RC_SEND_ONLY, qpn, 1, payload=pattern(8000, 1))
        huge = tp(inj.RC_SEND_ONLY, qpn, 2, payload=pattern(60000, 2))
        hf = w.frame(huge, icrc_mode=bad, frag=0, ident=0x0515)
        frags = w.split4(hf, size=8952)
        # The longest RoCE packet: BTH, XRCETH + AtomicETH (the largest
        # header set), 4096 bytes of payload, 3 of pad, the ICRC.
        longest = 12 + 4 + 28 + 4096 + 3 + 4
        edge = inj.bth(inj.RC_SEND_ONLY, qpn, 3) + pattern(longest - 12 - 4, 3)
        over = edge + b"\0"
        cases = [
            ("an 8000-byte SEND in one frame", big, [w.frame(big, icrc_mode=bad)],
             {"rcvd_oversize": 1, "rcvd_icrc_err": 0}),
            ("a 60000-byte SEND in %d IP fragments" % len(frags), huge, frags,
             {"rcvd_oversize": 1, "rcvd_icrc_err": 0}),
            ("one byte longer than the longest RoCE packet", over, [w.frame(over, icrc_mode=bad)],
             {"rcvd_oversize": 1, "rcvd_icrc_err": 0}),
            ("as long as the longest RoCE packet (the control)", edge,
             [w.frame(edge, icrc_mode=bad)], {"rcvd_oversize": 0, "rcvd_icrc_err": 1}),
        ]
        probs = []
        for what, t, frames, want in cases:
            log("  --- %s, bad ICRC: UDP payload %d bytes, %d frame(s) of up to %d bytes"
                % (what, len(t) + 4, len(frames), max(len(f) for f in frames)))
            c0 = self.snap.take()
            w.send(frames)
            end = time.monotonic() + 5
            while time.monotonic() < end:
                c1 = self.snap.take()
                if sum(c1[k] - c0[k] for k in ("rcvd_oversize", "rcvd_icrc_err", "rcvd_malformed")
                       if k in c1) >= 1:
                    break
                time.sleep(0.02)
            time.sleep(0.2)
            c1 = self.snap.take()
            pr = []
            for k, n in want.items():
                want_delta(pr, self.snap, c0, c1, k, n, " (%s)" % what)
            moved = ", ".join("%s +%d" % (k, c1[k] - c0[k]) for k in sorted(c1)
                              if c1[k] != c0[k] and "bytes" not in k)
            log("    counters: %s" % (moved or "none moved"))
            log("    ok" if not pr else "    NOT OK (%d problem(s), listed at the end)" % len(pr))
            probs += pr
        return probs


# Each case: (name, method, args).
CASES = [
    ("local_udp_rc", "local_udp", ("rc",)),
    ("local_udp_uc", "local_udp", ("uc",)),
    ("dup_read_amplification", "dup_read", ()),
    ("oversize", "oversize", ()),
    ("backlog_flood", "backlog_flood", ()),
]
NAMES = [c[0] for c in CASES]


def run(a):
    """The sec-wire command: the cases named by --cases (all by default), in
    the table's order. Exit 0 if all passed."""
    want = a.cases.split(",") if a.cases else NAMES
    unknown = [c for c in want if c not in NAMES]
    if unknown:
        log("sec-wire: unknown case(s) %s; known: %s" % (", ".join(unknown), ", ".join(NAMES)))
        return 2
    s = Session(a)
    sw = SecWire(s)
    ok = True
    for name, meth, args in CASES:
        if name not in want:
            continue
        log("### %s%s" % (name, inj._stamp()))
        t0 = time.monotonic()
        try:
            probs = getattr(sw, meth)(*args)
        except Exception:       # pylint: disable=broad-except
            probs = ["exception: %s" % traceback.format_exc().strip().splitlines()[-1]]
            log(traceback.format_exc())
        el = time.monotonic() - t0
        probs = list(dict.fromkeys(probs))      # each once, in order
        for p in probs:
            log("  NOT OK: %s" % p)
        log("RESULT %s %s (%.1f s)%s" % (name, "FAIL" if probs else "ok", el,
                                         (": " + probs[0]) if probs else ""))
        ok &= not probs
    s.close()
    return 0 if ok else 1
