#!/usr/bin/env python3
"""tshmem against Open MPI's OpenSHMEM on the host path: one table from one run of scripts/oshmem-compare.sh.

Input: the JSON lines host_shmem appended with --json (one run per library, build and PE count, in alternating
rounds). Per row (PEs, op, size) each library keeps its best round (least time, most bandwidth), and the ratio
is always a ratio of times: tshmem's time / OSHMEM's (for bandwidth OSHMEM's GB/s / tshmem's), so below 1.0
means tshmem is faster. The symmetry check compiled out (tshmem_nocheck) is shown for the collectives.

  oshmem_table.py --jsonl RUN.jsonl [--out SUMMARY.json]
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_table import load_rows  # noqa: E402  (one reader of the benchmarks' JSON lines)

UNITS = {"time (s)": "s", "latency (us)": "us", "BW (GB/sec)": "GB/s"}


def higher_is_better(metric):
    return "BW" in metric


def best_rows(rows):
    """{(PEs, table, op, size): {"metric", "values": {variant: best}}} in first-seen order."""
    best = collections.OrderedDict()
    for r in rows:
        if r.get("bench") != "host_shmem" or not isinstance(r.get("value"), (int, float)):
            continue
        variant = r["lib"] if r.get("build", "default") == "default" else "%s[%s]" % (r["lib"], r["build"])
        key = (int(r["PEs"]), r["table"], r["op"], str(r["size(B)"]))
        entry = best.setdefault(key, {"metric": r["metric"], "values": {}})
        old = entry["values"].get(variant)
        better = higher_is_better(r["metric"])
        if old is None or (r["value"] > old if better else r["value"] < old):
            entry["values"][variant] = r["value"]
    return best


def time_ratio(tshmem, oshmem, metric):
    if not tshmem or not oshmem:
        return None
    return oshmem / tshmem if higher_is_better(metric) else tshmem / oshmem


def fmt(value):
    if value is None:
        return "-"
    return "%.4f" % value if value < 1 else "%.3f" % value if value < 100 else "%.1f" % value


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", required=True, help="JSON lines appended by host_shmem (--json)")
    ap.add_argument("--out", help="summary JSON to write")
    ap.add_argument("--backend", default="shm", help="tshmem's memory backend in these runs (for the title)")
    args = ap.parse_args()
    best = best_rows(load_rows(args.jsonl) if os.path.exists(args.jsonl) else [])
    if not best:
        print("oshmem_table: no host_shmem rows in %s" % args.jsonl)
        return 1
    has_oshmem = any("oshmem" in e["values"] for e in best.values())
    print(f"\n## host path: tshmem ({args.backend} backend) against Open MPI's OpenSHMEM; "
          "ratio = tshmem's time / OSHMEM's (below 1.0: tshmem faster)")
    header = ("PEs", "op", "size(B)", "unit", "tshmem", "OSHMEM", "ratio")
    print("%-4s %-22s %-10s %-5s %10s %10s %7s" % header)
    summary, worst = [], None
    for (pes, table, op, size), entry in sorted(best.items(), key=lambda kv: kv[0][0]):
        metric, values = entry["metric"], entry["values"]
        variants = [("tshmem", op)]
        if table == "collectives":
            variants.append(("tshmem[nocheck]", op + " [no check]"))
        for variant, label in variants:
            if variant not in values:
                continue
            ratio = time_ratio(values[variant], values.get("oshmem"), metric)
            print("%-4d %-22s %-10s %-5s %10s %10s %7s" % (pes, label, size, UNITS.get(metric, metric),
                                                         fmt(values[variant]), fmt(values.get("oshmem")),
                                                         fmt(ratio)))
            summary.append({"PEs": pes, "table": table, "op": label, "size": size, "metric": metric,
                            "tshmem": values[variant], "oshmem": values.get("oshmem"), "ratio": ratio})
            if ratio is not None and variant == "tshmem" and (worst is None or ratio > worst["ratio"]):
                worst = summary[-1]
    if not has_oshmem:
        print("(no OSHMEM rows: the twin was not built or did not run)")
    elif worst is not None:
        print("rows at or below 1.0: %d of %d; the highest ratio: %s %s B at %d PEs, %.3f" % (
            sum(1 for s in summary if s["ratio"] is not None and s["ratio"] <= 1.0 and "[no check]" not in s["op"]),
            sum(1 for s in summary if s["ratio"] is not None and "[no check]" not in s["op"]),
            worst["op"], worst["size"], worst["PEs"], worst["ratio"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": summary}, f, indent=1)
        print("summary: %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
