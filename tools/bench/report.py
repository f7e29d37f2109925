#!/usr/bin/env python3
"""Turn tools/bench/guest.sh's bench-raw.jsonl into the `make bench` table and
build/bench/results.json.

usage: report.py RAW.jsonl RESULTS.json [--meta KEY=VALUE ...]

The figures come from a QEMU TCG guest: absolute numbers say little about
real hardware. The ratios compare stacks measured in the same boot:
  sroce/rxe  sroce-loop vs rxe-loop (one device talking to itself, both)
  sroce/TCP  sroce-veth vs iperf3 TCP over the same veth pair
For bandwidth and message rate a ratio > 1 means sroce is faster; for
latency a ratio < 1 means sroce is faster.
"""
import json
import sys

TOPOLOGIES = {
    "sroce-veth": "sroce0 (netns A) <-> sroce1 (netns B) over a veth pair",
    "sroce-loop": "one sroce device on a dummy netdev, client and server on it",
    "rxe-loop": "one rdma_rxe device on a veth end in the initial netns, "
                "client and server on it (6.1 rxe cannot span namespaces)",
    "tcp-veth": "iperf3 TCP, netns A -> B over the sroce-veth veth pair",
}
NOTE = ("QEMU TCG guest (no KVM): absolute figures are meaningless for real "
        "hardware; only the ratios between stacks measured in this one boot "
        "mean anything. MiB/s = 2^20 bytes/s (perftest's MB/sec).")


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    raw_path, out_path = args[0], args[1]
    meta = {}
    for a in args[2:]:
        if a == "--meta":
            continue
        k, _, v = a.partition("=")
        meta[k] = v

    rows = []
    with open(raw_path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))

    def find(topo, test, size):
        for r in rows:
            if r["topo"] == topo and r["test"] == test and r.get("size") == size:
                return r
        return None

    doorbells = [r for r in rows if r["test"] == "doorbells"]
    rows = [r for r in rows if r["test"] != "doorbells"]
    tcp = next((r for r in rows if r["test"] == "tcp_stream"), None)
    tcp_bw = tcp["bw_MiBps"] if tcp else None

    # One line per (test, size), in the order measured.
    keys = []
    for r in rows:
        k = (r["test"], r.get("size"))
        if r["test"] != "tcp_stream" and k not in keys:
            keys.append(k)

    table = []
    for test, size in keys:
        veth, loop, rxe = (find(t, test, size) for t in ("sroce-veth", "sroce-loop", "rxe-loop"))
        lat = "t_avg_us" in (veth or loop or rxe or {})
        if lat:
            metric, unit = "t_avg_us", "us"
        elif test == "msg_rate":
            metric, unit = "mpps", "Mpps"
        else:
            metric, unit = "bw_MiBps", "MiB/s"
        val = {k: (v or {}).get(metric) for k, v in
               (("sroce-veth", veth), ("sroce-loop", loop), ("rxe-loop", rxe))}
        ent = {
            "test": test, "size": size, "metric": metric, "unit": unit,
            "qps": (veth or loop or rxe or {}).get("qps"),
            "sroce_veth": val["sroce-veth"], "sroce_loop": val["sroce-loop"],
            "rxe_loop": val["rxe-loop"],
            "sroce_over_rxe": ratio(val["sroce-loop"], val["rxe-loop"]),
            # TCP has bandwidth only.
            "sroce_over_tcp": ratio(val["sroce-veth"], tcp_bw) if metric == "bw_MiBps" else None,
        }
        if metric == "bw_MiBps":
            ent["mpps"] = {k: (v or {}).get("mpps") for k, v in
                           (("sroce_veth", veth), ("sroce_loop", loop), ("rxe_loop", rxe))}
        table.append(ent)

    hdr = ("test", "size", "unit", "sroce-veth", "sroce-loop", "rxe-loop",
           "sroce/rxe", "sroce/TCP")
    lines = [hdr]
    for e in table:
        name = e["test"] + (f" q{e['qps']}" if e.get("qps", 1) not in (None, 1) else "")
        lines.append((name, fmt(e["size"]), e["unit"], fmt(e["sroce_veth"], 3 if e["unit"] == "Mpps" else 2),
                      fmt(e["sroce_loop"], 3 if e["unit"] == "Mpps" else 2),
                      fmt(e["rxe_loop"], 3 if e["unit"] == "Mpps" else 2),
                      fmt(e["sroce_over_rxe"], 2), fmt(e["sroce_over_tcp"], 2)))
    # TCP's figure sits in the sroce-veth column: same veth pair, same direction.
    lines.append(("tcp_stream (tcp-veth)", "-", "MiB/s", fmt(tcp_bw), "-", "-", "-",
                  "1.00" if tcp_bw else "-"))
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(hdr))]
    out = []
    for n, l in enumerate(lines):
        out.append("  ".join(str(c).ljust(w) if i < 3 else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(l, widths))).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))

    print("sroce benchmark (" + NOTE + ")")
    print()
    for t, d in TOPOLOGIES.items():
        print(f"  {t:<11} {d}")
    print()
    print("\n".join(out))
    print()
    print("sroce/rxe = sroce-loop / rxe-loop; sroce/TCP = sroce-veth / tcp-veth (bandwidth only).")
    print("Bandwidth and message rate: > 1 means sroce is faster. Latency (us): < 1 means sroce is faster.")
    if doorbells:
        print()
        print("Send doorbells that entered the kernel (the client's sq_doorbells), sroce-veth, -n runs;")
        print("the provider leaves one out while the requester runs or is queued:")
        for d in doorbells:
            per = None if d["doorbells"] is None else d["doorbells"] / d["msgs"]
            print(f"  {d['tool']:<12} {d['size']:>6} B  {d['msgs']:>6} messages  "
                  f"{fmt(d['doorbells'])} doorbells  ({fmt(per, 3)} per message)")

    result = {
        "note": NOTE,
        "topologies": TOPOLOGIES,
        "meta": meta,
        "tcp_veth_MiBps": tcp_bw,
        "table": table,
        "doorbells": doorbells,
        "raw": rows + doorbells,
    }
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"\nresults: {out_path}")


if __name__ == "__main__":
    main()
