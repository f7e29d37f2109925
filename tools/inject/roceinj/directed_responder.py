"""Directed cases at the responder: the PSN window, remote access
violations (each NAKed, each kills its QP), valid RDMA checked in memory."""

import struct

from .proto import (RC_ATOMIC_WRITE, RC_CMP_SWAP, RC_FETCH_ADD, RC_READ_REQ, RC_SEND_MIDDLE,
                    RC_SEND_ONLY_INV, RC_WRITE_FIRST, RC_WRITE_ONLY, WC_LOC_LEN_ERR,
                    WC_LOC_PROT_ERR, WC_REM_INV_REQ_ERR, WC_WR_FLUSH_ERR, atomiceth, pattern, reth,
                    tp)
from .verbs import Victim
from .directed_common import NAK_COUNTER, probe


# --- PSN window --------------------------------------------------------------------


def psn_ahead(d):
    sess, rc = d.sess, d.rc
    e = rc.psn
    frames = [sess.f4(sess.send_only(rc, b"abcd", psn=e + dl)) for dl in (1, 1000, 0x7FFFFF)]
    sess.case("PSN ahead of the expected one (out of sequence): one sequence NAK", frames,
              atleast={"out_of_seq_request": 3, "seq_nak_sent": 1},
              replies=[(rc, "nak-seq", e)])


def psn_behind(d):
    sess, rc, mr = d.sess, d.rc, d.mr
    e = rc.psn
    frames = [sess.f4(sess.send_only(rc, b"abcd", psn=e - dl)) for dl in (1, 2, 0x800000)]
    frames.append(sess.f4(tp(RC_READ_REQ, rc.qpn, e - 3, reth(mr.buf, mr.rkey, 64))))
    sess.case("PSN behind (duplicates): re-ACKed, unknown old READ ignored", frames,
              atleast={"duplicate_request": 4},
              replies=[(rc, "ack", e - 1)] * 3)


def duplicate_after_read(d):
    # A duplicate right after a READ: the newest PSN is the READ's, and
    # rdma_rxe's requester completes a READ from an ACK that names its
    # PSN, without the data. The duplicate is re-ACKed at its own PSN.
    sess, rc, mr = d.sess, d.rc, d.mr
    e = rc.psn
    sess.case("READ in sequence", [sess.f4(tp(RC_READ_REQ, rc.qpn, e, reth(mr.buf, mr.rkey, 64)))],
              replies=[(rc, "read-only", e)])
    rc.psn += 1
    sess.case("duplicate SEND after a READ: re-ACKed at its own PSN, not the READ's",
              [sess.f4(sess.send_only(rc, b"abcd", psn=e - 1))], atleast={"duplicate_request": 1},
              replies=[(rc, "ack", e - 1)])


# --- remote access violations: each NAKed, each kills its QP -----------------------

