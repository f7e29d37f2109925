#!/usr/bin/python3
"""sroce_inject: hostile RoCEv2 wire input for sroce (selftests/wire_hostile.sh).

Crafts RoCEv2 packets as raw Ethernet frames and sends them with an AF_PACKET
socket on a veth end, so that they arrive at the peer's sroce device exactly
as written: any IP/UDP length, any BTH, a right or wrong ICRC. Scapy
(scapy.contrib.roce) is the reference the ICRC here is checked against, on
random packets and on real sroce traffic; it builds the CNPs (with its own
ICRC). Everything else is built as bytes: scapy costs milliseconds per packet
in a TCG guest, and the mutation run sends 100k of them.

Run it in the initial namespace (where sysfs shows every RDMA device and its
counters) with --ns naming the namespace of the sending veth end: only the
packet sockets are created there. The target device (--dev) is on the other
end. pyverbs (with the sroce provider: RDMAV_DRIVERS) creates "victim" QPs
on it whose QPN, PSN, MRs and receive buffers the injector knows. Their
remote QPNs are phantoms (0xa0xxxx) on the sending side, so every ACK, NAK
and READ response they send is caught by a BPF-filtered sniffer on the veth
(and dropped by the sending side's device as rcvd_no_qp): each answer's
opcode, syndrome, PSN and ICRC is checked, not just the counters.

Commands:
  selftest     ICRC known-answer vectors, and the ICRC against scapy's on
               random packets (no root, no device). Exit 4 without scapy or
               pyverbs.
  icrc-check   sniff real RoCEv2 traffic on --ifname and verify every
               packet's ICRC with this file's code (and, for IPv4, scapy's).
  directed     the per-class cases: every malformed or invalid class, the
               counter each must move (exactly, unless real traffic moves it
               too), and the answer (ACK/NAK/none) the spec asks for. Known
               deviations are reported as XFAIL and do not fail the run.
  flood        --flood SENDs to unknown QPNs plus --cnps CNPs for unknown
               QPs, as fast as possible: all dropped and counted (less what
               the veth dropped); a victim answers right after.
  mutate       --count randomly mutated valid packets (--seed): bit flips,
               byte sets, truncation, extension, splices, field-aware changes
               of opcode/PSN/QPN/P_Key/pad/lengths/R_Key/VA/syndrome/Q_Key,
               IP/UDP length lies, IP options, IPv6, IP fragments, most with
               the ICRC fixed up so they reach the parser and the transport.
               Victims are reset every --cycle packets. Never aims at a QPN
               it does not own (real traffic may run on the device); ends
               with fresh probes of the victims.
  all          icrc-check (until --min-packets of each family), then
               directed, flood and mutate, in one process.
  sec-wire     the security cases of selftests/sec_wire.sh (--cases; the
               table and what each checks: tools/inject/roceinj/secwire.py):
               forged-source UDP from a local user, duplicate READ
               amplification, oversize datagrams, a backlog flood behind a
               streaming READ.
  udp-forge    sec-wire's unprivileged sender: RoCEv2 requests with a
               right ICRC from an ordinary UDP socket to a local address.
  newlink-race rdma link add (netlink) racing with the deletion of its veth,
               for --seconds in --ns: no hang, no device left behind.

Exit status: 0 all checks passed, 1 a check failed, 2 usage error.
"""

import argparse
import random
import sys
import time

# The code is in roceinj/ next to this file (sys.path[0] when run as a
# script): proto (constants, ICRC, headers), wire (frames, sniffer, replies),
# counters, verbs (victim QPs), harness (Session: the case runner), the
# phases directed, flood and mutate, and icrccheck (selftest, icrc-check).
# Every name this file used to define is still importable from it.
# pylint: disable=wildcard-import,unused-wildcard-import,unused-import
from roceinj.proto import *          # noqa: F401,F403
from roceinj.proto import _stamp, _FF8, _mask, _crc32_bitwise   # noqa: F401
from roceinj.wire import *           # noqa: F401,F403
from roceinj.wire import _mac, _bpf_phantom_filter               # noqa: F401
from roceinj.counters import *       # noqa: F401,F403
from roceinj.verbs import *          # noqa: F401,F403
from roceinj.harness import Check, Session                       # noqa: F401
from roceinj.mutate import Mutator                               # noqa: F401
from roceinj.icrccheck import icrc_check, selftest
from roceinj.proto import log


