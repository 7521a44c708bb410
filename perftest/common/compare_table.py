#!/usr/bin/env python3
"""Turns one perftest-compare run into tables and a JSON summary (used by scripts/perftest-compare.sh).

Input: the JSON lines every benchmark appended with --json (keys: bench, lib, build, table, the table's
columns in order, metric, value, ctas, threads, iters, bidir) and the Google Benchmark JSON files of the
host malloc runs. For each benchmark and table: one row per key (the columns before the measurement), each
library at its best launch shape (-c swept by the script), and the ratio tshmem / NVSHMEM. Then the cost of
the device PE check (put_bw, p_latency), malloc + free, and the device RMA targets, each marked met or missed.

  compare_table.py --jsonl RUN.jsonl [--malloc-json FILE ...] --out SUMMARY.json
"""
import argparse
import collections
import json
import os
import re
import sys

STANDARD = {"bench", "lib", "build", "table", "metric", "value", "ctas", "threads", "iters", "bidir"}
LINE_RATE_GBPS = 478.0  # NV18 on the 2 x H200 host, per direction


def lower_is_better(metric):
    return "latency" in metric or "(us)" in metric


def load_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def key_columns(row):
    """The row's columns before the measurement, in table order (json keeps insertion order)."""
    cols = [k for k in row if k not in STANDARD]
    return cols[:-1] if cols and cols[-1] == row.get("metric") else cols


def best_per_key(rows):
    """{(bench, table, bidir): {"metric", "columns", "libs": {lib/build: {key: (value, ctas)}}}}"""
    groups = collections.OrderedDict()
    for r in rows:
        gkey = (r["bench"], r["table"], bool(r.get("bidir", False)))
        g = groups.setdefault(gkey, {"metric": r["metric"], "columns": key_columns(r), "libs": {}})
        lib = r["lib"] if r.get("build", "default") == "default" else "%s[%s]" % (r["lib"], r["build"])
        key = tuple(str(r[c]) for c in g["columns"])
        lower = lower_is_better(r["metric"])
        seen = g["libs"].setdefault(lib, collections.OrderedDict())
        old = seen.get(key)
        value = r["value"]
        if not isinstance(value, (int, float)):
            continue
        if old is None or (value < old[0] if lower else value > old[0]):
            seen[key] = (value, r.get("ctas"))
    return groups


def fmt(v, digits=3):
    return "-" if v is None else ("%.*f" % (digits, v))


def print_tables(groups, out):
    comparisons = []
    for (bench, table, bidir), g in groups.items():
        libs = g["libs"]
        if "tshmem" not in libs and "nvshmem" not in libs:
            continue
        lower = lower_is_better(g["metric"])
        keys = list(libs.get("tshmem", {}).keys())
        keys += [k for k in libs.get("nvshmem", {}) if k not in keys]
        title = "%s%s: %s, %s (%s is better; ratio = tshmem / NVSHMEM)" % (
            bench, " --bidir" if bidir else "", table, g["metric"], "lower" if lower else "higher")
        print("\n## " + title, file=out)
        header = g["columns"] + ["tshmem", "NVSHMEM", "ratio", "c tshmem", "c NVSHMEM"]
        print("".join("%-14s" % h for h in header), file=out)
        rows = []
        for k in keys:
            t = libs.get("tshmem", {}).get(k)
            n = libs.get("nvshmem", {}).get(k)
            ratio = t[0] / n[0] if t and n and n[0] else None
            cells = list(k) + [fmt(t and t[0]), fmt(n and n[0]), fmt(ratio), str(t[1]) if t else "-",
                               str(n[1]) if n else "-"]
            print("".join("%-14s" % c for c in cells), file=out)
            rows.append({"key": list(k), "tshmem": t and t[0], "nvshmem": n and n[0], "ratio": ratio,
                         "tshmem_ctas": t and t[1], "nvshmem_ctas": n and n[1]})
        comparisons.append({"bench": bench, "table": table, "bidir": bidir, "metric": g["metric"],
                            "lower_is_better": lower, "columns": g["columns"], "rows": rows})
    return comparisons


