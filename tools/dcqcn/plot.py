#!/usr/bin/python3
"""Plot and summarise the DCQCN incast samples of selftests/dcqcn_incast.sh.

The test writes one CSV (and prints it between two marker lines at the end
of its output, since files in the test VM do not reach the host):

    run,t,flow,mbps,qp_mbps,dcqcn_rate_mbps,dcqcn_target_mbps,dcqcn_alpha,
    dcqcn_limited,backlog_bytes,qlen_pkts,marked,dropped,cap_mbps,red_min,red_max

one row per flow ("f1".."fN") and one per bottleneck ("link") every sample
period of each run (t: seconds since the run's first client started), and
one "window" row per run (t = start, mbps = end of the steady window the
test judged the run on). Flow rows: mbps is what the sender put on the wire
(its bridge port's receive counter), qp_mbps the QP's payload rate
(tx_bytes), dcqcn_* the QP's DCQCN state, when the kernel reports them.
Link rows: mbps is what RED handed to the shaped link, backlog/qlen RED's
queue at the sample, marked/dropped RED's cumulative CE marks and drops,
cap_mbps the shaped rate, red_min/red_max RED's thresholds (bytes).

usage:
  plot.py [-o OUT.svg|.png] [--run RUN]... INPUT
  plot.py --summary [--run RUN]... [--from T] [--to T] [--last S]
          [--converge FLOW] [--tol 0.2] [--hold 3] [--smooth 1] [--format table|kv] INPUT
  plot.py --extract INPUT > samples.csv

The summary's window defaults to the steady window the test judged each
run on (its "window" row), else the whole run.

INPUT is the CSV itself, or a log that contains it between the
"BEGIN dcqcn_incast CSV" and "END dcqcn_incast CSV" markers (e.g. the
stdout of tools/vm/run, where every test line starts with "# "); "-" reads
stdin. The summary needs only the standard library; the plot needs
matplotlib (Debian: python3-matplotlib).
"""

import argparse
import csv
import io
import math
import signal
import sys

BEGIN = "BEGIN dcqcn_incast CSV"
END = "END dcqcn_incast CSV"
COLUMNS = ["run", "t", "flow", "mbps", "qp_mbps", "dcqcn_rate_mbps",
           "dcqcn_target_mbps", "dcqcn_alpha", "dcqcn_limited", "backlog_bytes",
           "qlen_pkts", "marked", "dropped", "cap_mbps", "red_min", "red_max"]


def read_text(path):
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def extract_csv(text):
    """The CSV text: the marked block of a log, or the whole text.

    Whatever precedes the BEGIN marker on its line (a "# " from run.sh, a
    console prefix) is stripped from every line of the block. With several
    blocks (several test runs in one log) the last one wins."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if BEGIN in line:
            start = i
    if start is None:
        return text
    prefix = lines[start][:lines[start].index(BEGIN)]
    # "# ---- BEGIN ..." : the prefix is what comes before the dashes too.
    prefix = prefix.rstrip("- ")
    out = []
    for line in lines[start + 1:]:
        if END in line:
            break
        if prefix and line.startswith(prefix):
            line = line[len(prefix):]
        line = line.strip()
        if line:
            out.append(line)
    return "\n".join(out) + "\n"


def fnum(s):
    if s is None or s == "":
        return None
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def load(text):
    """{run: {"flows": {flow: [row...]}, "link": [row...]}} in file order,
    rows as dicts with floats (None for empty fields)."""
    runs = {}
    rdr = csv.DictReader(io.StringIO(extract_csv(text)))
    if rdr.fieldnames is None or "run" not in rdr.fieldnames:
        raise SystemExit("plot.py: no dcqcn_incast CSV found (no header with a 'run' column)")
    for rec in rdr:
        run = rec.get("run")
        if not run or run == "run":
            continue
        row = {k: (rec.get(k) if k in ("run", "flow") else fnum(rec.get(k)))
               for k in COLUMNS}
        if row["t"] is None:
            continue
        r = runs.setdefault(run, {"flows": {}, "link": [], "window": None})
        if row["flow"] == "window":
            r["window"] = (row["t"], row["mbps"])
        elif row["flow"] == "link":
            r["link"].append(row)
        else:
            r["flows"].setdefault(row["flow"], []).append(row)
    for r in runs.values():
        r["link"].sort(key=lambda x: x["t"])
        for rows in r["flows"].values():
            rows.sort(key=lambda x: x["t"])
    return runs


def jain(xs):
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1/n .. 1."""
    xs = list(xs)
    sq = sum(x * x for x in xs)
    if not xs or sq == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sq)


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def percentile(xs, q):
    """The q-th percentile (0..100) of xs, nearest rank."""
    xs = sorted(xs)
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, math.ceil(q / 100 * len(xs)) - 1))
    return xs[k]


