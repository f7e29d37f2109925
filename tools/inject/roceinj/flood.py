"""The flood: SENDs to unknown QPNs and CNPs for unknown QPs, as fast as possible."""

import time

from .proto import (CNP, RC_SEND_ONLY, log, pattern, tp)
from .verbs import Victim


def flood(sess):
    """Valid-looking SENDs to an unknown QPN and CNPs for unknown QPs, as
    fast as one process can send: every one dropped and counted (what
    the veth itself dropped aside), and the victims still answer."""
    a, vb = sess.a, sess.vb
    rc = Victim(vb, "rc-flood", "rc", "rtr", recvs=8)
    sess.probe(rc, " (before the flood)")
    n, ncnp = a.flood, a.cnps
    qpns = [0xABCDEF, 0x800000, 0xFEDCBA, 0x7FFFFF]
    sends = [sess.f4(tp(RC_SEND_ONLY, qpns[i % 4], i, payload=pattern(256, i), ackreq=1))
             for i in range(64)]
    cnps = [sess.f4(tp(CNP, 0x900000 + i, 0, b"\0" * 16, becn=1)) for i in range(64)]
    drop0 = sess._tx_dropped()
    c0 = sess.cnt.snap()
    t0 = time.monotonic()
    send = sess.w.sock.send
    for i in range(n):
        send(sends[i & 63])
    for i in range(ncnp):
        send(cnps[i & 63])
    dt = time.monotonic() - t0
    sess.w.sent += n + ncnp
    want = {"rcvd_no_qp": n, "rcvd_cnp": ncnp}
    dropped = sess._tx_dropped() - drop0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        c1 = sess.cnt.snap()
        if c1["rcvd_no_qp"] + c1["rcvd_cnp"] - c0["rcvd_no_qp"] - c0["rcvd_cnp"] >= n + ncnp - dropped:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    c1 = sess.cnt.snap()
    dropped = sess._tx_dropped() - drop0
    d = {k: c1[k] - c0[k] for k in c1}
    log("flood: %d SENDs to unknown QPNs + %d CNPs in %.1f s (%.0f packets/s); veth dropped %d"
        % (n, ncnp, dt, (n + ncnp) / dt, dropped))
    log("flood: rcvd_no_qp +%d, rcvd_cnp +%d, rcvd_pkts +%d" % (d["rcvd_no_qp"], d["rcvd_cnp"],
                                                              d["rcvd_pkts"]))
    got = d["rcvd_no_qp"] + d["rcvd_cnp"]
    sess.chk.cases += 1
    if got != n + ncnp - dropped or d["rcvd_no_qp"] > n or d["rcvd_cnp"] > ncnp:
        sess.chk.fail("flood", "rcvd_no_qp +%d and rcvd_cnp +%d: want %d + %d in all, less the"
                      " %d the veth dropped" % (d["rcvd_no_qp"], d["rcvd_cnp"], n, ncnp, dropped))
    for k in sess.exact:
        if k not in want and d[k] and not (k in sess.teardown):
            sess.chk.fail("flood", "%s moved by %d" % (k, d[k]))
    t1 = time.monotonic()
    sess.probe(rc, " (right after the flood)")
    log("flood: the victim answered %.2f s after the flood" % (time.monotonic() - t1))

