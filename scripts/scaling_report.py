#!/usr/bin/env python3
"""Strong- or weak-scaling report from tessera's JSON reports (one `tessera run --report` per rank
count; schema in docs/report.md). Strong: the same problem each time. Weak (--weak): the work per
rank held constant (e.g. M grown with the ranks), so the problems differ.

    scripts/scaling_report.py --out runs/1234/scaling runs/1234/report-n*.json
    scripts/scaling_report.py --weak --time compute --out docs/weak runs/weak-np*.json

writes PREFIX.md, a markdown table with one row per report: the ranks and the nodes they ran on
(distinct hosts), the time of each phase (the maximum over ranks, in milliseconds), the wall time,
the aggregate GFLOP/s, and speedup and parallel efficiency of the wall time against the smallest
rank count, then every rank's phases (one table per report); and PREFIX.png, a plot of the
same, where matplotlib is installed (without it the plot is skipped, and the table says so).
Weak scaling: efficiency = T(smallest) / T(P) and scaled speedup = efficiency * P / P(smallest).
--time compute takes, instead of the wall time, the slowest rank's `compute` phase plus rank 0's
`gather` (compute and communication, file I/O and start-up excluded).
Standard library only, apart from matplotlib."""
import argparse
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"scaling_report: {path}: {e}")
    if rep.get("schema") != "tessera.report/1":
        sys.exit(f"scaling_report: {path}: not a tessera report (schema {rep.get('schema')!r})")
    return rep


def phase_names(reports):
    """Every phase that ran, in the order the ranks ran them."""
    names = []
    for rep in reports:
        for rank in rep["ranks"]:
            for name in rank.get("phase_order", list(rank.get("phases", {}))):
                if name not in names:
                    names.append(name)
    return names


def max_phase(rep, name):
    times = [r["phases"][name] for r in rep["ranks"] if name in r.get("phases", {})]
    return max(times) if times else None


def problem(rep):
    s = rep["shape"]
    return (s["m"], s["n"], s["k"], rep["dtype"])


def seconds(rep, what):
    if what == "wall":
        return rep["totals"]["wall_seconds"]
    compute = max_phase(rep, "compute") or 0.0
    return compute + rep["ranks"][0].get("phases", {}).get("gather", 0.0)


def rows(reports, phases, weak=False, what="wall"):
    base = reports[0]
    base_p, base_t = base["nranks"], seconds(base, what)
    out = []
    for rep in reports:
        p, t = rep["nranks"], seconds(rep, what)
        ratio = base_t / t if t > 0 else float("nan")
        speedup = ratio * p / base_p if weak else ratio
        out.append({
            "nodes": len({r.get("host", "?") for r in rep["ranks"]}),
            "shape": "{}x{}x{}".format(*problem(rep)[:3]),
            "algorithm": f"{rep.get('algorithm', 'panels')} / {rep.get('comm', 'host')}",
            "ranks": p,
            "active": sum(1 for r in rep["ranks"] if r.get("active", True)),
            "grid": f"{rep['grid']['rows']}x{rep['grid']['cols']}",
            "phases": {name: max_phase(rep, name) for name in phases},
            "wall": t,
            "gflops": rep["totals"].get("aggregate_gflops"),
            "speedup": speedup,
            "efficiency": ratio if weak else speedup * base_p / p,
        })
    return out


def ms(seconds):
    return "–" if seconds is None else f"{1e3 * seconds:.1f}"


def table(reports, phases, table_rows, weak=False, what="wall"):
    m, n, k, dtype = problem(reports[0])
    backends = sorted({f"{r['backend']} / {r['kernel']}" for r in reports})
    timed = "wall time" if what == "wall" else "compute + communication time (slowest compute + rank 0's gather)"
    if weak:
        head = f"# Weak scaling: work per rank constant, {dtype}, {', '.join(backends)}"
        how = (f"Efficiency: T({table_rows[0]['ranks']} rank(s)) / T(P) of the {timed}; scaled speedup: "
               "efficiency x P.")
    else:
        head = f"# Strong scaling: C ({m}×{n}) = A ({m}×{k}) · B ({k}×{n}), {dtype}, {', '.join(backends)}"
        how = f"Speedup and efficiency: of the {timed}, against {table_rows[0]['ranks']} rank(s)."
    lines = [
        head,
        "",
        "Time per phase: the slowest rank's, in milliseconds. " + how,
        "",
        "| ranks | nodes | shape | algorithm / comm | grid | " + " | ".join(f"{p} ms" for p in phases)
        + f" | {'wall' if what == 'wall' else 'compute+comm'} ms | GFLOP/s | {'scaled speedup' if weak else 'speedup'} | efficiency |",
        "|---:|---:|:---:|:---:|:---:|" + "---:|" * len(phases) + "---:|---:|---:|---:|",
    ]
    for r in table_rows:
        ranks = str(r["ranks"]) if r["active"] == r["ranks"] else f"{r['ranks']} ({r['active']} active)"
        gflops = "–" if r["gflops"] is None else f"{r['gflops']:.1f}"
        lines.append(f"| {ranks} | {r['nodes']} | {r['shape']} | {r['algorithm']} | {r['grid']} | "
                     + " | ".join(ms(r["phases"][p]) for p in phases)
                     + f" | {ms(r['wall'])} | {gflops} | {r['speedup']:.2f} | {100 * r['efficiency']:.0f}% |")
    return lines