def last_value(rows, key):
    for row in reversed(rows):
        if row[key] is not None:
            return row[key]
    return None


def flow_start(rows, cap):
    """Time of the first sample in which the flow sent: more than 1 % of the
    shaped rate (or 0.5 Mbit/s without one), so ARP does not count."""
    floor = 0.01 * cap if cap else 0.5
    for row in rows:
        if (row["mbps"] or 0) > floor:
            return row["t"]
    return None


def smoothed(rows, width):
    """(t, mean mbps over the samples in (t - width, t]) for each sample."""
    out = []
    for i, row in enumerate(rows):
        vals = [r["mbps"] or 0.0 for r in rows[:i + 1] if r["t"] > row["t"] - width - 1e-9]
        out.append((row["t"], sum(vals) / len(vals)))
    return out


def convergence(run, flow, tol, hold, width, t_end=None):
    """Seconds from FLOW's start until its (smoothed) rate is within tol of
    the mean of the flows sending at that time, and stays so for hold
    seconds; None if it never does before t_end (default: the run's end)."""
    flows = run["flows"]
    if flow not in flows:
        raise SystemExit(f"plot.py: no flow {flow} in this run (flows: {', '.join(sorted(flows))})")
    cap = last_value(run["link"], "cap_mbps")
    starts = {f: flow_start(rows, cap) for f, rows in flows.items()}
    t0 = starts[flow]
    if t0 is None:
        return None
    sm = {f: dict(smoothed(rows, width)) for f, rows in flows.items()}
    times = [t for t, _ in smoothed(flows[flow], width)
             if t >= t0 and (t_end is None or t <= t_end + 1e-9)]
    ok = []
    for t in times:
        active = [f for f, s in starts.items() if s is not None and s <= t and t in sm[f]]
        m = mean(sm[f][t] for f in active)
        ok.append(bool(m) and abs(sm[flow][t] - m) <= tol * m)
    end = times[-1] if times else t0
    for i, t in enumerate(times):
        if t + hold > end + 1e-9:
            break
        if all(ok[j] for j in range(i, len(times)) if times[j] <= t + hold + 1e-9):
            return t - t0
    return None


