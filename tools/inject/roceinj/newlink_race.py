"""rdma link add racing with its netdev's removal (sroce_inject.py newlink-race;
selftests/sec_wire.sh runs it in its newlink_race case)."""

import os
import socket
import struct
import subprocess
import time

from roceinj import proto as inj
from roceinj.proto import log
from roceinj.wire import NetNS


# --- rdma link add racing with the netdev's removal ------------------------------------

NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 1, 4, 0x200, 0x400
NLMSG_ERROR = 2
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
IFLA_IFNAME, IFLA_LINKINFO, IFLA_INFO_KIND, IFLA_INFO_DATA, VETH_INFO_PEER = 3, 18, 1, 2, 1
NETLINK_ROUTE, NETLINK_RDMA = 0, 20
# rdma/rdma_netlink.h: RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_NEWLINK)
RDMA_NLDEV_NEWLINK = (5 << 10) + 3
RDMA_NLDEV_ATTR_DEV_NAME, RDMA_NLDEV_ATTR_NDEV_NAME, RDMA_NLDEV_ATTR_LINK_TYPE = 2, 51, 65


def _rta(t, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, t) + payload + b"\0" * (-n & 3)


def _ifinfo():
    return struct.pack("=BxHiII", 0, 0, 0, 0, 0)


class Netlink:
    """A netlink socket (created in the namespace current at the time) and
    requests that wait for their ACK: returns 0 or a positive errno."""

    def __init__(self, proto):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
        self.s.bind((0, 0))
        self.seq = 0

    def request(self, mtype, flags, body):
        self.seq += 1
        self.s.send(struct.pack("=IHHII", 16 + len(body), mtype, flags | NLM_F_REQUEST | NLM_F_ACK,
                                self.seq, 0) + body)
        while True:
            data = self.s.recv(65536)
            off = 0
            while off + 16 <= len(data):
                ln, t, _, seq, _ = struct.unpack_from("=IHHII", data, off)
                if t == NLMSG_ERROR and seq == self.seq:
                    return -struct.unpack_from("=i", data, off + 16)[0]
                off += (ln + 3) & ~3
                if ln < 16:
                    break

    def new_veth(self, name, peer):
        info = _rta(IFLA_INFO_KIND, b"veth\0") + _rta(IFLA_INFO_DATA, _rta(
            VETH_INFO_PEER, _ifinfo() + _rta(IFLA_IFNAME, peer.encode() + b"\0")))
        return self.request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, _ifinfo() + _rta(
            IFLA_IFNAME, name.encode() + b"\0") + _rta(IFLA_LINKINFO, info))

    def del_link(self, name):
        return self.request(RTM_DELLINK, 0, _ifinfo() + _rta(IFLA_IFNAME, name.encode() + b"\0"))

    def rdma_link_add(self, dev, ndev, kind="sroce"):
        return self.request(RDMA_NLDEV_NEWLINK, 0, _rta(RDMA_NLDEV_ATTR_DEV_NAME, dev.encode() + b"\0")
                            + _rta(RDMA_NLDEV_ATTR_NDEV_NAME, ndev.encode() + b"\0")
                            + _rta(RDMA_NLDEV_ATTR_LINK_TYPE, kind.encode() + b"\0"))