def rank_tables(reports, phases):
    """Every rank's own phases, one table per report: where the slowest rank's time comes from
    (a node, a block, the rank that writes)."""
    lines = ["", "## Per rank", ""]
    for rep in reports:
        nodes = len({r.get("host", "?") for r in rep["ranks"]})
        lines += [f"### {rep['nranks']} rank(s) on {nodes} node(s), grid {rep['grid']['rows']}x{rep['grid']['cols']}, "
                  f"wall {ms(rep['totals']['wall_seconds'])} ms", "",
                  "| rank | host | block | " + " | ".join(f"{p} ms" for p in phases) + " |",
                  "|---:|:---|:---:|" + "---:|" * len(phases)]
        for r in rep["ranks"]:
            b = r.get("block", {})
            block = f"({b.get('row', '?')},{b.get('col', '?')})" if r.get("active", True) else "idle"
            lines.append(f"| {r['rank']} | {r.get('host', '?')} | {block} | "
                         + " | ".join(ms(r.get("phases", {}).get(p)) for p in phases) + " |")
        lines.append("")
    return lines


def plot(path, phases, table_rows, title, time_label="wall", weak=False):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plot skipped: matplotlib is not installed (apt install python3-matplotlib, or pip install matplotlib)"
    ranks = [r["ranks"] for r in table_rows]
    fig, (ax_t, ax_s) = plt.subplots(1, 2, figsize=(11, 4.5))
    for name in phases:
        pts = [(r["ranks"], r["phases"][name]) for r in table_rows if r["phases"][name]]
        if pts:
            ax_t.plot([p for p, _ in pts], [1e3 * t for _, t in pts], marker="o", label=name)
    ax_t.plot(ranks, [1e3 * r["wall"] for r in table_rows], marker="s", color="black", label=time_label)
    ax_t.set(xscale="log", yscale="log", xlabel="ranks", ylabel="ms (slowest rank)", title="time per phase")
    ax_t.legend(fontsize="small")
    speedup = "scaled speedup" if weak else "speedup"
    ax_s.plot(ranks, [r["speedup"] for r in table_rows], marker="o", label=f"measured ({time_label})")
    ax_s.plot(ranks, [p / ranks[0] for p in ranks], linestyle="--", color="gray", label="ideal")
    ax_s.set(xlabel="ranks", ylabel=f"{speedup} over {ranks[0]} rank(s)", title=speedup)
    ax_s.legend(fontsize="small")
    labels = [f"{r['ranks']}" + (f"\n{r['nodes']} node{'s' if r['nodes'] > 1 else ''}"
                                   if any(x["nodes"] > 1 for x in table_rows) else "") for r in table_rows]
    for ax in (ax_t, ax_s):
        ax.set_xticks(ranks, labels)
        ax.grid(True, alpha=0.3)
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"plot: {path}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", metavar="REPORT.json")
    ap.add_argument("--out", default="scaling", metavar="PREFIX", help="writes PREFIX.md and PREFIX.png")
    ap.add_argument("--weak", action="store_true", help="weak scaling: problems may differ (work per rank constant)")
    ap.add_argument("--time", choices=["wall", "compute"], default="wall",
                    help="wall time, or compute + communication (slowest compute + rank 0's gather)")
    args = ap.parse_args()

    reports = sorted((load(p) for p in args.reports), key=lambda r: r["nranks"])
    problems = {problem(r) for r in reports}
    if len(problems) > 1 and not args.weak:
        sys.exit(f"scaling_report: the reports are not of one problem (m, n, k, dtype): {sorted(problems)}; "
                 "for weak scaling pass --weak")
    phases = phase_names(reports)
    table_rows = rows(reports, phases, args.weak, args.time)
    lines = table(reports, phases, table_rows, args.weak, args.time)
    note = plot(args.out + ".png", phases, table_rows, lines[0].lstrip("# "),
                "wall" if args.time == "wall" else "compute+comm", args.weak)
    kind = "weak" if args.weak else "strong"
    lines += ["", f"![{kind} scaling]({os.path.basename(args.out)}.png)" if note.startswith("plot: ") else note]
    lines += rank_tables(reports, phases)
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"table: {args.out}.md")
    if note.startswith("plot: "):
        print(note)


if __name__ == "__main__":
    main()
