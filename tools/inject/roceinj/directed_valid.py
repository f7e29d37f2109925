"""Directed cases, first: valid packets. The builders, the ICRC and its
masks are right, and fields that must not matter do not."""

from .proto import WC_SUCCESS, pattern
from .directed_common import probe


def accept(title, frames):
    """A table entry: a valid SEND to rc with fields that must not matter
    (frames(d): the frames of one SEND): ACKed and received."""
    def run(d):
        sess, rc = d.sess, d.rc
        sess.case(title, frames(d), replies=[(rc, "ack", rc.psn)], cqes={rc: [WC_SUCCESS]},
                  after=lambda: sess._consumed(rc))
        rc.psn += 1
    run.__name__ = "accept"
    return run


CASES = [
    probe("rc", " (IPv4)"),
    probe("rc6", " (IPv6)"),
    probe("rc", ": TOS CE, TTL 1, FECN/BECN/resv6 set (ICRC-invariant fields)", tos=3, ttl=1),
    # Valid SENDs to rc with fields that must not matter: each ACKed and received.
    accept("valid SEND with FECN, BECN, resv6 set",
           lambda d: [d.f4(d.sess.send_only(d.rc, pattern(64, 7), fecn=1, becn=1, resv6=0x3F))]),
    probe("rc6", ": traffic class 0xff, flow label 0xabcde, hop limit 1",
          tc=0xFF, fl=0xABCDE, hlim=1),
    accept("UDP length shorter than the IP payload (trailing bytes ignored)",
           lambda d: [d.f4(d.sess.send_only(d.rc, pattern(64, 8)),
                           trailer=b"\xde\xad\xbe\xef" * 3)]),
    accept("SEND in two IP fragments",
           lambda d: d.sess.w.fragments(d.sess.send_only(d.rc, pattern(1000, 9)), ident=0x5101,
                                        frag_payload=512)),
    accept("P_Key 0x7fff (limited member of the default partition)",
           lambda d: [d.f4(d.sess.send_only(d.rc, pattern(32, 10), pkey=0x7FFF))]),
    probe("ud", " (UD, right Q_Key)"),
]