def newlink_race(a):
    """The newlink-race command: for --seconds, in namespace --ns, a veth
    pair, "rdma link add" (RDMA_NLDEV_CMD_NEWLINK) on one end from one thread
    and the pair deleted (RTM_DELLINK) from another after a delay swept over
    the whole of link add (measured first, without a race): netlink straight
    from python, so that the deletion lands inside the kernel's link add
    rather than in a command's start-up. Meanwhile the main thread watches
    for the device existing, after "rdma link add" returned, while its
    netdev is already unlisted (being unregistered): for longer than
    --orphan-ms, the device was left on its dead netdev (a missed
    NETDEV_UNREGISTER, found only by the core's rebroadcast a second later,
    or never). Before link add returns, the device may exist on a dying
    netdev while its registration finishes: that is unavoidable. A call that does not return within
    --hang-seconds is a hang; a device still there after both returned was
    left behind. Devices are named --prefix + K + N, netdevs --prefix + N
    (and N + "p")."""
    import random
    import statistics
    import threading
    sysfs = "/sys/class/infiniband/"
    with NetNS(a.ns):
        rt, rt_del, rd = Netlink(NETLINK_ROUTE), Netlink(NETLINK_ROUTE), Netlink(NETLINK_RDMA)
    probs = []
    outcomes = {}
    add_ms, del_ms, orphans = [], [], []
    delays = []
    end = time.monotonic() + a.seconds
    i = 0
    rng = random.Random(a.seed)
    # A deletion that lands inside a link add waits for the registration to
    # finish and the device to be unregistered (the RDMA core serialises
    # them): up to about one link add and one deletion. The limit past
    # which a call is a hang is --hang-seconds, or three times the slowest
    # calibration round if that is longer (a debug kernel's link add takes
    # seconds: it registers the device with every RDMA client).
    hang = a.hang_seconds
    log("newlink-race: started%s" % inj._stamp())
    while time.monotonic() < end or i < 3 + a.min_rounds:
        i += 1
        nd, dev = "%s%d" % (a.prefix, i), "%sK%d" % (a.prefix, i)
        err = rt.new_veth(nd, nd + "p")
        if err:
            probs.append("creating veth %s failed: %s" % (nd, os.strerror(err)))
            break
        res = {}
        t_round = time.monotonic()

        def add(dev=dev, nd=nd, res=res):
            t = time.monotonic()
            res["add"] = rd.rdma_link_add(dev, nd)
            res["add_ms"] = (time.monotonic() - t) * 1000

        def delete(nd=nd, res=res, delay=None):
            if delay:
                time.sleep(delay)
            t = time.monotonic()
            res["del"] = rt_del.del_link(nd)
            res["del_ms"] = (time.monotonic() - t) * 1000
        # Three calibration rounds: link add alone, then the deletion.
        calib = i <= 3
        if calib:
            delay = None
        else:
            top = statistics.median(add_ms) * 1.3 / 1000
            delay = 0 if rng.random() < 0.1 else rng.uniform(0, top)
            delays.append(delay)
        ta = threading.Thread(target=add, daemon=True)
        ta.start()
        if calib:
            ta.join(hang)
        td = threading.Thread(target=delete, kwargs={"delay": delay}, daemon=True)
        td.start()
        deadline = time.monotonic() + hang
        since, orphan = None, 0.0
        while (ta.is_alive() or td.is_alive()) and time.monotonic() < deadline:
            now = time.monotonic()
            # A device registered on a netdev that is going away exists until
            # its registration has finished (then sroce removes it at once):
            # the clock runs only once "rdma link add" has returned.
            if not ta.is_alive() and os.path.exists(sysfs + dev) and rt.request(
                    RTM_GETLINK, 0, _ifinfo() + _rta(IFLA_IFNAME, nd.encode() + b"\0")) == 19:
                since = now if since is None else since
                orphan = max(orphan, now - since)
            else:
                since = None
            time.sleep(0.02)
        tag = "round %d (delay %s)" % (i, "-" if delay is None else "%.1f ms" % (delay * 1000))
        # The calibration rounds and any round over a second, on the
        # selftest's clock: where the time went, if the process outlives
        # its caller's bound (a stock kernel does hundreds of rounds).
        if calib or time.monotonic() - t_round > 1:
            log("newlink-race: %s: link add %s ms, deletion %s ms, %.1f s in all%s"
                % (tag, "%.0f" % res["add_ms"] if "add_ms" in res else "-",
                   "%.0f" % res["del_ms"] if "del_ms" in res else "-",
                   time.monotonic() - t_round, inj._stamp()))
        if ta.is_alive() or td.is_alive():
            what = " and ".join(w for w, th in (("rdma link add %s" % dev, ta), ("deleting %s" % nd, td))
                                if th.is_alive())
            probs.append("%s did not return within %.0f s, %s" % (what, hang, tag))
            if os.path.exists(sysfs + dev):
                probs.append("%s exists, on netdev %s that is being deleted" % (dev, nd))
                log("newlink-race: releasing %s: rdma link delete" % dev)
                subprocess.run(["rdma", "link", "delete", dev], timeout=60)
                td.join(30)
                log("newlink-race: the deletion of %s %s" % (nd, "returned" if not td.is_alive() else
                                                            "is still stuck"))
            break
        if calib:
            add_ms.append(res["add_ms"])
        del_ms.append(res["del_ms"])
        if i == 3:
            hang = max(a.hang_seconds, 3 * (max(add_ms) + max(del_ms)) / 1000)
            log("newlink-race: hang-limit-s %.0f (--hang-seconds %d; the slowest calibration round:"
                " link add %.0f ms, deletion %.0f ms)" % (hang, a.hang_seconds, max(add_ms),
                                                          max(del_ms)))
        orphans.append(orphan * 1000)
        key = "created, then removed" if res["add"] == 0 else "refused (%s)" % os.strerror(res["add"])
        outcomes[key] = outcomes.get(key, 0) + 1
        if orphan * 1000 >= a.orphan_ms:
            probs.append("%s was left on its unregistered netdev %s for %.0f ms (link add %s in %.0f ms,"
                         " the deletion took %.0f ms), %s"
                         % (dev, nd, orphan * 1000, "ok" if not res["add"] else os.strerror(res["add"]),
                            res["add_ms"], res["del_ms"], tag))
        if os.path.exists(sysfs + dev):
            probs.append("%s still exists after its netdev %s was deleted, %s" % (dev, nd, tag))
            subprocess.run(["rdma", "link", "delete", dev], timeout=60)
        if res["del"] not in (0, 19):       # ENODEV: gone already (never, here)
            probs.append("deleting %s: %s" % (nd, os.strerror(res["del"])))
            rt.del_link(nd)
    if len(delays) < a.min_rounds:
        probs.append("only %d race round(s), want at least %d" % (len(delays), a.min_rounds))
    log("newlink-race: %d rounds in %.0f s; rdma link add alone takes %s ms; deletion delays"
        " %.1f..%.1f ms; %s" % (i, a.seconds, "/".join("%.0f" % x for x in add_ms),
                                min(delays or [0]) * 1000, max(delays or [0]) * 1000,
                                ", ".join("%s %d" % kv for kv in sorted(outcomes.items()))))
    if del_ms:
        log("newlink-race: deletions took %.0f..%.0f ms (median %.0f); the device outlived its"
            " netdev's unlisting by at most %.0f ms (median %.0f; the limit is %d)"
            % (min(del_ms), max(del_ms), statistics.median(del_ms), max(orphans),
               statistics.median(orphans), a.orphan_ms))
        log("newlink-race: per round, deletion/outlived ms: %s"
            % " ".join("%.0f/%.0f" % x for x in zip(del_ms, orphans)))
    for p in probs:
        log("newlink-race: NOT OK: %s" % p)
    log("newlink-race: done%s" % inj._stamp())
    return 1 if probs else 0
