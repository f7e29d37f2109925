"""The target's counters (sysfs hw_counters), UDP errors, veth drops."""

import os
import subprocess

# Counters (kernel/sroce_stats.c). EXACT ones move only for hostile input
# (real RC traffic never touches them), so a case must move them by exactly
# what it expects and leave the rest alone. NOISY ones are moved by real
# traffic too (retransmissions, duplicates): a case asks for "at least", and
# the sniffed ACK/NAKs give the exact check.
EXACT = ("rcvd_icrc_err", "rcvd_malformed", "rcvd_no_qp", "rcvd_bad_qp_state", "rcvd_bad_opcode",
         "rcvd_bad_pkey", "rcvd_cnp", "rcvd_bad_qkey", "rcvd_no_wqe_drop", "rcvd_ud_len_drop",
         "rem_access_nak_sent",
         "rem_inv_req_nak_sent", "rem_op_nak_sent", "rcvd_fatal_nak")
NOISY = ("duplicate_request", "out_of_seq_request", "seq_nak_sent", "rnr_nak_sent",
         "completer_drop", "rcvd_rnr_err", "rcvd_seq_err")
# Real-traffic teardown (a late packet for a QP just destroyed or being torn
# down) can move these two; tolerated only when a traffic run ended meanwhile.
TEARDOWN = ("rcvd_no_qp", "rcvd_bad_qp_state")
# Counters of the address, size and READ-responder checks (selftests/
# sec_wire.sh); used only where the module has them. A connected QP drops
# what does not come from its peer's address to its own (rcvd_bad_addr):
# every victim's path is --src-ip(6) -> --dst-ip(6), which is what the
# injector sends from and to, so its cases must not move it - except real
# traffic's teardown: a late packet of an IPv6 run whose QPN an IPv4 run's
# new QP now has. READ streams of real traffic may fill their backlog or
# re-request a READ, so the responder's two are NOISY.
EXACT_IF_PRESENT = ("rcvd_bad_addr", "rcvd_oversize")
NOISY_IF_PRESENT = ("resp_backlog_drop", "dup_read_drop")
TEARDOWN_IF_PRESENT = ("rcvd_bad_addr",)



class Counters:
    def __init__(self, dev):
        self.dir = "/sys/class/infiniband/%s/ports/1/hw_counters" % dev
        self.names = sorted(os.listdir(self.dir))

    def snap(self, names=None):
        out = {}
        for n in names or self.names:
            with open(os.path.join(self.dir, n)) as f:
                out[n] = int(f.read())
        return out


def udp_in_errors(ns):
    """InErrors of UDP (and UDP6) in namespace ns."""
    total = 0
    for path, key in (("/proc/net/snmp", "Udp:"), ("/proc/net/snmp6", "Udp6InErrors")):
        out = subprocess.run(["ip", "netns", "exec", ns, "cat", path], capture_output=True,
                             text=True, check=True).stdout.splitlines()
        if key == "Udp:":
            rows = [ln.split() for ln in out if ln.startswith("Udp:")]
            total += int(rows[1][rows[0].index("InErrors")])
        else:
            for ln in out:
                f = ln.split()
                if f and f[0] == key:
                    total += int(f[1])
    return total


class TrafficWatch:
    """The selftest's real-traffic loop bumps a number in a file after each
    run: if it changed during a case, a run's teardown may have moved the
    TEARDOWN counters."""

    def __init__(self, path):
        self.path = path

    def gen(self):
        if not self.path:
            return 0
        try:
            with open(self.path) as f:
                return f.read().strip()
        except OSError:
            return None