def summarise(name, run, t_from, t_to, last, conv):
    link = run["link"]
    if not link:
        raise SystemExit(f"plot.py: run {name} has no link rows")
    t_end = link[-1]["t"]
    if last is not None:
        t_from, t_to = t_end - last, t_end
    elif t_from is None and t_to is None and run.get("window"):
        t_from, t_to = run["window"]        # the test's steady window
    t_from = link[0]["t"] if t_from is None else t_from
    t_to = t_end if t_to is None else t_to

    def inwin(rows):
        return [r for r in rows if t_from - 1e-9 <= r["t"] <= t_to + 1e-9]

    lw = inwin(link)
    cap = last_value(link, "cap_mbps")
    flows = sorted(run["flows"])
    fm = {f: mean(r["mbps"] for r in inwin(run["flows"][f])) or 0.0 for f in flows}
    link_mbps = mean(r["mbps"] for r in lw)
    backlogs = [r["backlog_bytes"] for r in lw if r["backlog_bytes"] is not None]
    # marked/dropped are cumulative: the window's share is the difference
    # from the sample before the window (or 0 at the run's start).
    before = [r for r in link if r["t"] < t_from - 1e-9]

    def delta(key):
        end = last_value(lw, key)
        start = last_value(before, key) if before else 0.0
        return None if end is None else end - (start or 0.0)

    s = {
        "run": name,
        "from": round(t_from, 2),
        "to": round(t_to, 2),
        "samples": len(lw),
        "flows": len(flows),
        "flow_mbps": ",".join(f"{f}:{fm[f]:.1f}" for f in flows),
        "jain": jain(fm.values()),
        "link_mbps": link_mbps,
        "cap_mbps": cap,
        "util": (link_mbps / cap) if (link_mbps is not None and cap) else None,
        "backlog_max": max(backlogs) if backlogs else None,
        "backlog_p90": percentile(backlogs, 90),
        "backlog_mean": mean(backlogs),
        "red_min": last_value(link, "red_min"),
        "red_max": last_value(link, "red_max"),
        "marked": delta("marked"),
        "dropped": delta("dropped"),
        "run_marked": last_value(link, "marked"),
        "run_dropped": last_value(link, "dropped"),
        "run_backlog_max": max((r["backlog_bytes"] for r in link
                                if r["backlog_bytes"] is not None), default=None),
    }
    rates = [r["dcqcn_rate_mbps"] for f in flows for r in inwin(run["flows"][f])
             if r["dcqcn_rate_mbps"] is not None]
    if rates:
        s["dcqcn_rate_mean"] = mean(rates)
        # How much of its DCQCN rate a paced (limited) QP actually puts on
        # the wire: 1.0 for an exact pacer.
        lim = [(r["mbps"] or 0.0, r["dcqcn_rate_mbps"]) for f in flows
               for r in inwin(run["flows"][f])
               if r["dcqcn_limited"] == 1 and r["dcqcn_rate_mbps"]]
        if lim:
            s["pace_eff"] = sum(w for w, _ in lim) / sum(d for _, d in lim)
        # Each flow's mean DCQCN rate in the window: a flow below its
        # share by its rate was cut more; one below its rate, starved.
        fr = {f: mean(r["dcqcn_rate_mbps"] for r in inwin(run["flows"][f])
                      if r["dcqcn_rate_mbps"] is not None) for f in flows}
        s["flow_dcqcn"] = ",".join(f"{f}:{fr[f]:.1f}" for f in flows
                                   if fr[f] is not None)
    if conv:
        flow, tol, hold, width = conv
        s[f"converge_{flow}"] = convergence(run, flow, tol, hold, width, t_to)
        s[f"start_{flow}"] = flow_start(run["flows"][flow], cap)
    return s


