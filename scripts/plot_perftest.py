#!/usr/bin/env python3
"""PNG charts from a perftest-compare summary (compare.json, written by perftest/common/compare_table.py).

  plot_perftest.py compare.json [--out DIR]

One chart per benchmark table: against size (log scale) when the table is by size, both libraries on the
same axes (tshmem solid, NVSHMEM dashed, one colour per scope / type / op), the NVLink line rate on
bandwidth charts; grouped bars otherwise (atomic ops, barriers, fan-out). overview.png comes first: the
geometric-mean ratio tshmem / NVSHMEM of every table, green where tshmem is ahead.
"""
import argparse
import json
import math
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LINE_RATE_GBPS = 478.0  # NV18, 2 x H200, per direction
STYLE = {"tshmem": "-", "nvshmem": "--"}
LABEL = {"tshmem": "tshmem", "nvshmem": "NVSHMEM"}


def slug(text):
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def size_label(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def is_by_size(comp):
    return comp["columns"] and comp["columns"][0] == "size(B)" and len({r["key"][0] for r in comp["rows"]}) > 1


def title_of(comp):
    return "%s%s: %s" % (comp["bench"], " (bidirectional)" if comp["bidir"] else "", comp["table"])


def finish(fig, ax, comp, path, **grid):
    """The metric and its direction, the title, a light grid (`grid`: which lines), the legend; saves and closes."""
    ax.set_ylabel(comp["metric"] + (" (lower is better)" if comp["lower_is_better"] else " (higher is better)"))
    ax.set_title(title_of(comp))
    ax.grid(True, alpha=0.3, **grid)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_by_size(comp, path):
    fig, ax = plt.subplots(figsize=(8, 5))
    variants = []
    for r in comp["rows"]:
        v = "/".join(r["key"][1:])
        if v not in variants:
            variants.append(v)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, v in enumerate(variants):
        rows = sorted((r for r in comp["rows"] if "/".join(r["key"][1:]) == v), key=lambda r: int(r["key"][0]))
        for lib in ("tshmem", "nvshmem"):
            pts = [(int(r["key"][0]), r[lib]) for r in rows if r[lib] is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], STYLE[lib], marker="o", markersize=3,
                        color=colours[i % len(colours)], label="%s %s" % (LABEL[lib], v))
    ax.set_xscale("log", base=2)
    if comp["lower_is_better"]:
        ax.set_yscale("log")
    sizes = sorted({int(r["key"][0]) for r in comp["rows"]})
    step = max(1, len(sizes) // 10)
    ax.set_xticks(sizes[::step])
    ax.set_xticklabels([size_label(s) for s in sizes[::step]])
    if "GB/sec" in comp["metric"]:
        rate = LINE_RATE_GBPS * (2 if comp["bidir"] else 1)
        ax.axhline(rate, color="grey", linewidth=0.8, linestyle=":")
        ax.text(sizes[0], rate, "NVLink line rate %.0f GB/s" % rate, va="bottom", fontsize=8, color="grey")
    ax.set_xlabel("size (bytes)")
    finish(fig, ax, comp, path, which="both")


def plot_bars(comp, path):
    rows = comp["rows"]
    labels = ["/".join(r["key"]) for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 5))
    width = 0.4
    for j, lib in enumerate(("tshmem", "nvshmem")):
        vals = [r[lib] if r[lib] is not None else 0 for r in rows]
        ax.bar([i + (j - 0.5) * width for i in range(len(rows))], vals, width, label=LABEL[lib])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    finish(fig, ax, comp, path, axis="y")


def plot_overview(comparisons, path):
    names, ratios = [], []
    for comp in comparisons:
        if comp["bench"] == "fanout":  # the twin times nvshmem_ptr there, not the same two read paths
            continue
        rs = [r["ratio"] for r in comp["rows"] if r["ratio"]]
        if not rs:
            continue
        g = math.exp(sum(math.log(x) for x in rs) / len(rs))
        # Shown as "times better than NVSHMEM": > 1 means tshmem is ahead whatever the metric's direction.
        names.append(title_of(comp))
        ratios.append(1 / g if comp["lower_is_better"] else g)
    if not names:
        return False
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(names) + 1.5))
    ax.barh(range(len(names)), ratios, color=["tab:green" if r >= 1 else "tab:red" for r in ratios])
    ax.set_xscale("log", base=2)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("tshmem advantage over NVSHMEM (geometric mean over sizes; > 1: tshmem ahead)")
    ax.set_title("tshmem vs NVSHMEM, same kernels, same run")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summary", help="compare.json from scripts/perftest-compare.sh")
    ap.add_argument("--out", default=".", help="folder for the PNG files")
    args = ap.parse_args()
    with open(args.summary) as f:
        comparisons = json.load(f)["comparisons"]
    os.makedirs(args.out, exist_ok=True)
    written = []
    if plot_overview(comparisons, os.path.join(args.out, "overview.png")):
        written.append("overview.png")
    for comp in comparisons:
        name = "%s%s_%s.png" % (comp["bench"], "_bidir" if comp["bidir"] else "", slug(comp["table"]))
        (plot_by_size if is_by_size(comp) else plot_bars)(comp, os.path.join(args.out, name))
        written.append(name)
    print("%d charts in %s: %s" % (len(written), args.out, ", ".join(written)))


if __name__ == "__main__":
    main()
