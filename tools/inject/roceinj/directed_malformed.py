"""Directed cases: lengths, truncation, ICRC; QP type, state, keys, QPN.
Packets the target must drop and count, nothing else: tables run by
run_drops()."""

from .proto import (AETH_ACK, CNP, GSI_QKEY, MCAST_QPN, RC_ACK, RC_ATOMIC_ACK, RC_ATOMIC_WRITE,
                    RC_CMP_SWAP, RC_READ_REQ, RC_SEND_FIRST, RC_SEND_LAST, RC_SEND_MIDDLE,
                    RC_SEND_ONLY, RC_SEND_ONLY_IMM, RC_WRITE_FIRST, RC_WRITE_ONLY,
                    RESERVED_OPCODES, UC, UD_SEND_ONLY, XRC, aeth, atomiceth, deth, pattern, reth,
                    tp)
from .directed_common import EACH, probe, run_drops


# Reserved and unimplemented opcodes: RD, IB CNP 0x80, FLUSH, vendor.
RSV = [0x15, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1E, 0x1F, 0x2C, 0x3F, 0x40, 0x4C, 0x5F, 0x60,
       0x66, 0x7F, 0x80, 0x82, 0x9F, 0xB5, 0xBE, 0xC0, 0xE0, 0xFF]


def lengths(d):
    """Lengths, truncation, ICRC, padding, opcodes, transport version: each
    dropped as malformed (or by UDP, or as an ICRC error)."""
    sess, rc, rts, ud, mr, f4, v6 = d.sess, d.rc, d.rts, d.ud, d.mr, d.f4, d.v6
    full = sess.send_only(rc, pattern(16, 11))
    psn = rc.psn
    t = sess.send_only(rc, pattern(64, 12))
    assert all(op in RESERVED_OPCODES for op in RSV)
    run_drops(sess, [
        ("truncated: UDP payload shorter than BTH + ICRC", lambda: (
            [f4(full[:n], icrc_mode="none") for n in (0, 4, 8, 11)]
            + [f4(full[:12], icrc_mode="none"),      # BTH, no ICRC
               f4(full[:8]),                         # 8 + ICRC = 12 < 16
               f4(full[:11])]),
         {"expect": {"rcvd_malformed": EACH}}),
        ("truncated: extension headers cut short (valid ICRC)", lambda: [
            f4(tp(RC_WRITE_ONLY, rc.qpn, psn, reth(mr.buf, mr.rkey, 16)[:8])),
            f4(tp(RC_READ_REQ, rc.qpn, psn)),
            f4(tp(RC_CMP_SWAP, rc.qpn, psn, atomiceth(mr.buf, mr.rkey, 1, 2)[:20])),
            f4(tp(RC_ACK, rts.qpn, rts.sq_psn)),
            f4(tp(UD_SEND_ONLY, ud.qpn, 0, deth(ud.qkey, 1)[:4])),
            f4(tp(RC_SEND_ONLY_IMM, rc.qpn, psn)),
            f4(tp(RC_ATOMIC_ACK, rts.qpn, rts.sq_psn, aeth(AETH_ACK))),
            f4(tp(CNP, rc.qpn, 0, b"\0" * 12)),
            f4(tp(XRC | RC_SEND_ONLY, rc.qpn, psn, b"\0\0"))],
         {"expect": {"rcvd_malformed": EACH}}),
        ("UDP length beyond the IP payload / below the UDP header (dropped by UDP)",
         lambda: [f4(t, udp_len=8 + len(t) + 4 + 8), f4(t, udp_len=4)],
         {"udp_errors": 2}),
        ("UDP length cuts into the ICRC / payload",
         lambda: [f4(t, udp_len=8 + len(t) + 4 - 2), f4(t, udp_len=8 + len(t) - 8)],
         {"expect": {"rcvd_icrc_err": 2}}),
        ("IPv4 options (IHL 6)%s: no RoCEv2 ICRC is defined, dropped"
         % (", IPv6 destination options header" if v6 else ""),
         lambda: [f4(t, opts=b"\x01\x01\x01\x00")] + ([sess.w.frame6_ext(t)] if v6 else []),
         {"expect": {"rcvd_malformed": EACH}}),
        ("bad ICRC (flipped bit, zero, big-endian, unmasked TOS%s)" % (", IPv6" if v6 else ""),
         lambda: [f4(t, icrc_mode=lambda g: bytes([g[0] ^ 1]) + g[1:]),
                  f4(t, icrc_mode=b"\0\0\0\0"),
                  f4(t, icrc_mode=lambda g: g[::-1]),
                  # TOS 0x03 on the wire, ICRC computed as if TOS were not masked:
                  f4(t, tos=3, icrc_mode=lambda g, t=t: sess._icrc_unmasked_tos(t, 3))]
         + ([sess.f6(t, icrc_mode=lambda g: g[:3] + bytes([g[3] ^ 0x80]))] if v6 else []),
         {"expect": {"rcvd_icrc_err": EACH}}),
        ("pad count larger than what follows the headers (underflow)", lambda: [
            f4(tp(RC_ACK, rts.qpn, rts.sq_psn - 1, aeth(AETH_ACK), pad=3)),
            f4(tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 8), pad=2)),
            f4(tp(RC_SEND_ONLY, rc.qpn, rc.psn, pad=3)),
            f4(tp(CNP, rc.qpn, 0, b"\0" * 16, pad=1)),
            f4(tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 0), pad=3))],
         {"expect": {"rcvd_malformed": EACH}}),
        ("length not a whole number of 4-byte words", lambda: [
            f4(tp(RC_SEND_ONLY, rc.qpn, rc.psn, payload=b"12345", padbytes=b"")),
            f4(tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 7), b"1234567",
                  pad=0, padbytes=b""))],
         {"expect": {"rcvd_malformed": EACH}}),
        ("payload on header-only opcodes (READ request, ACK, atomic, CNP)", lambda: [
            f4(tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 8), b"abcd")),
            f4(tp(RC_ACK, rts.qpn, rts.sq_psn - 1, aeth(AETH_ACK), b"abcdefgh")),
            f4(tp(RC_CMP_SWAP, rc.qpn, rc.psn, atomiceth(mr.buf, mr.rkey, 1, 2), b"abcd")),
            f4(tp(CNP, rc.qpn, 0, b"\0" * 16, b"abcd"))],
         {"expect": {"rcvd_malformed": EACH}}),
        ("payload length impossible for the opcode (FIRST not a PMTU, empty MIDDLE/LAST,"
         " padded FIRST, 16-byte ATOMIC_WRITE, 4100-byte SEND in fragments)", lambda: [
            f4(tp(RC_SEND_FIRST, rc.qpn, rc.psn, payload=pattern(100, 1))),
            f4(tp(RC_SEND_MIDDLE, rc.qpn, rc.psn)),
            f4(tp(RC_SEND_LAST, rc.qpn, rc.psn)),
            f4(tp(RC_WRITE_FIRST, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 4096), pattern(1024, 1),
                  pad=1)),
            f4(tp(RC_ATOMIC_WRITE, rc.qpn, rc.psn, reth(mr.buf, mr.rkey, 8), pattern(16, 2)))]
         + sess.w.fragments(sess.send_only(rc, pattern(4100, 3)), ident=0x5102),
         {"expect": {"rcvd_malformed": 6}}),      # the fragments are one packet
        ("reserved and unimplemented opcodes (RD, IB CNP 0x80, FLUSH, vendor)",
         lambda: [f4(tp(op, rc.qpn, rc.psn, b"\0" * 28, ackreq=1)) for op in RSV],
         {"expect": {"rcvd_malformed": EACH}}),
        ("BTH transport version != 0",
         lambda: [f4(sess.send_only(rc, b"abcd", tver=tv)) for tv in (1, 8, 15)],
         {"expect": {"rcvd_malformed": 3}}),
    ])


