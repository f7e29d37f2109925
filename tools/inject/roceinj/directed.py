"""The directed cases: every malformed or invalid class, its counter and answer."""

import struct
import time

from .proto import (AETH_ACK, AETH_RNR, CNP, GSI_QKEY, MCAST_QPN, NAK_ACC, NAK_SEQ, RC_ACK,
                    RC_ATOMIC_ACK, RC_ATOMIC_WRITE, RC_CMP_SWAP, RC_FETCH_ADD, RC_READ_REQ,
                    RC_READ_RESP_FIRST, RC_READ_RESP_LAST, RC_READ_RESP_MIDDLE, RC_READ_RESP_ONLY,
                    RC_SEND_FIRST,
                    RC_SEND_LAST, RC_SEND_MIDDLE, RC_SEND_ONLY, RC_SEND_ONLY_IMM, RC_SEND_ONLY_INV,
                    RC_WRITE_FIRST, RC_WRITE_ONLY, RESERVED_OPCODES, UC, UD_SEND_ONLY,
                    WC_LOC_LEN_ERR, WC_LOC_PROT_ERR, WC_REM_INV_REQ_ERR, WC_RETRY_EXC_ERR, WC_SUCCESS,
                    WC_WR_FLUSH_ERR, XRC, aeth, atomiceth, deth, log, pattern, reth, tp)
from .verbs import Victim


# In a table's check: as many as there are frames.
EACH = None


def run_drops(sess, table):
    """Run a table of cases: each (title, frames(): the frames to send, the
    check: Session.case's keywords, where a counter wanting EACH wants one
    per frame). frames() is called when the case's turn comes."""
    for title, frames, check in table:
        fr = frames()
        kw = {k: ({c: len(fr) if n is EACH else n for c, n in v.items()} if k in ("expect", "atleast")
                  else v) for k, v in check.items()}
        sess.case(title, fr, **kw)


