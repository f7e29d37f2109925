"""The sec-wire cases' helpers: counter snapshots, memory readings, an RC or
UC pair between the peer and the target device, a verified exchange over it."""

import os
import subprocess
import time

from roceinj.proto import log, pattern
from roceinj.verbs import qp_to_init, qp_to_rtr, qp_to_rts

# The entry script, which the unprivileged sender runs (udp-forge).
ENTRY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "sroce_inject.py")

MTU = 1024                 # path MTU of every QP here
FAR = 0x400000             # a PSN distance outside any receive window


# --- helpers --------------------------------------------------------------------


class Snap:
    """Counter snapshots that tolerate counters the module does not have."""

    def __init__(self, cnt):
        self.cnt = cnt
        self.have = set(cnt.names)

    def take(self):
        return self.cnt.snap()

    def delta(self, c0, c1, name):
        """c1 - c0 for name, or None if the module has no such counter."""
        if name not in self.have:
            return None
        return c1[name] - c0[name]


def want_delta(problems, snap, c0, c1, name, want, what=""):
    d = snap.delta(c0, c1, name)
    if d is None:
        problems.append("the module has no %s counter" % name)
    elif d != want:
        problems.append("%s +%d, want +%d%s" % (name, d, want, what))
    return d


def meminfo_kb(key):
    with open("/proc/meminfo") as f:
        for ln in f:
            if ln.startswith(key + ":"):
                return int(ln.split()[1])
    return 0


def slab_active(name):
    try:
        with open("/proc/slabinfo") as f:
            for ln in f:
                p = ln.split()
                if p and p[0] == name:
                    return int(p[1])
    except OSError:
        pass
    return -1


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            for j in range(i, min(i + 4096, n)):
                if a[j] != b[j]:
                    return j
    return n if len(a) != len(b) else -1


def ndiff(a, b):
    return sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))


def set_mtu(a, mtu):
    for ns, ifn in ((a.ns, a.ifname), (a.peer_ns, a.peer_ifname)):
        subprocess.run(["ip", "-n", ns, "link", "set", "dev", ifn, "mtu", str(mtu)], check=True)


class Jumbo:
    """Veth MTU 9000 on both ends for a with block, 1500 again after."""

    def __init__(self, a):
        self.a = a

    def __enter__(self):
        if not self.a.peer_ifname:
            raise RuntimeError("--peer-ifname is needed to raise the veth MTU")
        set_mtu(self.a, 9000)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        set_mtu(self.a, 1500)