def qp_checks(d):
    """QP type, state, keys, QPN: each dropped with its own counter."""
    sess, rc, rc6, rts, init, uc, ud = d.sess, d.rc, d.rc6, d.rts, d.init, d.uc, d.ud
    mr, f4, v6 = d.mr, d.f4, d.v6
    run_drops(sess, [
        ("opcode not valid for the QP type (UC/UD/XRC on RC, RC on UC/UD, non-UD on the"
         " multicast QPN, XRC ACK on RC)", lambda: [
            f4(tp(UC | RC_SEND_ONLY, rc.qpn, rc.psn, payload=b"abcd")),
            f4(tp(UD_SEND_ONLY, rc.qpn, rc.psn, deth(ud.qkey, 5), b"abcd")),
            f4(tp(XRC | RC_SEND_ONLY, rc.qpn, rc.psn, b"\0\0\0\1", b"abcd")),
            f4(tp(RC_SEND_ONLY, uc.qpn, uc.psn, payload=b"abcd")),
            f4(tp(RC_READ_REQ, uc.qpn, uc.psn, reth(mr.buf, mr.rkey, 8))),
            f4(tp(RC_ATOMIC_WRITE, uc.qpn, uc.psn, reth(mr.buf, mr.rkey, 8), b"\0" * 8)),
            f4(tp(RC_SEND_ONLY, ud.qpn, 0, payload=b"abcd")),
            f4(tp(RC_ACK, ud.qpn, 0, aeth(AETH_ACK))),
            f4(tp(UC | RC_SEND_ONLY, MCAST_QPN, 0, payload=b"abcd")),
            f4(tp(XRC | RC_ACK, rts.qpn, rts.sq_psn, aeth(AETH_ACK)))],
         {"expect": {"rcvd_bad_opcode": EACH}}),
        ("response (ACK) to a QP in RTR", lambda: [f4(tp(RC_ACK, rc.qpn, rc.psn, aeth(AETH_ACK)))],
         {"expect": {"rcvd_bad_qp_state": 1}}),
        ("request to a QP in INIT", lambda: [f4(sess.send_only(init, b"abcd"))],
         {"expect": {"rcvd_bad_qp_state": 1}}),
        ("wrong P_Key",
         lambda: [f4(sess.send_only(rc, b"abcd", pkey=pk)) for pk in (0x0000, 0x1234, 0x7FFE, 0x8001)]
         + ([sess.f6(sess.send_only(rc6, b"abcd", pkey=0xFFFE))] if v6 and rc6 else []),
         {"expect": {"rcvd_bad_pkey": EACH}}),
        ("wrong Q_Key (UD victim, and the GSI QP 1)",
         lambda: [f4(sess.send_only(ud, b"abcd", qkey=qk)) for qk in (0, ud.qkey ^ 1, 0xFFFFFFFF)]
         + [f4(tp(UD_SEND_ONLY, 1, 0, deth(ud.qkey, 1), b"\0" * 256))],
         {"expect": {"rcvd_bad_qkey": 4}}),
        ("unknown destination QPN (and a UD SEND to the multicast QPN of a unicast"
         " address: no group)",
         lambda: [f4(tp(RC_SEND_ONLY, q, 0, payload=b"abcd", ackreq=1))
                  for q in (0, 2, 15, 0x7FFFFF, 0xABCDEF, 0xFFFFFE)]
         + [f4(tp(RC_ACK, 0xABCDEF, 0, aeth(AETH_ACK))),
            f4(tp(UD_SEND_ONLY, MCAST_QPN, 0, deth(ud.qkey, 1), b"abcd"))],
         {"expect": {"rcvd_no_qp": EACH}}),
    ])


