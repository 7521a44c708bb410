#!/usr/bin/env python3
"""Turns a coll-compare run into scaling tables and a JSON summary (used by scripts/coll-compare.sh).

Input: a folder of JSON-line files named <collective>.np<N>.<mode>.jsonl (mode: stream or graph), each
written by one perftest/device/coll run with --json (columns size(B), count, type, redop, latency(us),
algbw(GB/s), busbw(GB/s), nccl_latency(us), nccl_busbw(GB/s), ratio; the barrier binary adds a table
"... in one kernel" with latency(us) per device barrier). Output: per collective and mode, one row per size
with, for each PE count, tshmem's latency and bus bandwidth, NCCL's bus bandwidth and the ratio NCCL time /
tshmem time (> 1: tshmem faster); then the collectives' targets at 2 PEs, each marked met or missed.

  coll_table.py --runs DIR --out SUMMARY.json
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

NAME = re.compile(r"^(?P<coll>[a-z_]+)\.np(?P<np>\d+)\.(?P<mode>stream|graph)\.jsonl$")
KIB, MIB = 1 << 10, 1 << 20


def number(value):
    return value if isinstance(value, (int, float)) else None


def load(folder):
    """{(coll, mode): {np: {size: row}}} and {np: {barrier name: us}} (the in-kernel barrier rows)."""
    runs = collections.OrderedDict()
    in_kernel = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
        m = NAME.match(os.path.basename(path))
        if not m:
            continue
        coll, np_, mode = m.group("coll"), int(m.group("np")), m.group("mode")
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                row = json.loads(line)
                if "barrier" in row and row.get("table", "").endswith(" in one kernel"):
                    in_kernel.setdefault(np_, {})[row["barrier"]] = number(row.get("latency(us)"))
                    continue
                entry = {"latency_us": number(row.get("latency(us)")), "busbw": number(row.get("busbw(GB/s)")),
                         "nccl_latency_us": number(row.get("nccl_latency(us)")),
                         "nccl_busbw": number(row.get("nccl_busbw(GB/s)")), "ratio": number(row.get("ratio"))}
                runs.setdefault((coll, mode), {}).setdefault(np_, collections.OrderedDict())[
                    int(row["size(B)"])] = entry
    return runs, in_kernel


def fmt(v, digits=2):
    return "-" if v is None else "%.*f" % (digits, v)


def print_tables(runs, in_kernel, out):
    tables = []
    for (coll, mode) in sorted(runs, key=lambda k: (k[0], k[1] != "stream")):
        by_np = runs[(coll, mode)]
        nps = sorted(by_np)
        sizes = sorted({s for rows in by_np.values() for s in rows})
        print("\n## %s, %s (per PE count: tshmem latency us, tshmem busbw, NCCL busbw GB/s, "
              "ratio = NCCL time / tshmem time)" % (coll, "CUDA graph" if mode == "graph" else "back-to-back"),
              file=out)
        print("%-12s" % "" + "".join("%-40s" % ("%d PEs" % n) for n in nps), file=out)
        print("%-12s" % "size(B)" + "%-10s%-10s%-10s%-10s" % ("lat(us)", "busbw", "NCCL bw", "ratio") * len(nps),
              file=out)
        rows = []
        for size in sizes:
            cells = ["%-12d" % size]
            for n in nps:
                r = by_np[n].get(size)
                cells.append("%-40s" % ("-" if r is None else "%-10s%-10s%-10s%-10s" % (
                    fmt(r["latency_us"]), fmt(r["busbw"]), fmt(r["nccl_busbw"]), fmt(r["ratio"], 3))))
            print("".join(cells), file=out)
            rows.append({"size": size, "by_np": {str(n): by_np[n].get(size) for n in nps}})
        tables.append({"collective": coll, "mode": mode, "pes": nps, "rows": rows})
    if in_kernel:
        print("\n## device barrier inside one kernel (us per barrier)", file=out)
        for n, found in sorted(in_kernel.items()):
            print("%-8s %s" % ("%d PEs" % n, "  ".join("%s %s" % (k, fmt(v, 3)) for k, v in found.items())),
                  file=out)
    return tables


def check_targets(runs, in_kernel, out):
    """The collectives' targets against NCCL, on the 2-PE runs."""
    targets = []

    def add(name, rows, ok_row, detail_row):
        if not rows:
            return
        worst = min(rows, key=lambda sr: sr[1]["ratio"])
        targets.append({"target": name, "met": all(ok_row(r) for _, r in rows),
                        "detail": "worst %d B: %s" % (worst[0], detail_row(worst[1]))})

    def select(coll, mode, lo, hi):
        rows = runs.get((coll, mode), {}).get(2, {})
        return [(s, r) for s, r in rows.items() if lo <= s <= hi and r["ratio"] is not None]

    for mode in ("stream", "graph"):
        add("allreduce 8-256 KiB latency <= 0.5x NCCL (%s)" % mode, select("allreduce", mode, 8 * KIB, 256 * KIB),
            lambda r: r["latency_us"] <= 0.5 * r["nccl_latency_us"],
            lambda r: "%s vs %s us (%.2fx)" % (fmt(r["latency_us"]), fmt(r["nccl_latency_us"]), 1 / r["ratio"]))
    add("allreduce >= 64 MiB busbw >= 1.05x NCCL", select("allreduce", "stream", 64 * MIB, 1 << 62),
        lambda r: r["ratio"] >= 1.05, lambda r: "%s vs %s GB/s (%.3fx)" % (fmt(r["busbw"]), fmt(r["nccl_busbw"]),
                                                                            r["ratio"]))
    for coll in ("alltoall", "allgather"):
        add("%s 1-256 MiB busbw >= 1.0x NCCL" % coll, select(coll, "stream", MIB, 256 * MIB),
            lambda r: r["ratio"] >= 1.0, lambda r: "%s vs %s GB/s (%.3fx)" % (fmt(r["busbw"]), fmt(r["nccl_busbw"]),
                                                                               r["ratio"]))
    barrier = in_kernel.get(2, {})
    if barrier:
        best = min((v for v in barrier.values() if v is not None), default=None)
        if best is not None:
            targets.append({"target": "device barrier <= 2 us at 2 PEs", "met": best <= 2.0,
                            "detail": "%.3f us per barrier in one kernel" % best})
    print("\n## Targets (collectives against NCCL, 2 PEs)", file=out)
    for t in targets:
        print("%-7s %-48s %s" % ("met" if t["met"] else "MISSED", t["target"], t["detail"]), file=out)
    if not targets:
        print("(no 2-PE runs with NCCL figures)", file=out)
    return targets


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", required=True, help="folder of <collective>.np<N>.<mode>.jsonl files")
    ap.add_argument("--out", required=True, help="summary JSON to write")
    args = ap.parse_args()
    runs, in_kernel = load(args.runs)
    tables = print_tables(runs, in_kernel, sys.stdout)
    targets = check_targets(runs, in_kernel, sys.stdout)
    with open(args.out, "w") as f:
        json.dump({"tables": tables, "barrier_in_kernel_us": in_kernel, "targets": targets}, f, indent=1)
    print("\nsummary: %s" % args.out)


if __name__ == "__main__":
    main()
