"""Directed cases at the requester: the completer with responses nobody
asked for and with a READ and an atomic outstanding; and its timers:
stale ACKs and repeated NAKs to a QP whose peer is gone, an RNR NAK
between sequence NAKs, a READ outstanding across SQD."""

import struct
import time

from .proto import (AETH_ACK, AETH_RNR, NAK_ACC, NAK_SEQ, RC_ACK, RC_ATOMIC_ACK,
                    RC_READ_RESP_FIRST, RC_READ_RESP_LAST, RC_READ_RESP_MIDDLE, RC_READ_RESP_ONLY,
                    WC_RETRY_EXC_ERR, WC_SUCCESS, aeth, log, pattern, tp)
from .verbs import Victim
from .directed_common import EACH, run_drops


# --- the completer: responses nobody asked for ------------------------------------


def unasked(d):
    """Responses to rts, which sent nothing: each dropped by the
    completer, the QP stays RTS."""
    sess, rts = d.sess, d.rts
    s = rts.sq_psn
    stays_rts = {"atleast": {"completer_drop": EACH}, "after": sess.expect_state(rts, "RTS")}
    run_drops(sess, [
        ("READ responses nobody asked for", lambda: [
            sess.f4(tp(RC_READ_RESP_ONLY, rts.qpn, s, aeth(AETH_ACK), pattern(64, 1))),
            sess.f4(tp(RC_READ_RESP_FIRST, rts.qpn, s, aeth(AETH_ACK), pattern(1024, 1))),
            sess.f4(tp(RC_READ_RESP_MIDDLE, rts.qpn, s + 1, payload=pattern(1024, 2))),
            sess.f4(tp(RC_READ_RESP_LAST, rts.qpn, s + 2, aeth(AETH_ACK), pattern(8, 3)))], stays_rts),
        ("ACKs for unsent PSNs, an unrequested atomic ACK, a reserved AETH syndrome", lambda: [
            sess.f4(tp(RC_ACK, rts.qpn, s + 10, aeth(AETH_ACK))),
            sess.f4(tp(RC_ACK, rts.qpn, s + 0x400000, aeth(AETH_ACK))),
            sess.f4(tp(RC_ATOMIC_ACK, rts.qpn, s, aeth(AETH_ACK) + struct.pack("!Q", 7))),
            sess.f4(tp(RC_ACK, rts.qpn, s - 1, aeth(0x40)))], stays_rts),
        ("NAKs for PSNs never sent: ignored, counted, the QP stays RTS", lambda: [
            sess.f4(tp(RC_ACK, rts.qpn, s + 10, aeth(NAK_ACC))),
            sess.f4(tp(RC_ACK, rts.qpn, s + 0x100, aeth(NAK_SEQ)))], stays_rts),
    ])


def ghost_nak(d):
    sess = d.sess
    ghost = Victim(d.vb, "rc-rts-ghost", "rc", "rts", recvs=2)
    sess.case("NAK (remote access) for the next, unsent PSN of an idle QP: ignored",
              [sess.f4(tp(RC_ACK, ghost.qpn, ghost.sq_psn, aeth(NAK_ACC)))],
              atleast={"completer_drop": 1}, after=sess.expect_state(ghost, "RTS"), wait=2)


# --- the completer with a READ and an atomic outstanding --------------------------


