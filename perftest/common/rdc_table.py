#!/usr/bin/env python3
"""The cost of -rdc, side by side (used by scripts/rdc-compare.sh).

Input: one JSON-lines file per run, named <bench><variant>.np<N>.r<round>.jsonl, <variant> empty (built without
-rdc) or "_rdc" (the same source built with separate compilation). For each benchmark, PE count, table and
size: every round's value of both builds, their medians, and the ratio with -rdc / without. Goals: latency
ratio <= 1.05, bandwidth ratio >= 0.97. Prints the tables; writes the rows as JSON with --out.

  rdc_table.py --logs DIR [--out SUMMARY.json]
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"^(?P<bench>[a-z_]+?)(?P<rdc>_rdc)?\.np(?P<np>\d+)\.r(?P<round>\d+)\.jsonl$")
LATENCY_GOAL = 1.05  # with -rdc / without, at most
BANDWIDTH_GOAL = 0.97  # with -rdc / without, at least


def lower_is_better(metric):
    return "latency" in metric or "(us)" in metric


def size_label(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def collect(logs):
    """{(bench, np, table, size, metric): {False: [values by round], True: [...]}}"""
    values = collections.defaultdict(lambda: {False: [], True: []})
    runs = [(m, name) for name in os.listdir(logs) for m in [NAME.match(name)] if m]
    for match, name in sorted(runs, key=lambda run: (run[0]["bench"], int(run[0]["np"]), int(run[0]["round"]))):
        with open(os.path.join(logs, name)) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                row = json.loads(line)
                key = (match["bench"], int(match["np"]), row["table"], int(row["size(B)"]), row["metric"])
                values[key][match["rdc"] is not None].append(float(row["value"]))
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", required=True)
    parser.add_argument("--out")
    args = parser.parse_args()
    values = collect(args.logs)
    if not values:
        print(f"rdc_table.py: no runs in {args.logs}", file=sys.stderr)
        return 1
    rows = []
    header = None
    for (bench, np, table, size, metric), both in sorted(values.items()):
        if (bench, np, table) != header:
            header = (bench, np, table)
            print(f"\n# {bench}, {np} PE{'s' if np > 1 else ''}: {table} ({metric}; every round, then the median)")
            print(f"{'size':>9} | {'without -rdc':<28} | {'with -rdc':<28} | {'ratio':>6} | goal")
        plain, rdc = both[False], both[True]
        if not plain or not rdc:
            print(f"{size_label(size):>9} | {'missing' if not plain else ''} {'missing' if not rdc else ''}")
            continue
        ratio = statistics.median(rdc) / statistics.median(plain)
        latency = lower_is_better(metric)
        met = ratio <= LATENCY_GOAL if latency else ratio >= BANDWIDTH_GOAL
        goal = f"{'<=' if latency else '>='} {LATENCY_GOAL if latency else BANDWIDTH_GOAL:.2f} {'met' if met else 'MISSED'}"
        fmt = "{:.3f}" if latency else "{:.2f}"
        print(f"{size_label(size):>9} | {' / '.join(fmt.format(v) for v in plain):<28} | "
              f"{' / '.join(fmt.format(v) for v in rdc):<28} | {ratio:6.3f} | {goal}")
        rows.append({"bench": bench, "np": np, "table": table, "size": size, "metric": metric, "without_rdc": plain,
                     "with_rdc": rdc, "ratio": ratio, "goal_met": met})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
