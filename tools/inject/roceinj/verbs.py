"""The target device's resources (pyverbs): PD, CQ, MRs and victim QPs."""

import enum
import random
import types

from .proto import PHANTOM_BASE, UC


# --- QP state transitions (the victims here, secwire_pair's real pairs) -----------


def qp_modify(qp, mask, **kw):
    """ibv_modify_qp with the attributes given by name."""
    from pyverbs.qp import QPAttr
    attr = QPAttr()
    for k, v in kw.items():
        setattr(attr, k, v)
    qp.modify(attr, mask)


def qp_to_init(qp, e, access):
    """RESET -> INIT of a connected (RC/UC) QP, port 1, P_Key index 0."""
    qp_modify(qp, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
              qp_state=e.IBV_QPS_INIT, pkey_index=0, port_num=1, qp_access_flags=access)


def qp_to_rtr(qp, e, kind, dgid, sgid_index, path_mtu, dqpn, rq_psn):
    """INIT -> RTR of a connected QP (kind rc or uc) to dqpn at dgid."""
    from pyverbs.addr import AHAttr, GlobalRoute
    gr = GlobalRoute(dgid=dgid, sgid_index=sgid_index, hop_limit=64)
    ah = AHAttr(port_num=1, is_global=1, gr=gr)
    mask = (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN
            | e.IBV_QP_RQ_PSN)
    kw = dict(qp_state=e.IBV_QPS_RTR, ah_attr=ah, path_mtu=path_mtu,
              dest_qp_num=dqpn, rq_psn=rq_psn)
    if kind == "rc":
        mask |= e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER
        kw.update(max_dest_rd_atomic=8, min_rnr_timer=12)
    qp_modify(qp, mask, **kw)


def qp_to_rts(qp, e, kind, sq_psn, timeout, retry_cnt):
    """RTR -> RTS; an RC QP gets the ACK timeout and retry count given."""
    mask = e.IBV_QP_STATE | e.IBV_QP_SQ_PSN
    kw = dict(qp_state=e.IBV_QPS_RTS, sq_psn=sq_psn)
    if kind == "rc":
        mask |= e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_MAX_QP_RD_ATOMIC
        kw.update(timeout=timeout, retry_cnt=retry_cnt, rnr_retry=7, max_rd_atomic=8)
    qp_modify(qp, mask, **kw)


def pyverbs_constants():
    """pyverbs' IBV_* constants, as ints, in one namespace (e.IBV_QPT_RC):
    module attributes of pyverbs.enums up to rdma-core 56, members of the
    enum classes of pyverbs.libibverbs_enums (ibv_qp_type.IBV_QPT_RC) in 65,
    which has no pyverbs.enums."""
    try:
        import pyverbs.libibverbs_enums as m
    except ImportError:
        import pyverbs.enums as m
    consts = {}
    for name in dir(m):
        v = getattr(m, name)
        if name.startswith("IBV_"):
            consts[name] = v
        elif isinstance(v, type) and issubclass(v, enum.Enum):
            for member in v:
                consts.setdefault(member.name, int(member))
    return types.SimpleNamespace(**consts)


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
        e = self.e = pyverbs_constants()
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
        qp_modify(self.qp, mask, **kw)

    def bring_up(self, psn=None, sq_psn=None):
        """RESET -> INIT -> RTR [-> RTS] with a fresh expected PSN; posts the
        receive WQEs."""
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
            qp_to_init(self.qp, e, self.access if self.kind == "rc" else
                       self.access & (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE))
        self.repost()
        if self.state_want == "init":
            return
        mtu_enum = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}[self.mtu]
        if self.kind == "ud":
            self.modify(e.IBV_QP_STATE, qp_state=e.IBV_QPS_RTR)
        else:
            qp_to_rtr(self.qp, e, self.kind, self.vb.dgid6 if self.ipv6 else self.vb.dgid4,
                      self.vb.gid6 if self.ipv6 else self.vb.gid4, mtu_enum, self.remote, self.psn)
        if self.state_want == "rtr":
            return
        qp_to_rts(self.qp, e, self.kind, self.sq_psn, self.timeout, self.retry_cnt)

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

    def _signaled_wr(self, opcode, wr_id, length, off=0):
        """A signaled send WR of one SGE: `length` bytes at `off` of the local MR."""
        from pyverbs.wr import SendWR, SGE
        return SendWR(wr_id=wr_id, opcode=opcode, num_sge=1,
                      sg=[SGE(self.vb.lmr.buf + off, length, self.vb.lmr.lkey)],
                      send_flags=self.vb.e.IBV_SEND_SIGNALED)

    def post_read(self, length, raddr, rkey, wr_id=1):
        wr = self._signaled_wr(self.vb.e.IBV_WR_RDMA_READ, wr_id, length)
        wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)

    def post_send(self, length, wr_id=3):
        self.qp.post_send(self._signaled_wr(self.vb.e.IBV_WR_SEND, wr_id, length))

    def post_fetch_add(self, raddr, rkey, add, off, wr_id=2):
        wr = self._signaled_wr(self.vb.e.IBV_WR_ATOMIC_FETCH_AND_ADD, wr_id, 8, off)
        wr.set_wr_atomic(rkey, raddr, add, 0)
        self.qp.post_send(wr)