def outstanding(d):
    """A READ (PSNs r, r + 1) and a FETCH_ADD (r + 2) to the phantom: wrong
    responses are dropped, the right ones complete both WRs."""
    sess, vb = d.sess, d.vb
    req = Victim(vb, "rc-req", "rc", "rts", recvs=0, timeout=20, retry_cnt=7)
    req.post_read(2048, 0x10000, 0x1234)
    req.post_fetch_add(0x20000, 0x1234, 1, off=4096)
    r = req.sq_psn
    time.sleep(0.1)
    sess.w.drain()      # the READ and atomic requests themselves (to the phantom)
    frames = [sess.f4(tp(RC_READ_RESP_FIRST, req.qpn, r + 1, aeth(AETH_ACK), pattern(1024, 1))),
              sess.f4(tp(RC_READ_RESP_FIRST, req.qpn, r, aeth(AETH_ACK), pattern(512, 1))),
              sess.f4(tp(RC_READ_RESP_LAST, req.qpn, r, aeth(AETH_ACK), pattern(8, 1))),
              sess.f4(tp(RC_READ_RESP_ONLY, req.qpn, r, aeth(0x62), pattern(8, 1))),
              sess.f4(tp(RC_ATOMIC_ACK, req.qpn, r, aeth(AETH_ACK) + struct.pack("!Q", 1)))]
    sess.case("READ responses with the wrong PSN, length or position, a NAK-syndrome READ"
              " response, an atomic ACK for a READ", frames, atleast={"completer_drop": 5},
              after=sess.expect_state(req, "RTS"))
    resp = pattern(2048, 77)
    frames = [sess.f4(tp(RC_READ_RESP_FIRST, req.qpn, r, aeth(AETH_ACK), resp[:1024])),
              sess.f4(tp(RC_READ_RESP_LAST, req.qpn, r + 1, aeth(AETH_ACK), resp[1024:])),
              sess.f4(tp(RC_ATOMIC_ACK, req.qpn, r + 3, aeth(AETH_ACK) + struct.pack("!Q", 9))),
              sess.f4(tp(RC_ATOMIC_ACK, req.qpn, r + 2, aeth(AETH_ACK) + struct.pack("!Q", 41)))]

    def completed():
        probs = []
        if vb.lmr.read(2048, 0) != resp:
            probs.append("READ data differs from the responses")
        if struct.unpack("<Q", vb.lmr.read(8, 4096))[0] != 41:
            probs.append("FETCH_ADD result is not the original value 41")
        return probs
    sess.case("the right READ responses and atomic ACK complete the WRs (a wrong-PSN atomic ACK"
              " in between is dropped)", frames, atleast={"completer_drop": 1},
              cqes={req: [WC_SUCCESS, WC_SUCCESS]}, after=completed)
    sess.case("ACK for a PSN the requester never sent, after completion",
              [sess.f4(tp(RC_ACK, req.qpn, r + 5, aeth(AETH_ACK)))],
              atleast={"completer_drop": 1}, after=sess.expect_state(req, "RTS"))


# --- stale ACKs and repeated NAKs do not keep a QP whose peer is gone alive --------
# A READ to the phantom, which never answers, and a response every
# 10 ms. Only progress may push the ACK timeout back - not a response,
# nor what a response makes the requester resend - and a sequence NAK
# is gone back for once (a responder NAKs a gap once, C9-106): with
# timeout 17 (537 ms) and retry_cnt 1 the READ fails with RETRY_EXC_ERR
# after two timeouts (0.54 + 1.07 s) while the responses still come
# (a shorter timeout ran out before the stream began on the debug
# kernel, and the case then checked nothing: it says so now). The
# READ goes out once per timeout, plus once for the first sequence NAK,
# or at most once per ACK past it (the responder answers each duplicate
# with one, so a repeat means the resent READ's response was lost too).
# A module that re-arms on every response, or on every resend, keeps
# the QP in RTS, resending for as long as the stream lasts.

# (label, the response to the READ's QP q, what they are, the resends
# the stream may ask for: "none", "once", or "each" frame at most).
DEAD_PEER = [
    # An ACK of the PSN before the READ: a duplicate, valid, nothing new.
    ("stale", lambda q: tp(RC_ACK, q.qpn, q.sq_psn - 1, aeth(AETH_ACK)), "stale ACKs", "none"),
    # A sequence NAK of the READ's PSN: a copy of one NAK, or a forgery.
    ("nak", lambda q: tp(RC_ACK, q.qpn, q.sq_psn, aeth(NAK_SEQ)), "repeated sequence NAKs",
     "once"),
    # An ACK of the READ's PSN: its response is lost (an implied NAK).
    ("implied", lambda q: tp(RC_ACK, q.qpn, q.sq_psn, aeth(AETH_ACK)),
     "repeated ACKs past the READ", "each"),
]


