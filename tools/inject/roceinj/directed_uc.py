"""Directed cases at a UC QP: no NAKs, the message is dropped, the QP stays
up."""

from .proto import RC_SEND_MIDDLE, RC_WRITE_ONLY, UC, reth, tp
from .directed_common import probe


def uc_drops(d):
    sess, uc, mr = d.sess, d.uc, d.mr
    frames = [sess.f4(tp(UC | RC_SEND_MIDDLE, uc.qpn, uc.psn, payload=b"m" * 1024)),
              sess.f4(tp(UC | RC_WRITE_ONLY, uc.qpn, uc.psn + 1, reth(mr.buf, mr.rkey ^ 0x77, 8),
                         b"w" * 8))]
    sess.case("UC: SEND_MIDDLE without FIRST, WRITE with a bad R_Key (dropped, no answer)", frames,
              atleast={"out_of_seq_request": 2}, after=sess.expect_state(uc, "RTR"))
    uc.psn += 2


CASES = [
    probe("uc", " (UC)"),
    uc_drops,
    probe("uc", " (UC, still alive)"),
]