def pe_check_costs(groups, out):
    """Relative cost of the device PE check: check vs pe_check=0, same benchmark and key, best -c each."""
    print("\n## Device PE check cost (tshmem default vs TSHMEM_DEVICE_PE_CHECK=0; target <= 1 %)", file=out)
    result = []
    for (bench, table, bidir), g in groups.items():
        on, off = g["libs"].get("tshmem"), g["libs"].get("tshmem[pe_check=0]")
        if not on or not off:
            continue
        lower = lower_is_better(g["metric"])
        for k, (v_on, _) in on.items():
            if k not in off or not off[k][0] or not v_on:
                continue
            v_off = off[k][0]
            cost = (v_on / v_off - 1.0) if lower else (v_off / v_on - 1.0)
            print("%-22s %-14s check %-10s no check %-10s cost %+.2f %%" % (
                bench + (" --bidir" if bidir else ""), "/".join(k), fmt(v_on), fmt(v_off), 100 * cost), file=out)
            result.append({"bench": bench, "bidir": bidir, "key": list(k), "check": v_on, "nocheck": v_off,
                           "cost": cost})
    return result


def malloc_results(paths, out):
    """Mean real time per malloc + free pair from Google Benchmark JSON, by variant and size."""
    found = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            data = json.load(f)
        runs, means = {}, {}
        for b in data.get("benchmarks", []):
            m = re.match(r"malloc_free/(\w+)/(\d+)", b["name"])
            if not m:
                continue
            us = b["real_time"] * {"us": 1.0, "ns": 1e-3, "ms": 1e3}.get(b.get("time_unit", "us"), 1.0)
            if b.get("aggregate_name") == "mean":
                means[(m.group(2), m.group(1))] = us
            elif b.get("run_type", "iteration") == "iteration":
                runs.setdefault((m.group(2), m.group(1)), []).append(us)
        # The mean aggregate when repetitions ran, else the plain runs' average.
        for key, values in runs.items():
            means.setdefault(key, sum(values) / len(values))
        for (size, variant), us in means.items():
            found.setdefault(size, {})[variant] = us
    if found:
        print("\n## malloc + free pair (us, mean of 3 x 2000)", file=out)
        print("%-10s%-12s%-12s%-12s%-16s%-16s" % ("size(B)", "check", "nocheck", "nvshmem", "check/nocheck",
                                                  "check/NVSHMEM"), file=out)
        for size, v in sorted(found.items(), key=lambda kv: int(kv[0])):
            c, n, nv = v.get("check"), v.get("nocheck"), v.get("nvshmem")
            print("%-10s%-12s%-12s%-12s%-16s%-16s" % (size, fmt(c), fmt(n), fmt(nv), fmt(c / n if c and n else None),
                                                      fmt(c / nv if c and nv else None)), file=out)
    return found


def find(comparisons, bench, bidir=False):
    for c in comparisons:
        if c["bench"] == bench and c["bidir"] == bidir:
            yield c