class DeadPeerWatch:
    """The stream's between() and after() of one dead-peer case."""

    def __init__(self, sess, dead, what, resends, bound):
        self.sess, self.dead, self.what, self.resends, self.bound = sess, dead, what, resends, bound
        # The READ itself and one resend per timeout, plus one for a NAK.
        self.max_sent = 2 + (1 if resends == "once" else 0)
        self.t0, self.left, self.sent = time.monotonic(), None, 0
        self.own0, self.late = sess.own_requests, False

    def left_rts(self):
        # Stop once it failed. The response already on its way when it
        # failed arrives at a QP in error: rcvd_bad_qp_state, at most once.
        self.sent += 1
        if self.dead.state() != self.dead.vb.e.IBV_QPS_RTS:
            self.left = time.monotonic() - self.t0
            self.late = self.sent == 1
        return self.left is not None

    def failed_in_time(self):
        left, what = self.left, self.what
        sent = self.sess.own_requests - self.own0
        most = self.max_sent + (self.sent if self.resends == "each" else 0)
        probs = []
        if self.late:
            probs.append("the QP had left RTS by the first of the %s: its timeouts ran"
                         " out before the stream began, and the case checked nothing" % what)
        elif left is None:
            probs.append("the QP stayed in RTS through %d %s over %.1f s: they kept its ACK"
                         " timeout from firing" % (self.sent, what, time.monotonic() - self.t0))
        elif left > self.bound:
            probs.append("the QP left RTS %.2f s after the first of the %s, bound %.1f s"
                         % (left, what, self.bound))
        if sent > most:
            probs.append("the READ went out %d times, at most %d: the %s made it resend"
                         % (sent, most, what))
        if not probs:
            log("    the QP left RTS %.2f s after the first of the %s, %d sent; the READ"
                " went out %d time(s)" % (left, what, self.sent, sent))
        return probs


def dead_peer(label, mkframe, what, resends):
    """A table entry: the DEAD_PEER case of label."""
    def run(d):
        sess = d.sess
        dead = Victim(d.vb, "rc-dead-peer-" + label, "rc", "rts", recvs=0, timeout=17,
                      retry_cnt=1)
        dead.post_read(64, 0x10000, 0x1234)
        frame = sess.f4(mkframe(dead))
        n_frames = 300
        watch = DeadPeerWatch(sess, dead, what, resends, bound=2.5)
        watch.t0 = time.monotonic()
        sess.case("%s every 10 ms do not keep a QP whose peer never answers alive: its READ"
                  " fails with RETRY_EXC_ERR after two ACK timeouts, sent at most %s"
                  % (what, "%d times" % watch.max_sent if resends != "each" else
                     "once per timeout and once per ACK"), [frame] * n_frames,
                  atleast=dict({"retry_exceeded_err": 1},
                               **({"completer_drop": 1} if resends == "once" else {})),
                  upto={"rcvd_bad_qp_state": 1},
                  cqes={dead: [WC_RETRY_EXC_ERR]}, pace=0.01, between=watch.left_rts,
                  after=watch.failed_in_time)
    run.__name__ = "dead_peer_" + label
    return run


# --- an RNR NAK ends "gone back for this NAK already" ------------------------------
# A sequence NAK of a SEND's PSN, an RNR NAK of it (the responder turned
# the PSN away, and awaits it afresh), then a sequence NAK of it again:
# the second one is a new gap's, not a copy of the first, and the
# requester goes back for it too. So the SEND goes out again three
# times: for the first NAK, after the RNR wait (0.01 ms), for the second
# NAK. A module that keeps "gone back for" across the RNR NAK drops the
# second NAK (completer_drop), and resends twice. Timeout 20 (4.3 s): no
# ACK timeout resends meanwhile, and nothing gave a round-trip sample,
# so no tail loss probe either; the QP is put in error after the case.


