#!/usr/bin/env python3
"""Turn `make bench-insn`'s raw results into its table and build/bench/insn.json.

usage: insn_report.py RAW.jsonl OUT.json --marks MARKS.txt [--meta KEY=VALUE ...]

RAW.jsonl is tools/bench/insn_guest.sh's: one object per perftest run with
the tags of the marks taken before and after it. MARKS.txt is what the QEMU
plugin (tools/bench/insn/sroce_insn.c) wrote: "mark SEQ TAG VCPU KERNEL USER"
per mark, KERNEL and USER the guest instructions both vCPUs had executed.

Each case (stack, test, size) was run as a pair, -n N then -n 3N, several
times. For each pair, the extra instructions of the longer run divided by
its extra work (2N messages; for 64 KiB, 2N x 65536 bytes) are the cost of
one message or byte: start-up, connection set-up and tear-down cancel out.
Kernel and user space apart ("user" is every address below the kernel half:
perftest, the provider, libibverbs). The spread is (max - min) / mean over
the repeats.
"""
import argparse
import json
import statistics
import textwrap
import sys

NOTE = ("Executed guest instructions, counted by a QEMU TCG plugin; work, not "
        "time, so steady under TCG. Each figure: the difference between a "
        "run of -n 3N and one of -n N, divided by the extra 2N messages "
        "(64 B: instructions/message) or 2N x size bytes (64 KiB: "
        "instructions/byte). Both vCPUs are counted, idle and timer work "
        "included. perftest -e (event-driven), one device looping back. "
        "cs/msg: guest context switches per message (how often -e slept and "
        "woke: timing decides how many completions one wake-up collects, so "
        "per-message costs vary with it).")
PER_BYTE_MIN = 4096     # sizes from this up are reported per byte


def load_marks(path):
    marks, total = {}, None
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "mark" and len(w) == 6:
                tag = int(w[2])
                if tag in marks:
                    sys.exit(f"insn_report: mark {tag} appears twice in {path}")
                marks[tag] = (int(w[4]), int(w[5]))
            elif w[0] == "total":
                total = line.strip()
    return marks, total