def ud_too_long(d):
    # IBTA class D (as rdma_rxe): dropped and counted, the receive WQE
    # kept for the next datagram, the QP stays up.
    sess, ud = d.sess, d.ud
    t = sess.send_only(ud, pattern(2000, 13))
    sess.case("UD SEND longer than the receive buffer: dropped, WQE kept, QP stays RTS",
              sess.w.fragments(t, ident=0x5103), expect={"rcvd_ud_len_drop": 1}, cqes={ud: []},
              after=sess.expect_state(ud, "RTS"), wait=2)
    ud.bring_up()


def gsi_too_long(d):
    # A datagram with the GSI Q_Key longer than any MAD: dropped before it
    # reaches the MAD layer, QP 1 stays up.
    sess = d.sess
    t = tp(UD_SEND_ONLY, 1, 0, deth(GSI_QKEY, 1), pattern(1024, 14))
    sess.case("UD SEND with the GSI Q_Key, longer than any MAD, to QP 1: dropped, QP 1 stays up",
              [sess.f4(t)], expect={"rcvd_ud_len_drop": 1}, after=sess.gsi_alive)


def cnps(d):
    # CNPs built by scapy (its ICRC too): each counted, for a QP or not.
    sess = d.sess
    frames = [sess.scapy_cnp(q) for q in (0xABCDEF, 0x123456, 3, d.rc.qpn)]
    sess.case("CNPs (scapy's, with scapy's ICRC) for unknown QPs and one live QP", frames,
              expect={"rcvd_cnp": len(frames)})


CASES = [
    lengths,
    qp_checks,
    ud_too_long,
    gsi_too_long,
    cnps,
    probe("rc", " (still alive)"),
]