def nak_rnr_nak(d):
    sess, vb = d.sess, d.vb
    rnr = Victim(vb, "rc-nak-rnr-nak", "rc", "rts", recvs=0, timeout=20, retry_cnt=1)
    own = sess.own_requests
    rnr.post_send(64)
    # Its first transmission, seen before the case (which starts by
    # draining the capture), so that only the resends are counted.
    t_end = time.monotonic() + 5
    while sess.own_requests == own and time.monotonic() < t_end:
        sess.answers()
        time.sleep(0.02)
    own0, first = sess.own_requests, sess.own_requests - own

    def resent_three():
        time.sleep(1.0)
        sess.answers()
        sent = sess.own_requests - own0
        if first != 1:
            return ["the SEND went out %d times before the first NAK, want once" % first]
        if sent != 3:
            return ["the SEND went out again %d times, want 3 (for the NAK, after the RNR wait,"
                    " and for the second NAK)%s" % (
                        sent, ": the NAK after the RNR NAK was taken for a repeat" if sent == 2
                        else "")]
        return []
    sess.case("a sequence NAK, an RNR NAK, a sequence NAK of the same PSN: the requester goes back"
              " for each", [sess.f4(tp(RC_ACK, rnr.qpn, rnr.sq_psn, aeth(NAK_SEQ))),
                            sess.f4(tp(RC_ACK, rnr.qpn, rnr.sq_psn, aeth(AETH_RNR | 1))),
                            sess.f4(tp(RC_ACK, rnr.qpn, rnr.sq_psn, aeth(NAK_SEQ)))],
              pace=0.3, after=resent_three)
    # Ended here, whatever the case found (after() runs only if nothing
    # else failed).
    rnr.modify(vb.e.IBV_QP_STATE, qp_state=vb.e.IBV_QPS_ERR)


# --- SQD: what started before it is still recovered ---------------------------------
# A READ outstanding when its QP goes RTS -> SQD must complete before
# SQD drains, so its ACK timeout still runs and resends it: to a peer
# that never answers, it fails with RETRY_EXC_ERR after two timeouts. A
# module that stops the ACK timer's work in SQD leaves it outstanding,
# and the QP in SQD, for ever.
# Timeout 17 (0.54 + 1.07 s): with 14 (67 + 134 ms) the loaded debug
# kernel failed the READ before the case began, which then checked
# nothing (it says so now).


def sqd_dead_peer(d):
    sess, vb = d.sess, d.vb
    sqd = Victim(vb, "rc-sqd-dead-peer", "rc", "rts", recvs=0, timeout=17, retry_cnt=1)
    sqd.post_read(64, 0x10000, 0x1234)
    sqd.modify(vb.e.IBV_QP_STATE, qp_state=vb.e.IBV_QPS_SQD)
    sqd_before = sqd.state_name()

    def sqd_failed():
        if sqd_before != "SQD":
            return ["the QP was in %s, not SQD, when the case began: it checked nothing"
                    % sqd_before]
        st = sqd.state_name()
        return [] if st == "ERR" else ["the QP is in %s, not ERR" % st]
    sess.case("a READ outstanding when its QP went to SQD, to a peer that never answers: resent"
              " in SQD, it fails with RETRY_EXC_ERR after two ACK timeouts", [],
              atleast={"retry_exceeded_err": 1}, cqes={sqd: [WC_RETRY_EXC_ERR]},
              after=sqd_failed)


CASES = ([unasked, ghost_nak, outstanding]
         + [dead_peer(*entry) for entry in DEAD_PEER]
         + [nak_rnr_nak, sqd_dead_peer])
