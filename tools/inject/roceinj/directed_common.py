"""What the directed cases share: their context, the drop-table runner, and
the table entries every group uses (a probe of a victim)."""

from .proto import log
from .verbs import Victim


# In a table's check: as many as there are frames.
EACH = None

# The counter each NAK moves at the target.
NAK_COUNTER = {"nak-acc": "rem_access_nak_sent", "nak-inv": "rem_inv_req_nak_sent",
               "nak-op": "rem_op_nak_sent"}


def run_drops(sess, table):
    """Run a table of cases: each (title, frames(): the frames to send, the
    check: Session.case's keywords, where a counter wanting EACH wants one
    per frame). frames() is called when the case's turn comes."""
    for title, frames, check in table:
        fr = frames()
        kw = {k: ({c: len(fr) if n is EACH else n for c, n in v.items()} if k in ("expect", "atleast")
                  else v) for k, v in check.items()}
        sess.case(title, fr, **kw)


class Directed:
    """The context of the directed cases: the session, and the victims that
    live through all of them (each case that needs a QP of its own makes
    it when its turn comes: the QPs, and the random PSNs they draw, come
    in the same order on every run of a seed)."""

    def __init__(self, sess):
        a, vb = sess.a, sess.vb
        self.sess, self.a, self.vb, self.mr = sess, a, vb, vb.mr
        self.f4 = sess.f4
        self.v6 = bool(a.dst_ip6)
        self.rc = Victim(vb, "rc-main", "rc", "rtr", recvs=16)
        self.rc6 = Victim(vb, "rc-v6", "rc", "rtr", recvs=8, ipv6=True) if a.dst_ip6 else None
        self.rts = Victim(vb, "rc-rts", "rc", "rts", recvs=4)
        self.init = Victim(vb, "rc-init", "rc", "init", recvs=2)
        self.uc = Victim(vb, "uc", "uc", "rtr", recvs=8)
        self.ud = Victim(vb, "ud", "ud", "rts", recvs=8)
        # The QPs the remote access violations put in error (their
        # requests are then answered by nobody: rcvd_bad_qp_state).
        self.dead = []
        log("victims on %s: %s" % (a.dev, ", ".join("%s qpn %#x psn %#x" % (v.name, v.qpn, v.psn)
                                                  for v in vb.victims)))
        log("MR va %#x len %#x rkey %#x; write-only MR rkey %#x" % (self.mr.buf, self.mr.length,
                                                                  self.mr.rkey, vb.mr_wo.rkey))


def probe(victim, tag, **framekw):
    """A table entry: Session.probe of the named victim (none if it does
    not exist: rc6 without IPv6), a valid SEND ACKed and received."""
    def run(d):
        v = getattr(d, victim)
        if v:
            d.sess.probe(v, tag, **framekw)
    run.__name__ = "probe_" + victim
    return run