# (title, the NAK, the request to a fresh victim v): each to a QP of its
# own, "TITLE -> NAK, QP to error".
FATAL = [
    ("WRITE with an unknown R_Key", "nak-acc",
     lambda mr, vb, v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey ^ 0x5A5A00, 16),
                          b"x" * 16, ackreq=1)),
    ("WRITE past the end of the MR", "nak-acc",
     lambda mr, vb, v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf + mr.length - 8, mr.rkey, 16),
                          b"x" * 16, ackreq=1)),
    ("WRITE whose VA + length wraps the address space", "nak-acc",
     lambda mr, vb, v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(2**64 - 8, mr.rkey, 16), b"x" * 16,
                          ackreq=1)),
    ("READ whose VA + length wraps the address space", "nak-acc",
     lambda mr, vb, v: tp(RC_READ_REQ, v.qpn, v.psn, reth(2**64 - 0x100, mr.rkey, 0x1000))),
    ("READ longer than 2^31 bytes", "nak-inv",
     lambda mr, vb, v: tp(RC_READ_REQ, v.qpn, v.psn, reth(mr.buf, mr.rkey, 0x80000001))),
    ("READ from an MR without remote read rights", "nak-acc",
     lambda mr, vb, v: tp(RC_READ_REQ, v.qpn, v.psn, reth(vb.mr_wo.buf, vb.mr_wo.rkey, 64))),
    ("FETCH_ADD with an unknown R_Key", "nak-acc",
     lambda mr, vb, v: tp(RC_FETCH_ADD, v.qpn, v.psn, atomiceth(mr.buf, mr.rkey ^ 0x100, 1))),
    ("CMP_SWAP on a misaligned address", "nak-inv",
     lambda mr, vb, v: tp(RC_CMP_SWAP, v.qpn, v.psn, atomiceth(mr.buf + 4, mr.rkey, 1, 0))),
    ("FETCH_ADD just past the end of the MR", "nak-acc",
     lambda mr, vb, v: tp(RC_FETCH_ADD, v.qpn, v.psn, atomiceth(mr.buf + mr.length, mr.rkey, 1))),
    ("ATOMIC_WRITE on a misaligned address", "nak-inv",
     lambda mr, vb, v: tp(RC_ATOMIC_WRITE, v.qpn, v.psn, reth(mr.buf + 2, mr.rkey, 8), b"\0" * 8,
                          ackreq=1)),
    ("WRITE_ONLY whose payload differs from its DMA length", "nak-inv",
     lambda mr, vb, v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey, 64), b"y" * 32,
                          ackreq=1)),
    ("WRITE_FIRST with a DMA length over 2^31", "nak-inv",
     lambda mr, vb, v: tp(RC_WRITE_FIRST, v.qpn, v.psn, reth(mr.buf, mr.rkey, 0x80000001),
                          b"z" * 1024)),
    ("SEND_MIDDLE without a SEND_FIRST", "nak-inv",
     lambda mr, vb, v: tp(RC_SEND_MIDDLE, v.qpn, v.psn, payload=b"m" * 1024)),
    ("SEND_ONLY_INV naming an R_Key that is not a fast-reg MR", "nak-inv",
     lambda mr, vb, v: tp(RC_SEND_ONLY_INV, v.qpn, v.psn, struct.pack("!I", mr.rkey), b"abcd",
                          ackreq=1)),
]


def nak_kills(d, v, title, t, kind, cqes=None, **kw):
    """Request t to victim v is NAKed with kind (its counter moves by
    one), and v goes to the error state."""
    d.sess.case(title, [d.f4(t)], expect={NAK_COUNTER[kind]: 1}, replies=[(v, kind, v.psn)],
                cqes=cqes, after=d.sess.expect_state(v, "ERR"), **kw)


def fatal(d):
    for title, kind, build in FATAL:
        v = Victim(d.vb, "rc-fatal-%d" % len(d.dead), "rc", "rtr", recvs=2)
        want_cqe = {}
        if "SEND" in title:
            want_cqe = {v: [WC_REM_INV_REQ_ERR if "INV" in title else WC_WR_FLUSH_ERR]}
        nak_kills(d, v, "%s -> %s, QP to error" % (title, kind), build(d.mr, d.vb, v), kind,
                  want_cqe)
        d.dead.append(v)


def small_rbuf(d):
    v = Victim(d.vb, "rc-small-rbuf", "rc", "rtr", recvs=2, recv_len=256)
    nak_kills(d, v, "SEND longer than the receive buffer -> nak-inv, local length error",
              d.sess.send_only(v, pattern(512, 4)), "nak-inv", {v: [WC_LOC_LEN_ERR]})
    d.dead.append(v)


def no_remote_write(d):
    mr = d.mr
    v = Victim(d.vb, "rc-no-access", "rc", "rtr", recvs=2, access=d.vb.e.IBV_ACCESS_LOCAL_WRITE)
    nak_kills(d, v, "WRITE to a QP without remote write access -> nak-acc",
              tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey, 8), b"w" * 8), "nak-acc")
    d.dead.append(v)


def bad_lkey(d):
    v = Victim(d.vb, "rc-bad-lkey", "rc", "rtr", recvs=2, bad_lkey=True)
    nak_kills(d, v, "SEND into a receive WQE whose L_Key is invalid -> nak-op (remote operational"
              " error), local protection error", d.sess.send_only(v, b"abcd"), "nak-op",
              {v: [WC_LOC_PROT_ERR]})
    d.dead.append(v)