def fmt(v):
    if v is None:
        return "none"
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def print_summary(sums, form):
    if form == "kv":
        for s in sums:
            print(" ".join(f"{k}={fmt(v)}" for k, v in s.items()))
        return
    cols = ["run", "flows", "from", "to", "jain", "util", "link_mbps", "cap_mbps",
            "backlog_max", "backlog_p90", "backlog_mean", "red_max", "marked", "dropped"]
    extra = sorted({k for s in sums for k in s if k.startswith("converge_")})
    cols += extra + ["flow_mbps"]
    table = [cols] + [[fmt(s.get(c)) for c in cols] for s in sums]
    widths = [max(len(r[i]) for r in table) for i in range(len(cols))]
    for r in table:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def plot(runs, names, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("plot.py: plotting needs matplotlib (apt-get install python3-matplotlib); "
                         "--summary works without it")
    n = len(names)
    fig, axes = plt.subplots(n, 2, figsize=(14, 3.6 * n), squeeze=False,
                             gridspec_kw={"width_ratios": [3, 2]})
    for i, name in enumerate(names):
        run = runs[name]
        ax, axq = axes[i]
        cap = last_value(run["link"], "cap_mbps")
        clip = 1.5 * cap if cap else None
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for j, f in enumerate(sorted(run["flows"])):
            rows = run["flows"][f]
            c = colors[j % len(colors)]
            ax.plot([r["t"] for r in rows], [r["mbps"] or 0 for r in rows], color=c,
                    lw=1.4, label=f"{f} on the wire")
            dr = [(r["t"], r["dcqcn_rate_mbps"]) for r in rows if r["dcqcn_rate_mbps"] is not None]
            # A QP never limited (DCQCN off, or no congestion) sits at the
            # line rate: nothing to show.
            if dr and any(r["dcqcn_limited"] for r in rows):
                ys = [min(v, clip) if clip else v for _, v in dr]
                ax.plot([t for t, _ in dr], ys, color=c, lw=1, ls="--",
                        label=f"{f} DCQCN rate" + (" (clipped)" if clip and max(v for _, v in dr) > clip else ""))
        link = run["link"]
        ax.plot([r["t"] for r in link], [r["mbps"] or 0 for r in link], color="black",
                lw=1, alpha=0.6, label="bottleneck tx")
        if cap:
            ax.axhline(cap, color="grey", ls=":", lw=1, label=f"shaped {cap:g} Mbit/s")
        if run.get("window"):
            for a_ in (ax, axq):
                a_.axvspan(*run["window"], color="grey", alpha=0.08, lw=0)
        ax.set_title(name + ("  (shaded: steady window)" if run.get("window") else ""))
        ax.set_xlabel("s")
        ax.set_ylabel("Mbit/s")
        ax.set_ylim(bottom=0, top=(clip * 1.05) if clip else None)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", ncol=2, loc="upper right")

        axq.plot([r["t"] for r in link], [(r["backlog_bytes"] or 0) / 1000 for r in link],
                 color="tab:red", lw=1.2, label="backlog")
        rmin, rmax = last_value(link, "red_min"), last_value(link, "red_max")
        if rmin:
            axq.axhline(rmin / 1000, color="tab:orange", ls=":", lw=1, label="RED min")
        if rmax:
            axq.axhline(rmax / 1000, color="tab:red", ls=":", lw=1, label="RED max")
        axq.set_xlabel("s")
        axq.set_ylabel("backlog (kB)")
        axq.set_ylim(bottom=0)
        axq.grid(alpha=0.3)
        ax2 = axq.twinx()
        for key, style, label in (("marked", "-", "CE marks/s"), ("dropped", "--", "drops/s")):
            pts = []
            for a, b in zip(link, link[1:]):
                if a[key] is not None and b[key] is not None and b["t"] > a["t"]:
                    pts.append((b["t"], (b[key] - a[key]) / (b["t"] - a["t"])))
            if pts and any(v for _, v in pts):
                ax2.plot([t for t, _ in pts], [v for _, v in pts], color="tab:blue",
                         ls=style, lw=0.8, alpha=0.7, label=label)
        ax2.set_ylabel("per second")
        ax2.set_ylim(bottom=0)
        h1, l1 = axq.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        axq.legend(h1 + h2, l1 + l2, fontsize="x-small", loc="upper right")
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # "| head" is fine
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("input", help="CSV, or a log containing it; - for stdin")
    ap.add_argument("-o", "--output", help="image to write (.svg, .png, .pdf); default dcqcn_incast.svg")
    ap.add_argument("--run", action="append", help="only this run (repeatable); default all")
    ap.add_argument("--extract", action="store_true", help="print the CSV found in INPUT and exit")
    ap.add_argument("--summary", action="store_true", help="print Jain index, utilisation, ... per run")
    ap.add_argument("--from", dest="t_from", type=float, help="window start (s into the run)")
    ap.add_argument("--to", dest="t_to", type=float, help="window end (s into the run)")
    ap.add_argument("--last", type=float, help="window: the last S seconds of the run")
    ap.add_argument("--converge", metavar="FLOW", help="also report FLOW's convergence time")
    ap.add_argument("--tol", type=float, default=0.2, help="convergence: within this fraction of the mean (0.2)")
    ap.add_argument("--hold", type=float, default=3.0, help="convergence: for this many seconds (3)")
    ap.add_argument("--smooth", type=float, default=1.0, help="convergence: moving average width, s (1)")
    ap.add_argument("--format", choices=["table", "kv"], default="table")
    a = ap.parse_args()

    text = read_text(a.input)
    if a.extract:
        sys.stdout.write(extract_csv(text))
        return
    runs = load(text)
    names = a.run or list(runs)
    missing = [n for n in names if n not in runs]
    if missing:
        raise SystemExit(f"plot.py: no run {', '.join(missing)} (runs: {', '.join(runs) or 'none'})")
    if not names:
        raise SystemExit("plot.py: the CSV has no rows")
    if a.summary:
        conv = (a.converge, a.tol, a.hold, a.smooth) if a.converge else None
        print_summary([summarise(n, runs[n], a.t_from, a.t_to, a.last, conv) for n in names], a.format)
        return
    plot(runs, names, a.output or "dcqcn_incast.svg")


if __name__ == "__main__":
    main()