def stats(values):
    if not values:
        return None
    mean = statistics.fmean(values)
    return {
        "reps": [round(v, 4) for v in values],
        "mean": round(mean, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "spread": round((max(values) - min(values)) / abs(mean), 4) if mean else None,
    }


def ratio(a, b):
    """a/b of the means; none where it says nothing: a mean at or below zero
    (user figures of about 0 per byte) or a spread over 50 %."""
    if a is None or b is None or a["mean"] <= 0 or b["mean"] <= 0:
        return None
    if max(a["spread"], b["spread"]) > 0.5:
        return None
    return round(a["mean"] / b["mean"], 3)


def unit_of(size):
    return "byte" if size >= PER_BYTE_MIN else "message"


def size_text(size):
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("raw")
    ap.add_argument("out")
    ap.add_argument("--marks", required=True)
    ap.add_argument("--meta", action="append", default=[])
    a = ap.parse_args()
    meta = dict(m.partition("=")[::2] for m in a.meta)

    marks, total = load_marks(a.marks)
    runs = []
    with open(a.raw) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    for r in runs:
        b, e = marks.get(r.get("mark_begin")), marks.get(r.get("mark_end"))
        r["kernel"] = e[0] - b[0] if r["ok"] and b and e else None
        r["user"] = e[1] - b[1] if r["ok"] and b and e else None

    # Pairs: (stack, test, size, rep) -> {iters: run}.
    pairs = {}
    for r in runs:
        pairs.setdefault((r["stack"], r["test"], r["size"], r["rep"]), {})[r["iters"]] = r
    per = {}      # (stack, test, size) -> {"kernel": [...], "user": [...]}
    pair_rows = []
    for (stack, test, size, rep), by_n in sorted(pairs.items()):
        d = per.setdefault((stack, test, size),
                           {"kernel": [], "user": [], "total": [], "ctxt": []})
        if len(by_n) != 2:
            continue
        lo, hi = (by_n[n] for n in sorted(by_n))
        if None in (lo["kernel"], hi["kernel"]):
            continue
        work = (hi["iters"] - lo["iters"]) * (size if unit_of(size) == "byte" else 1)
        k = (hi["kernel"] - lo["kernel"]) / work
        u = (hi["user"] - lo["user"]) / work
        d["kernel"].append(k)
        d["user"].append(u)
        d["total"].append(k + u)
        # Context switches per message: how often perftest -e slept.
        cs = None
        if lo.get("ctxt") is not None and hi.get("ctxt") is not None:
            cs = (hi["ctxt"] - lo["ctxt"]) / (hi["iters"] - lo["iters"])
            d["ctxt"].append(cs)
        pair_rows.append({"stack": stack, "test": test, "size": size, "rep": rep,
                          "iters": [lo["iters"], hi["iters"]], "unit": unit_of(size),
                          "kernel": round(k, 4), "user": round(u, 4),
                          "ctxt_per_msg": None if cs is None else round(cs, 3)})

    cases = []
    order = {"send_bw": 0, "read_bw": 1, "write_bw": 2}
    keys = sorted({(t, s) for (_, t, s) in per}, key=lambda x: (order.get(x[0], 9), x[0], -x[1]))
    for test, size in keys:
        c = {"test": test, "size": size, "unit": unit_of(size), "stacks": {},
             "events": all(r.get("events", True) for r in runs
                           if r["test"] == test and r["size"] == size)}
        for stack in ("sroce", "rxe"):
            d = per.get((stack, test, size))
            if d:
                c["stacks"][stack] = {p: stats(d[p]) for p in ("kernel", "user", "total", "ctxt")}
        s, x = c["stacks"].get("sroce"), c["stacks"].get("rxe")
        c["sroce_over_rxe"] = {p: ratio(s and s[p], x and x[p])
                               for p in ("kernel", "user", "total")}
        cases.append(c)

    def fmt(st, digits):
        if st is None:
            return "-", "-"
        m = st["mean"]
        d = digits if abs(m) < 1000 else 0
        spread = f"{100 * st['spread']:.1f}%" if st["spread"] is not None else "-"
        return f"{m:,.{d}f}", spread

    print("make bench-insn: executed guest instructions per unit of work")
    print(textwrap.fill(NOTE, 100))
    print()
    hdr = (f"{'test':<9} {'size':>6} {'per':<7} {'stack':<10} {'kernel':>10} {'spread':>7} "
           f"{'user':>9} {'spread':>7} {'total':>10} {'reps':>4} {'cs/msg':>6}")
    print(hdr)
    print("-" * len(hdr))
    for c in cases:
        digits = 2 if c["unit"] == "byte" else 0
        for stack in ("sroce", "rxe"):
            st = c["stacks"].get(stack)
            if not st:
                continue
            k, ks = fmt(st["kernel"], digits)
            u, us = fmt(st["user"], digits)
            t, _ = fmt(st["total"], digits)
            n = len(st["kernel"]["reps"]) if st["kernel"] else 0
            cs = f"{st['ctxt']['mean']:.2f}" if st["ctxt"] else "-"
            name = c["test"] + ("" if c["events"] else "*")
            print(f"{name:<9} {size_text(c['size']):>6} {c['unit']:<7} {stack:<10} "
                  f"{k:>10} {ks:>7} {u:>9} {us:>7} {t:>10} {n:>4} {cs:>6}")
        r = c["sroce_over_rxe"]
        rk, ru, rt = (f"{r[p]:.3f}" if r[p] is not None else "-"
                      for p in ("kernel", "user", "total"))
        print(f"{'':<24} {'sroce/rxe':<10} {rk:>10} {'':>7} {ru:>9} {'':>7} {rt:>10}")
    if not all(c["events"] for c in cases):
        print("* polling (perftest has no -e for WRITE): user and total figures are "
              "spinning, not work; compare the kernel column only")
    print()
    print("each repeat (kernel + user):")
    for p in pair_rows:
        d = 2 if p["unit"] == "byte" else 0
        print(f"  {p['stack']:<6} {p['test']:<9} {size_text(p['size']):>6} rep {p['rep']} "
              f"(-n {p['iters'][0]} / {p['iters'][1]}): {p['kernel']:,.{d}f} + {p['user']:,.{d}f}"
              f" per {p['unit']}"
              + (f", {p['ctxt_per_msg']:.2f} context switches per message"
                 if p["ctxt_per_msg"] is not None else ""))
    bad = [r for r in runs if r["kernel"] is None]
    if bad:
        print(f"\n{len(bad)} run(s) failed or lack marks: "
              + ", ".join(f"{r['stack']} {r['test']} {r['size']} -n {r['iters']}" for r in bad))
    if total:
        print(f"\nplugin: {total}")

    with open(a.out, "w") as f:
        json.dump({"note": NOTE, "meta": meta, "cases": cases, "pairs": pair_rows,
                   "runs": runs}, f, indent=1)
        f.write("\n")
    print(f"\n{a.out}")
    if not pair_rows:
        sys.exit("insn_report: no complete pair of runs")


if __name__ == "__main__":
    main()