def to_dead(d):
    # Every QP the cases above put in error: dropped, no answer.
    d.sess.case("requests to QPs in the error state",
                [d.f4(d.sess.send_only(v, b"abcd")) for v in d.dead],
                expect={"rcvd_bad_qp_state": len(d.dead)})


def no_recv(d):
    sess = d.sess
    v = Victim(d.vb, "rc-no-recv", "rc", "rtr", recvs=0)
    sess.case("SEND with no receive posted -> RNR NAK, QP stays up",
              [sess.f4(sess.send_only(v, b"abcd"))], atleast={"rnr_nak_sent": 1},
              replies=[(v, "rnr", v.psn)], after=sess.expect_state(v, "RTR"))
    v.nrecv = 2
    v.repost()
    sess.probe(v, " (after the RNR NAK)")


def over_pmtu(d):
    # PMTU 256 QP: IBTA C9-92 (payload <= PMTU for ONLY/LAST packets).
    v = Victim(d.vb, "rc-pmtu256", "rc", "rtr", recvs=2, mtu=256)
    nak_kills(d, v, "SEND_ONLY longer than the QP's path MTU (512 > 256) -> nak-inv",
              d.sess.send_only(v, pattern(512, 5)), "nak-inv", {v: [WC_WR_FLUSH_ERR]}, wait=2)


# --- valid RDMA against the victim, checked in memory ------------------------------

OFF = 0x1000        # where the WRITE lands, and the READ reads back


def valid_write(d):
    sess, rc, mr = d.sess, d.rc, d.mr
    data = pattern(256, 6)
    t = tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf + OFF, mr.rkey, len(data)), data, ackreq=1)

    def wrote():
        return [] if mr.read(len(data), OFF) == data else ["MR contents differ from the WRITE"]
    sess.case("valid WRITE_ONLY lands in the MR", [sess.f4(t)], replies=[(rc, "ack", rc.psn)],
              after=wrote)
    rc.psn += 1


def valid_read(d):
    sess, rc, mr = d.sess, d.rc, d.mr
    t = tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf + OFF, mr.rkey, 2048 + 256))

    def read_back():
        pl = b"".join(r.payload for r in sess.last_replies)
        want = mr.read(2048 + 256, OFF)
        return [] if pl == want else ["READ response payload differs from the MR"]
    sess.case("valid READ (3 responses at PMTU 1024)", [sess.f4(t)],
              replies=[(rc, "read-first", rc.psn), (rc, "read-middle", rc.psn + 1),
                       (rc, "read-last", rc.psn + 2)], after=read_back)
    rc.psn += 3


def valid_fetch_add(d):
    # Then the same FETCH_ADD again: a duplicate, answered from the cache.
    sess, rc, mr = d.sess, d.rc, d.mr
    mr.write(struct.pack("<Q", 1000), 8, 0x2000)
    t = tp(RC_FETCH_ADD, rc.qpn, rc.psn, atomiceth(mr.buf + 0x2000, mr.rkey, 5))

    def added():
        r = sess.last_replies[0]
        probs = []
        if r.orig != 1000:
            probs.append("atomic ack original value %r, want 1000" % r.orig)
        if struct.unpack("<Q", mr.read(8, 0x2000))[0] != 1005:
            probs.append("memory after FETCH_ADD is not 1005")
        return probs
    sess.case("valid FETCH_ADD", [sess.f4(t)], replies=[(rc, "atomic-ack", rc.psn)], after=added)
    rc.psn += 1
    sess.case("the same FETCH_ADD again (duplicate): answered from the cache, not re-executed",
              [sess.f4(t)], atleast={"duplicate_request": 1},
              replies=[(rc, "atomic-ack", rc.psn - 1)], after=added)


CASES = [
    # PSN window.
    psn_ahead,
    psn_behind,
    probe("rc", " (in sequence again)"),
    duplicate_after_read,
    probe("rc", " (after the READ)"),
    # Remote access violations.
    fatal,
    small_rbuf,
    no_remote_write,
    bad_lkey,
    to_dead,
    no_recv,
    over_pmtu,
    # Valid RDMA.
    valid_write,
    valid_read,
    valid_fetch_add,
]
