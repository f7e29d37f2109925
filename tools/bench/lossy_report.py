#!/usr/bin/env python3
"""The table of `make bench-lossy` from tools/bench/lossy.sh's raw results.

usage: lossy_report.py RAW.jsonl [OUT.json] [--meta key=value ...]

For each netem setting and stack: goodput (MiB/s), its share of the same
stack's goodput with no netem, and, for a setting with jitter and loss, its
share of the same stack's goodput with that jitter and no loss; for sroce
the requester's retransmissions, ACK timeouts and tail loss probes and the
responder's packets placed ahead. A failed run (no goodput) is FAILED: a
go-back-N stack must never stop making progress.
"""

import json
import re
import sys

STACKS = ("sroce-gbn", "rxe-gbn", "tcp")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--meta")]
    meta = {}
    i = 1
    while i < len(argv):
        if argv[i] == "--meta" and i + 1 < len(argv):
            k, _, v = argv[i + 1].partition("=")
            meta[k] = v
            args.remove(argv[i + 1])
            i += 2
        else:
            i += 1
    if not args:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    runs = [json.loads(line) for line in open(args[0]) if line.strip()]
    if not runs:
        print("lossy_report: no runs in %s" % args[0], file=sys.stderr)
        return 1
    by = {(r["stack"], r["setting"]): r for r in runs}
    settings = []
    for r in runs:
        if r["setting"] not in settings:
            settings.append(r["setting"])

    def good(stack, setting):
        r = by.get((stack, setting))
        return r["goodput_MiBps"] if r and r["ok"] else None

    def base_of(setting):
        """The same jitter without loss or duplication, if measured."""
        m = re.match(r"^(delay \S+ \S+)\s+(loss|duplicate)\b", setting)
        return m.group(1) if m and m.group(1) in settings else None

    def share(x, b):
        return "%5.0f %%" % (100.0 * x / b) if x is not None and b else "    -"

    table = []
    head = "%-26s %-9s %10s %8s %8s  %s" % ("netem (both ends)", "stack", "MiB/s", "of none",
                                             "of jit.", "requester: retx/timeouts/probes, placed")
    print(head)
    print("-" * len(head))
    for s in settings:
        for k in STACKS:
            r = by.get((k, s))
            if r is None:
                continue
            g = good(k, s)
            b = base_of(s)
            c = r.get("counters") or {}
            cs = ""
            if c:
                cs = "%s/%s/%s, %s" % tuple("-" if c.get(n) is None else c[n] for n in
                                            ("retransmitted_pkts", "retry_timeouts",
                                             "tail_loss_probes", "out_of_seq_placed"))
            print("%-26s %-9s %10s %8s %8s  %s" % (s, k, "FAILED" if g is None else "%.1f" % g,
                                                 share(g, good(k, "none")),
                                                 share(g, good(k, b)) if b else "",
                                                 cs))
            table.append({"setting": s, "stack": k, "goodput_MiBps": g,
                          "share_of_none": (g / good(k, "none")) if g is not None and good(k, "none") else None,
                          "counters": c, "ok": r["ok"]})
    failed = [(t["stack"], t["setting"]) for t in table if not t["ok"] and t["stack"] != "tcp"]
    print()
    print("runs that made no progress (go-back-N must never stop): %s"
          % (", ".join("%s '%s'" % f for f in failed) or "none"))
    if len(args) > 1:
        with open(args[1], "w") as f:
            json.dump({"meta": meta, "runs": table}, f, indent=1)
        print("JSON: %s" % args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