def check_targets(comparisons, pe_costs, malloc, out):
    """The device RMA targets against NVSHMEM (2 x H200), each with the figure that decides it."""
    targets = []

    def add(name, ok, detail):
        targets.append({"target": name, "met": ok, "detail": detail})

    for c in find(comparisons, "put_bw"):
        rows = {int(r["key"][0]): r for r in c["rows"] if r["ratio"] is not None}
        if 268435456 in rows:
            r = rows[268435456]
            add("put_bw 256 MiB >= 1.10x NVSHMEM", r["ratio"] >= 1.10,
                "%.1f vs %.1f GB/s (%.3fx, %.0f %% of line rate)" % (r["tshmem"], r["nvshmem"], r["ratio"],
                                                                    100 * r["tshmem"] / LINE_RATE_GBPS))
        big = [r for s, r in rows.items() if s >= 65536]
        if big:
            worst = min(big, key=lambda r: r["ratio"])
            add("put_bw >= 1.0x NVSHMEM from 64 KiB", worst["ratio"] >= 1.0,
                "worst %s B: %.3fx" % (worst["key"][0], worst["ratio"]))
    for c in find(comparisons, "get_bw"):
        rows = [r for r in c["rows"] if r["ratio"] is not None]
        if rows:
            worst = min(rows, key=lambda r: r["ratio"])
            top = max(r["tshmem"] for r in rows)
            add("get_bw >= 1.0x NVSHMEM at every size", worst["ratio"] >= 1.0,
                "worst %s B: %.3fx" % (worst["key"][0], worst["ratio"]))
            add("get_bw never above the line rate", top <= LINE_RATE_GBPS, "max %.1f GB/s" % top)
    for c in find(comparisons, "p_ping_pong_latency"):
        for r in c["rows"]:
            if r["ratio"] is not None:
                add("p_ping_pong <= 0.9x NVSHMEM", r["ratio"] <= 0.9,
                    "%.3f vs %.3f us (%.3fx)" % (r["tshmem"], r["nvshmem"], r["ratio"]))
    for c in find(comparisons, "put_latency"):
        for r in c["rows"]:
            if r["key"] == ["8", "thread"] and r["ratio"] is not None:
                add("put_latency 8 B thread <= NVSHMEM", r["ratio"] <= 1.0,
                    "%.3f vs %.3f us" % (r["tshmem"], r["nvshmem"]))
    for bench in ("put_bw", "p_latency"):
        costs = [p for p in pe_costs if p["bench"] == bench and not p["bidir"]]
        if costs:
            # Decided on the median over sizes: one small size's run-to-run noise should not decide it alone.
            median = sorted(p["cost"] for p in costs)[len(costs) // 2]
            worst = max(costs, key=lambda p: p["cost"])
            add("PE check <= 1 %% on %s" % bench, median <= 0.01,
                "median %+.2f %%, worst %s: %+.2f %%" % (100 * median, "/".join(worst["key"]), 100 * worst["cost"]))
    for c in find(comparisons, "host_barrier"):
        for r in c["rows"]:
            if r["tshmem"] is not None:
                add("host barrier_all <= 25 us at 2 PEs", r["tshmem"] <= 25.0,
                    "%.2f us (NVSHMEM %s us)" % (r["tshmem"], fmt(r["nvshmem"], 2)))
    m = malloc.get("4096", {})
    if m.get("check") and m.get("nocheck"):
        add("malloc+free 4 KiB: check <= 1.10x no check", m["check"] / m["nocheck"] <= 1.10,
            "%.2f vs %.2f us" % (m["check"], m["nocheck"]))
    if m.get("check") and m.get("nvshmem"):
        add("malloc+free 4 KiB <= 0.25x NVSHMEM", m["check"] / m["nvshmem"] <= 0.25,
            "%.2f vs %.2f us (%.3fx)" % (m["check"], m["nvshmem"], m["check"] / m["nvshmem"]))
    print("\n## Targets (device RMA against NVSHMEM, 2 PEs)", file=out)
    for t in targets:
        print("%-7s %-44s %s" % ("met" if t["met"] else "MISSED", t["target"], t["detail"]), file=out)
    return targets


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jsonl", required=True, help="JSON lines appended by the benchmarks (--json)")
    ap.add_argument("--malloc-json", nargs="*", default=[], help="Google Benchmark JSON of the malloc runs")
    ap.add_argument("--out", required=True, help="summary JSON to write (the plots read it)")
    args = ap.parse_args()
    rows = load_rows(args.jsonl) if os.path.exists(args.jsonl) else []
    groups = best_per_key(rows)
    out = sys.stdout
    comparisons = print_tables(groups, out)
    pe_costs = pe_check_costs(groups, out)
    malloc = malloc_results(args.malloc_json, out)
    targets = check_targets(comparisons, pe_costs, malloc, out)
    with open(args.out, "w") as f:
        json.dump({"comparisons": comparisons, "pe_check": pe_costs, "malloc_us": malloc, "targets": targets,
                   "runs": rows}, f, indent=1)
    print("\nsummary: %s" % args.out, file=out)


if __name__ == "__main__":
    main()