# --- main ------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("selftest", "icrc-check", "directed", "flood", "mutate", "all",
                                        "sec-wire", "udp-forge", "newlink-race"))
    ap.add_argument("--ifname", help="sending veth end")
    ap.add_argument("--ns", help="network namespace of --ifname (ip netns name; default: this one)")
    ap.add_argument("--src-mac")
    ap.add_argument("--dst-mac", help="MAC of the target's netdev")
    ap.add_argument("--src-ip")
    ap.add_argument("--dst-ip", help="IPv4 address of the target's netdev")
    ap.add_argument("--src-ip6")
    ap.add_argument("--dst-ip6")
    ap.add_argument("--dev", help="target sroce device")
    ap.add_argument("--peer-dev", help="the sroce device on --ifname (for its GIDs)")
    ap.add_argument("--gid-index", type=int, help="target's RoCE v2 GID index for --dst-ip")
    ap.add_argument("--gid-index6", type=int)
    ap.add_argument("--peer-gid-index", type=int, help="peer device's GID index for --src-ip")
    ap.add_argument("--peer-gid-index6", type=int)
    ap.add_argument("--peer-ns", help="the target's network namespace (UDP counters)")
    ap.add_argument("--traffic-gen", help="file the real-traffic loop bumps after each run")
    ap.add_argument("--count", type=int, default=100000, help="mutate: packets")
    ap.add_argument("--flood", type=int, default=50000, help="flood: SENDs to unknown QPNs")
    ap.add_argument("--cnps", type=int, default=5000, help="flood: CNPs for unknown QPs")
    ap.add_argument("--cycle", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--min-packets", type=int, default=100)
    ap.add_argument("--stop-file", help="icrc-check: stop once this file exists")
    ap.add_argument("--ready-file", help="icrc-check: created once the sniffer listens")
    g = ap.add_argument_group("sec-wire (selftests/sec_wire.sh; tools/inject/roceinj/secwire.py)")
    g.add_argument("--cases", help="sec-wire: comma-separated cases (default: all)")
    g.add_argument("--peer-ifname", help="sec-wire: the target's veth end (its MTU is raised)")
    g.add_argument("--dup-read-kb", type=int, default=1024, help="sec-wire: the duplicated READ")
    g.add_argument("--flood-read-mb", type=int, default=128, help="sec-wire: the READ under the flood")
    g.add_argument("--backlog-flood", type=int, default=4000, help="sec-wire: requests in the flood")
    g.add_argument("--mem-limit-kb", type=int, default=6144,
                   help="sec-wire: slab growth allowed during the flood")
    g.add_argument("--step-timeout", type=float, default=60, help="sec-wire: seconds per step")
    g = ap.add_argument_group("udp-forge (sec-wire's unprivileged sender)")
    g.add_argument("--transport", choices=("rc", "uc"), default="rc")
    g.add_argument("--qpn", type=int)
    g.add_argument("--psn", type=int)
    g.add_argument("--rkey", type=int)
    g.add_argument("--va", type=int)
    g.add_argument("--ops", default="write@0", help="udp-forge: write@K,send@K,... (PSN offsets)")
    g = ap.add_argument_group("newlink-race (sec-wire's rdma link add / netdev removal race)")
    g.add_argument("--prefix", default="nlr", help="newlink-race: netdev and device name prefix")
    g.add_argument("--hang-seconds", type=int, default=15)
    g.add_argument("--min-rounds", type=int, default=3,
                   help="newlink-race: race rounds (after 3 calibration rounds) run even past --seconds")
    g.add_argument("--orphan-ms", type=int, default=700,
                   help="newlink-race: longest a device may outlive its netdev's unlisting")
    a = ap.parse_args()
    if a.command in ("sec-wire", "udp-forge", "newlink-race"):
        if a.command == "udp-forge":
            from roceinj.udpforge import udp_forge
            for k in ("dst_ip", "qpn", "psn", "rkey", "va"):
                if getattr(a, k) is None:
                    ap.error("--%s is required for udp-forge" % k.replace("_", "-"))
            return udp_forge(a)
        if a.command == "newlink-race":
            from roceinj.newlink_race import newlink_race
            if not a.ns:
                ap.error("--ns is required for newlink-race")
            return newlink_race(a)
    if a.command == "selftest":
        ok = selftest()
        return 4 if ok is None else 0 if ok else 1
    if a.command == "icrc-check":
        return 0 if icrc_check(a) else 1
    for k in ("ifname", "src_mac", "dst_mac", "src_ip", "dst_ip", "dev", "peer_dev", "gid_index",
              "peer_gid_index", "peer_ns"):
        if getattr(a, k) is None:
            ap.error("--%s is required for %s" % (k.replace("_", "-"), a.command))
    if a.seed is None:
        a.seed = random.SystemRandom().getrandbits(31)
    random.seed(a.seed)
    ok = True
    if a.command == "sec-wire":
        from roceinj import secwire
        return secwire.run(a)
    if a.command == "all":
        # One process for every phase (python and scapy take seconds to
        # start in a TCG guest): first the ICRC of the real traffic, before
        # anything is injected, until both families have been seen.
        log("### ICRC of real traffic%s" % _stamp())
        a.stop_file = None
        a.seconds = max(a.seconds, 60)
        ok = icrc_check(a)
        phases = ("directed", "flood", "mutate")
    else:
        phases = (a.command,)
    s = Session(a)
    for ph in phases:
        t0 = time.monotonic()
        if len(phases) > 1:
            log("### %s%s" % (ph, _stamp()))
        getattr(s, ph)()
        ok &= s.finish(ph)
        log("%s: %.1f s" % (ph, time.monotonic() - t0))
    s.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