def directed(sess):
    a, vb = sess.a, sess.vb
    mr = vb.mr
    rc = Victim(vb, "rc-main", "rc", "rtr", recvs=16)
    rc6 = Victim(vb, "rc-v6", "rc", "rtr", recvs=8, ipv6=True) if a.dst_ip6 else None
    rts = Victim(vb, "rc-rts", "rc", "rts", recvs=4)
    init = Victim(vb, "rc-init", "rc", "init", recvs=2)
    uc = Victim(vb, "uc", "uc", "rtr", recvs=8)
    ud = Victim(vb, "ud", "ud", "rts", recvs=8)
    log("victims on %s: %s" % (a.dev, ", ".join("%s qpn %#x psn %#x" % (v.name, v.qpn, v.psn)
                                              for v in vb.victims)))
    log("MR va %#x len %#x rkey %#x; write-only MR rkey %#x" % (mr.buf, mr.length, mr.rkey,
                                                              vb.mr_wo.rkey))

    # Valid packets first: the builders, the ICRC and its masks are right.
    sess.probe(rc, " (IPv4)")
    if rc6:
        sess.probe(rc6, " (IPv6)")
    sess.probe(rc, ": TOS CE, TTL 1, FECN/BECN/resv6 set (ICRC-invariant fields)", tos=3, ttl=1)
    # Valid SENDs to rc with fields that must not matter: each ACKed and received.
    accepted = [
        ("valid SEND with FECN, BECN, resv6 set",
         lambda: [sess.f4(sess.send_only(rc, pattern(64, 7), fecn=1, becn=1, resv6=0x3F))]),
        ("UDP length shorter than the IP payload (trailing bytes ignored)",
         lambda: [sess.f4(sess.send_only(rc, pattern(64, 8)), trailer=b"\xde\xad\xbe\xef" * 3)]),
        ("SEND in two IP fragments",
         lambda: sess.w.fragments(sess.send_only(rc, pattern(1000, 9)), ident=0x5101, frag_payload=512)),
        ("P_Key 0x7fff (limited member of the default partition)",
         lambda: [sess.f4(sess.send_only(rc, pattern(32, 10), pkey=0x7FFF))]),
    ]

    def accept(title, frames):
        sess.case(title, frames(), replies=[(rc, "ack", rc.psn)], cqes={rc: [WC_SUCCESS]},
                  after=lambda: sess._consumed(rc))
        rc.psn += 1
    accept(*accepted[0])
    if rc6:
        sess.probe(rc6, ": traffic class 0xff, flow label 0xabcde, hop limit 1",
                   tc=0xFF, fl=0xABCDE, hlim=1)
    for title, frames in accepted[1:]:
        accept(title, frames)
    sess.probe(ud, " (UD, right Q_Key)")

    # --- lengths, truncation, ICRC; QP type, state, keys, QPN --------------------------
    # Packets the target must drop and count, nothing else: run_drops().
    full = sess.send_only(rc, pattern(16, 11))
    psn = rc.psn
    t = sess.send_only(rc, pattern(64, 12))
    rsv = [0x15, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1E, 0x1F, 0x2C, 0x3F, 0x40, 0x4C, 0x5F, 0x60,
           0x66, 0x7F, 0x80, 0x82, 0x9F, 0xB5, 0xBE, 0xC0, 0xE0, 0xFF]
    assert all(op in RESERVED_OPCODES for op in rsv)
    f4, v6 = sess.f4, bool(a.dst_ip6)
    drops = [
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
         lambda: [f4(tp(op, rc.qpn, rc.psn, b"\0" * 28, ackreq=1)) for op in rsv],
         {"expect": {"rcvd_malformed": EACH}}),
        ("BTH transport version != 0",
         lambda: [f4(sess.send_only(rc, b"abcd", tver=tv)) for tv in (1, 8, 15)],
         {"expect": {"rcvd_malformed": 3}}),

        # QP type, state, keys, QPN.
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
    ]
    run_drops(sess, drops)
    t = sess.send_only(ud, pattern(2000, 13))
    # IBTA class D (as rdma_rxe): dropped and counted, the receive WQE
    # kept for the next datagram, the QP stays up.
    sess.case("UD SEND longer than the receive buffer: dropped, WQE kept, QP stays RTS",
              sess.w.fragments(t, ident=0x5103), expect={"rcvd_ud_len_drop": 1}, cqes={ud: []},
              after=sess.expect_state(ud, "RTS"), wait=2)
    ud.bring_up()
    t = tp(UD_SEND_ONLY, 1, 0, deth(GSI_QKEY, 1), pattern(1024, 14))
    sess.case("UD SEND with the GSI Q_Key, longer than any MAD, to QP 1: dropped, QP 1 stays up",
              [sess.f4(t)], expect={"rcvd_ud_len_drop": 1}, after=sess.gsi_alive)
    cnps = [sess.scapy_cnp(q) for q in (0xABCDEF, 0x123456, 3, rc.qpn)]
    sess.case("CNPs (scapy's, with scapy's ICRC) for unknown QPs and one live QP", cnps,
              expect={"rcvd_cnp": len(cnps)})
    sess.probe(rc, " (still alive)")

    # --- PSN window --------------------------------------------------------------
    e = rc.psn
    frames = [sess.f4(sess.send_only(rc, b"abcd", psn=e + d)) for d in (1, 1000, 0x7FFFFF)]
    sess.case("PSN ahead of the expected one (out of sequence): one sequence NAK", frames,
              atleast={"out_of_seq_request": 3, "seq_nak_sent": 1},
              replies=[(rc, "nak-seq", e)])
    frames = [sess.f4(sess.send_only(rc, b"abcd", psn=e - d)) for d in (1, 2, 0x800000)]
    frames.append(sess.f4(tp(RC_READ_REQ, rc.qpn, e - 3, reth(mr.buf, mr.rkey, 64))))
    sess.case("PSN behind (duplicates): re-ACKed, unknown old READ ignored", frames,
              atleast={"duplicate_request": 4},
              replies=[(rc, "ack", e - 1)] * 3)
    sess.probe(rc, " (in sequence again)")
    # A duplicate right after a READ: the newest PSN is the READ's, and
    # rdma_rxe's requester completes a READ from an ACK that names its
    # PSN, without the data. The duplicate is re-ACKed at its own PSN.
    e = rc.psn
    sess.case("READ in sequence", [sess.f4(tp(RC_READ_REQ, rc.qpn, e, reth(mr.buf, mr.rkey, 64)))],
              replies=[(rc, "read-only", e)])
    rc.psn += 1
    sess.case("duplicate SEND after a READ: re-ACKed at its own PSN, not the READ's",
              [sess.f4(sess.send_only(rc, b"abcd", psn=e - 1))], atleast={"duplicate_request": 1},
              replies=[(rc, "ack", e - 1)])
    sess.probe(rc, " (after the READ)")

    # --- remote access violations: each NAKed, each kills its QP -----------------
    fatal = [
        ("WRITE with an unknown R_Key", "nak-acc",
         lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey ^ 0x5A5A00, 16), b"x" * 16,
                      ackreq=1)),
        ("WRITE past the end of the MR", "nak-acc",
         lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf + mr.length - 8, mr.rkey, 16),
                      b"x" * 16, ackreq=1)),
        ("WRITE whose VA + length wraps the address space", "nak-acc",
         lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(2**64 - 8, mr.rkey, 16), b"x" * 16,
                      ackreq=1)),
        ("READ whose VA + length wraps the address space", "nak-acc",
         lambda v: tp(RC_READ_REQ, v.qpn, v.psn, reth(2**64 - 0x100, mr.rkey, 0x1000))),
        ("READ longer than 2^31 bytes", "nak-inv",
         lambda v: tp(RC_READ_REQ, v.qpn, v.psn, reth(mr.buf, mr.rkey, 0x80000001))),
        ("READ from an MR without remote read rights", "nak-acc",
         lambda v: tp(RC_READ_REQ, v.qpn, v.psn, reth(vb.mr_wo.buf, vb.mr_wo.rkey, 64))),
        ("FETCH_ADD with an unknown R_Key", "nak-acc",
         lambda v: tp(RC_FETCH_ADD, v.qpn, v.psn, atomiceth(mr.buf, mr.rkey ^ 0x100, 1))),
        ("CMP_SWAP on a misaligned address", "nak-inv",
         lambda v: tp(RC_CMP_SWAP, v.qpn, v.psn, atomiceth(mr.buf + 4, mr.rkey, 1, 0))),
        ("FETCH_ADD just past the end of the MR", "nak-acc",
         lambda v: tp(RC_FETCH_ADD, v.qpn, v.psn, atomiceth(mr.buf + mr.length, mr.rkey, 1))),
        ("ATOMIC_WRITE on a misaligned address", "nak-inv",
         lambda v: tp(RC_ATOMIC_WRITE, v.qpn, v.psn, reth(mr.buf + 2, mr.rkey, 8), b"\0" * 8,
                      ackreq=1)),
        ("WRITE_ONLY whose payload differs from its DMA length", "nak-inv",
         lambda v: tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey, 64), b"y" * 32, ackreq=1)),
        ("WRITE_FIRST with a DMA length over 2^31", "nak-inv",
         lambda v: tp(RC_WRITE_FIRST, v.qpn, v.psn, reth(mr.buf, mr.rkey, 0x80000001), b"z" * 1024)),
        ("SEND_MIDDLE without a SEND_FIRST", "nak-inv",
         lambda v: tp(RC_SEND_MIDDLE, v.qpn, v.psn, payload=b"m" * 1024)),
        ("SEND_ONLY_INV naming an R_Key that is not a fast-reg MR", "nak-inv",
         lambda v: tp(RC_SEND_ONLY_INV, v.qpn, v.psn, struct.pack("!I", mr.rkey), b"abcd",
                      ackreq=1)),
    ]
    nak_counter = {"nak-acc": "rem_access_nak_sent", "nak-inv": "rem_inv_req_nak_sent"}
    dead = []
    for title, kind, build in fatal:
        v = Victim(vb, "rc-fatal-%d" % len(dead), "rc", "rtr", recvs=2)
        want_cqe = {}
        if "SEND" in title:
            want_cqe = {v: [WC_REM_INV_REQ_ERR if "INV" in title else WC_WR_FLUSH_ERR]}
        sess.case("%s -> %s, QP to error" % (title, kind), [sess.f4(build(v))],
                  expect={nak_counter[kind]: 1}, replies=[(v, kind, v.psn)], cqes=want_cqe,
                  after=sess.expect_state(v, "ERR"))
        dead.append(v)
    v = Victim(vb, "rc-small-rbuf", "rc", "rtr", recvs=2, recv_len=256)
    sess.case("SEND longer than the receive buffer -> nak-inv, local length error",
              [sess.f4(sess.send_only(v, pattern(512, 4)))], expect={"rem_inv_req_nak_sent": 1},
              replies=[(v, "nak-inv", v.psn)], cqes={v: [WC_LOC_LEN_ERR]},
              after=sess.expect_state(v, "ERR"))
    dead.append(v)
    v = Victim(vb, "rc-no-access", "rc", "rtr", recvs=2, access=vb.e.IBV_ACCESS_LOCAL_WRITE)
    sess.case("WRITE to a QP without remote write access -> nak-acc",
              [sess.f4(tp(RC_WRITE_ONLY, v.qpn, v.psn, reth(mr.buf, mr.rkey, 8), b"w" * 8))],
              expect={"rem_access_nak_sent": 1}, replies=[(v, "nak-acc", v.psn)],
              after=sess.expect_state(v, "ERR"))
    dead.append(v)
    v = Victim(vb, "rc-bad-lkey", "rc", "rtr", recvs=2, bad_lkey=True)
    sess.case("SEND into a receive WQE whose L_Key is invalid -> nak-op (remote operational"
              " error), local protection error",
              [sess.f4(sess.send_only(v, b"abcd"))], expect={"rem_op_nak_sent": 1},
              replies=[(v, "nak-op", v.psn)], cqes={v: [WC_LOC_PROT_ERR]},
              after=sess.expect_state(v, "ERR"))
    dead.append(v)
    sess.case("requests to QPs in the error state",
              [sess.f4(sess.send_only(v, b"abcd")) for v in dead],
              expect={"rcvd_bad_qp_state": len(dead)})
    v = Victim(vb, "rc-no-recv", "rc", "rtr", recvs=0)
    sess.case("SEND with no receive posted -> RNR NAK, QP stays up",
              [sess.f4(sess.send_only(v, b"abcd"))], atleast={"rnr_nak_sent": 1},
              replies=[(v, "rnr", v.psn)], after=sess.expect_state(v, "RTR"))
    v.nrecv = 2
    v.repost()
    sess.probe(v, " (after the RNR NAK)")
    # PMTU 256 QP: IBTA C9-92 (payload <= PMTU for ONLY/LAST packets).
    v = Victim(vb, "rc-pmtu256", "rc", "rtr", recvs=2, mtu=256)
    sess.case("SEND_ONLY longer than the QP's path MTU (512 > 256) -> nak-inv",
              [sess.f4(sess.send_only(v, pattern(512, 5)))], expect={"rem_inv_req_nak_sent": 1},
              replies=[(v, "nak-inv", v.psn)], cqes={v: [WC_WR_FLUSH_ERR]},
              after=sess.expect_state(v, "ERR"), wait=2)

    # --- valid RDMA against the victim, checked in memory -------------------------
    data = pattern(256, 6)
    off = 0x1000
    t = tp(RC_WRITE_ONLY, rc.qpn, rc.psn, reth(mr.buf + off, mr.rkey, len(data)), data, ackreq=1)

    def wrote():
        return [] if mr.read(len(data), off) == data else ["MR contents differ from the WRITE"]
    sess.case("valid WRITE_ONLY lands in the MR", [sess.f4(t)], replies=[(rc, "ack", rc.psn)],
              after=wrote)
    rc.psn += 1
    t = tp(RC_READ_REQ, rc.qpn, rc.psn, reth(mr.buf + off, mr.rkey, 2048 + 256))

    def read_back():
        pl = b"".join(r.payload for r in sess.last_replies)
        want = mr.read(2048 + 256, off)
        return [] if pl == want else ["READ response payload differs from the MR"]
    sess.case("valid READ (3 responses at PMTU 1024)", [sess.f4(t)],
              replies=[(rc, "read-first", rc.psn), (rc, "read-middle", rc.psn + 1),
                       (rc, "read-last", rc.psn + 2)], after=read_back)
    rc.psn += 3
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

    # --- the completer: responses nobody asked for --------------------------------
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

    ghost = Victim(vb, "rc-rts-ghost", "rc", "rts", recvs=2)
    sess.case("NAK (remote access) for the next, unsent PSN of an idle QP: ignored",
              [sess.f4(tp(RC_ACK, ghost.qpn, ghost.sq_psn, aeth(NAK_ACC)))],
              atleast={"completer_drop": 1}, after=sess.expect_state(ghost, "RTS"), wait=2)

    # --- the completer with a READ and an atomic outstanding ----------------------
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

    # --- stale ACKs and repeated NAKs do not keep a QP whose peer is gone alive ------
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
    def dead_peer_case(label, mkframe, what, resends):
        dead = Victim(vb, "rc-dead-peer-" + label, "rc", "rts", recvs=0, timeout=17,
                      retry_cnt=1)
        dead.post_read(64, 0x10000, 0x1234)
        frame = sess.f4(mkframe(dead))
        n_frames, bound = 300, 2.5
        # The READ itself and one resend per timeout; resends: how many
        # the stream may ask for ("once", or "each" frame at most).
        max_sent = 2 + (1 if resends == "once" else 0)
        seen = {"t0": time.monotonic(), "left": None, "sent": 0,
                "own0": sess.own_requests, "late": False}

        def left_rts():
            # Stop once it failed. The response already on its way when it
            # failed arrives at a QP in error: rcvd_bad_qp_state, at most once.
            seen["sent"] += 1
            if dead.state() != vb.e.IBV_QPS_RTS:
                seen["left"] = time.monotonic() - seen["t0"]
                seen["late"] = seen["sent"] == 1
            return seen["left"] is not None

        def failed_in_time():
            left = seen["left"]
            sent = sess.own_requests - seen["own0"]
            most = max_sent + (seen["sent"] if resends == "each" else 0)
            probs = []
            if seen["late"]:
                probs.append("the QP had left RTS by the first of the %s: its timeouts ran"
                             " out before the stream began, and the case checked nothing" % what)
            elif left is None:
                probs.append("the QP stayed in RTS through %d %s over %.1f s: they kept its ACK"
                             " timeout from firing" % (seen["sent"], what,
                                                       time.monotonic() - seen["t0"]))
            elif left > bound:
                probs.append("the QP left RTS %.2f s after the first of the %s, bound %.1f s"
                             % (left, what, bound))
            if sent > most:
                probs.append("the READ went out %d times, at most %d: the %s made it resend"
                             % (sent, most, what))
            if not probs:
                log("    the QP left RTS %.2f s after the first of the %s, %d sent; the READ"
                    " went out %d time(s)" % (left, what, seen["sent"], sent))
            return probs
        seen["t0"] = time.monotonic()
        sess.case("%s every 10 ms do not keep a QP whose peer never answers alive: its READ"
                  " fails with RETRY_EXC_ERR after two ACK timeouts, sent at most %s"
                  % (what, "%d times" % max_sent if resends != "each" else
                     "once per timeout and once per ACK"), [frame] * n_frames,
                  atleast=dict({"retry_exceeded_err": 1},
                               **({"completer_drop": 1} if resends == "once" else {})),
                  upto={"rcvd_bad_qp_state": 1},
                  cqes={dead: [WC_RETRY_EXC_ERR]}, pace=0.01, between=left_rts,
                  after=failed_in_time)

    # An ACK of the PSN before the READ: a duplicate, valid, nothing new.
    dead_peer_case("stale", lambda d: tp(RC_ACK, d.qpn, d.sq_psn - 1, aeth(AETH_ACK)),
                   "stale ACKs", "none")
    # A sequence NAK of the READ's PSN: a copy of one NAK, or a forgery.
    dead_peer_case("nak", lambda d: tp(RC_ACK, d.qpn, d.sq_psn, aeth(NAK_SEQ)),
                   "repeated sequence NAKs", "once")
    # An ACK of the READ's PSN: its response is lost (an implied NAK).
    dead_peer_case("implied", lambda d: tp(RC_ACK, d.qpn, d.sq_psn, aeth(AETH_ACK)),
                   "repeated ACKs past the READ", "each")

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
    rnr = Victim(vb, "rc-nak-rnr-nak", "rc", "rts", recvs=0, timeout=20, retry_cnt=1)
    own = sess.own_requests
    rnr.post_send(64)
    # Its first transmission, seen before the case (which starts by
    # draining the capture), so that only the resends are counted.
    t_end = time.monotonic() + 5
    while sess.own_requests == own and time.monotonic() < t_end:
        sess.answers()
        time.sleep(0.02)
    rnr_seen = {"own0": sess.own_requests, "first": sess.own_requests - own}

    def resent_three():
        time.sleep(1.0)
        sess.answers()
        sent = sess.own_requests - rnr_seen["own0"]
        if rnr_seen["first"] != 1:
            return ["the SEND went out %d times before the first NAK, want once"
                    % rnr_seen["first"]]
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

    # --- UC: no NAKs, the message is dropped, the QP stays up -------------------------
    sess.probe(uc, " (UC)")
    frames = [sess.f4(tp(UC | RC_SEND_MIDDLE, uc.qpn, uc.psn, payload=b"m" * 1024)),
              sess.f4(tp(UC | RC_WRITE_ONLY, uc.qpn, uc.psn + 1, reth(mr.buf, mr.rkey ^ 0x77, 8),
                         b"w" * 8))]
    sess.case("UC: SEND_MIDDLE without FIRST, WRITE with a bad R_Key (dropped, no answer)", frames,
              atleast={"out_of_seq_request": 2}, after=sess.expect_state(uc, "RTR"))
    uc.psn += 2
    sess.probe(uc, " (UC, still alive)")
    sess.probe(rc, " (end)")
    if rc6:
        sess.probe(rc6, " (end)")

