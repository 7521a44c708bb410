#!/usr/bin/env python3
"""coll_table.py on recorded runs: the tables and the collectives' targets come out as the figures say.

coll_runs_2xh200/ holds the JSON lines of the collective runs on the 2 x H200 host (scripts/coll-compare.sh: NCCL
2.28, multicast off), as the benchmarks write them. A 4-PE file with made-up round figures is added in a
temporary folder to check the scaling layout; it is never presented as a measurement.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "..", "perftest", "common", "coll_table.py")
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)


def run(folder):
    out_json = os.path.join(folder, "summary.json")
    text = subprocess.run([sys.executable, script, "--runs", folder, "--out", out_json], check=True,
                          capture_output=True, text=True).stdout
    with open(out_json) as f:
        return text, json.load(f)


with tempfile.TemporaryDirectory() as tmp:
    runs = os.path.join(tmp, "runs")
    shutil.copytree(os.path.join(here, "coll_runs_2xh200"), runs)
    synthetic = {"bench": "coll_allreduce", "lib": "tshmem", "build": "default", "table": "coll_allreduce",
                 "count": 4096, "type": "bfloat16", "redop": "sum", "algbw(GB/s)": 1.0, "metric": "ratio"}
    with open(os.path.join(runs, "allreduce.np4.stream.jsonl"), "w") as f:
        for size, ratio in ((8192, 2.0), (268435456, 1.25)):
            row = dict(synthetic, **{"size(B)": size, "latency(us)": 10.0, "busbw(GB/s)": 100.0,
                                     "nccl_latency(us)": 10.0 * ratio, "nccl_busbw(GB/s)": 100.0 / ratio,
                                     "ratio": ratio, "value": ratio})
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(runs, "notes.txt"), "w") as f:
        f.write("not a run: ignored\n")
    text, summary = run(runs)

    tables = {(t["collective"], t["mode"]): t for t in summary["tables"]}
    expect(set(tables) == {("allreduce", "stream"), ("allreduce", "graph"), ("allgather", "stream"),
                           ("alltoall", "stream"), ("reduce_scatter", "stream"), ("broadcast", "stream"),
                           ("barrier", "stream"), ("barrier", "graph")}, "tables: %s" % sorted(tables))
    ar = tables.get(("allreduce", "stream"), {"pes": [], "rows": []})
    expect(ar["pes"] == [2, 4], "allreduce PE counts %s" % ar["pes"])
    first = ar["rows"][0] if ar["rows"] else {}
    expect(first.get("size") == 8192 and first["by_np"]["2"]["latency_us"] == 4.86 and
           first["by_np"]["4"]["ratio"] == 2.0, "allreduce 8 KiB row %s" % first)
    middle = [r for r in ar["rows"] if r["size"] == 16384]
    expect(middle and middle[0]["by_np"]["4"] is None, "a size without a 4-PE figure stays empty")
    expect("2 PEs" in text and "4 PEs" in text, "both PE counts head the allreduce table")
    expect(text.index("## allreduce, back-to-back") < text.index("## allreduce, CUDA graph"),
           "back-to-back before graph")

    targets = {t["target"]: t for t in summary["targets"]}
    want = {"allreduce 8-256 KiB latency <= 0.5x NCCL (stream)": False,
            "allreduce 8-256 KiB latency <= 0.5x NCCL (graph)": False,
            "allreduce >= 64 MiB busbw >= 1.05x NCCL": False,
            "alltoall 1-256 MiB busbw >= 1.0x NCCL": False,
            "allgather 1-256 MiB busbw >= 1.0x NCCL": True,
            "device barrier <= 2 us at 2 PEs": True}
    for name, met in want.items():
        expect(name in targets and targets[name]["met"] == met, "target %s: %s" % (name, targets.get(name)))
    expect("268435456 B" in targets.get("alltoall 1-256 MiB busbw >= 1.0x NCCL", {}).get("detail", ""),
           "the all-to-all miss is at 256 MiB")
    expect("1.881 us" in targets.get("device barrier <= 2 us at 2 PEs", {}).get("detail", ""), "barrier figure")

    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    text, summary = run(empty)
    expect(summary["tables"] == [] and summary["targets"] == [], "an empty folder gives no tables")
    expect("(no 2-PE runs with NCCL figures)" in text, "an empty folder says why there are no targets")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS: coll_table.py tables and targets")