class Pair:
    """A real connected RC or UC QP pair: qa on the peer device (--peer-dev,
    netns A, requester), qb on the target (--dev, netns B), each with its own
    CQ. mr_b (mr_len bytes, remote write, and read for RC) is the target's
    memory, mr_a the requester's READ destination, sa its send buffer."""

    def __init__(self, s, kind, mr_len, recvs=4, recv_len=4096):
        from pyverbs.pd import PD
        from pyverbs.cq import CQ
        from pyverbs.mr import MR
        from pyverbs.qp import QP, QPCap, QPInitAttr
        a, vb = s.a, s.vb
        e = self.e = vb.e
        self.kind = kind
        self.recv_len = recv_len
        self.pd_a = PD(vb.pctx)
        self.cq_a = CQ(vb.pctx, 64)
        self.cq_b = CQ(vb.ctx, 64)
        lw = e.IBV_ACCESS_LOCAL_WRITE
        acc = lw | e.IBV_ACCESS_REMOTE_WRITE | (e.IBV_ACCESS_REMOTE_READ if kind == "rc" else 0)
        self.acc = acc
        self.mr_b = MR(vb.pd, mr_len, acc)
        self.mr_a = MR(self.pd_a, mr_len, lw)
        self.sa = MR(self.pd_a, 1 << 16, lw)
        self.rb = MR(vb.pd, recvs * recv_len, lw)
        qpt = e.IBV_QPT_RC if kind == "rc" else e.IBV_QPT_UC
        cap = QPCap(max_send_wr=16, max_recv_wr=recvs + 4, max_send_sge=1, max_recv_sge=1)
        self.qa = QP(self.pd_a, QPInitAttr(qp_type=qpt, scq=self.cq_a, rcq=self.cq_a, cap=cap))
        self.qb = QP(vb.pd, QPInitAttr(qp_type=qpt, scq=self.cq_b, rcq=self.cq_b, cap=cap))
        import random
        self.psn_a = random.getrandbits(24)     # qa's send PSN = qb's expected PSN
        self.psn_b = random.getrandbits(24)
        gid_a = vb.pctx.query_gid(1, a.peer_gid_index)
        gid_b = vb.ctx.query_gid(1, a.gid_index)
        self._connect(self.qa, self.qb.qp_num, gid_b, a.peer_gid_index, self.psn_b, self.psn_a)
        self._connect(self.qb, self.qa.qp_num, gid_a, a.gid_index, self.psn_a, self.psn_b)
        for i in range(recvs):
            self.post_recv(i)

    def _connect(self, qp, dqpn, dgid, sgid_index, rq_psn, sq_psn):
        # PMTU 1024; a 1 s ACK timeout: a TCG guest stalls for longer than 67 ms.
        qp_to_init(qp, self.e, self.acc)
        qp_to_rtr(qp, self.e, self.kind, dgid, sgid_index, 3, dqpn, rq_psn)
        qp_to_rts(qp, self.e, self.kind, sq_psn, 18, 7)

    def post_recv(self, slot):
        from pyverbs.wr import RecvWR, SGE
        addr = self.rb.buf + slot * self.recv_len
        self.qb.post_recv(RecvWR(wr_id=slot, num_sge=1, sg=[SGE(addr, self.recv_len, self.rb.lkey)]))

    def _post(self, opcode, wr_id, addr, length, lkey, rdma=None):
        from pyverbs.wr import SendWR, SGE
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[SGE(addr, length, lkey)],
                    send_flags=self.e.IBV_SEND_SIGNALED)
        if rdma:
            wr.set_wr_rdma(rdma[1], rdma[0])
        self.qa.post_send(wr)

    def write(self, data, off, wr_id=11):
        """qa WRITEs data to mr_b + off (from sa)."""
        self.sa.write(data, len(data), 0)
        self._post(self.e.IBV_WR_RDMA_WRITE, wr_id, self.sa.buf, len(data), self.sa.lkey,
                   (self.mr_b.buf + off, self.mr_b.rkey))

    def send(self, data, wr_id=12, off=0x8000):
        self.sa.write(data, len(data), off)
        self._post(self.e.IBV_WR_SEND, wr_id, self.sa.buf + off, len(data), self.sa.lkey)

    def read(self, length, wr_id=13):
        """qa READs length bytes of mr_b into mr_a."""
        self._post(self.e.IBV_WR_RDMA_READ, wr_id, self.mr_a.buf, length, self.mr_a.lkey,
                   (self.mr_b.buf, self.mr_b.rkey))

    @staticmethod
    def poll(cq, n, timeout):
        """Up to n completions of cq within timeout seconds."""
        out = []
        end = time.monotonic() + timeout
        while len(out) < n:
            k, wcs = cq.poll(n - len(out))
            if k:
                out.extend(wcs[:k])
                continue
            if time.monotonic() >= end:
                break
            time.sleep(0.005)
        return out

    def close(self):
        for o in (self.qa, self.qb, self.mr_a, self.mr_b, self.sa, self.rb, self.cq_a, self.cq_b,
                  self.pd_a):
            try:
                o.close()
            except Exception as ex:      # pylint: disable=broad-except
                log("    note: closing %r: %s" % (o, ex))


def verified_exchange(p, content):
    """qa WRITEs 4 KiB into mr_b and SENDs 200 bytes: both arrive intact, and
    nothing else in mr_b changes. Returns problems."""
    probs = []
    data = pattern(4096, 0xC0FFEE)
    off = 0x2000
    p.write(data, off)
    if p.kind == "rc":
        wcs = Pair.poll(p.cq_a, 1, 10)
        if len(wcs) != 1 or wcs[0].status != 0:
            probs.append("exchange: WRITE completion %s" % [w.status for w in wcs])
    want = content[:off] + data + content[off + len(data):]
    end = time.monotonic() + 5
    while time.monotonic() < end and p.mr_b.read(len(want), 0) != want:
        time.sleep(0.01)
    got = p.mr_b.read(len(want), 0)
    if got != want:
        probs.append("exchange: after a WRITE of 4 KiB at %#x the MR differs at %d byte(s), the"
                     " first at %#x" % (off, ndiff(got, want), first_diff(got, want)))
    if p.kind == "uc":
        Pair.poll(p.cq_a, 1, 5)
    msg = pattern(200, 0xBEEF)
    p.send(msg)
    rw = Pair.poll(p.cq_b, 1, 10)
    sw = Pair.poll(p.cq_a, 1, 10)
    if len(rw) != 1 or rw[0].status != 0 or rw[0].byte_len != len(msg):
        probs.append("exchange: SEND receive completion %s" % [(w.status, w.byte_len) for w in rw])
    elif p.rb.read(len(msg), rw[0].wr_id * p.recv_len) != msg:
        probs.append("exchange: the received SEND differs from what was sent")
    if len(sw) != 1 or sw[0].status != 0:
        probs.append("exchange: SEND completion %s" % [w.status for w in sw])
    return probs
