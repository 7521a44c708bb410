#!/usr/bin/env bash
# Collective tshmem_malloc + tshmem_free with the symmetry check against the same build with the check
# compiled out, in one job: prints the median time per pair of each (best of 3 interleaved rounds of 10
# repetitions) and their ratio.
#   scripts/malloc-ratio.sh [np ...]          (default: 2 4; backend from TSHMEM_MEM_BACKEND, default shm)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}
export TSHMEM_MEM_BACKEND=${TSHMEM_MEM_BACKEND:-shm} TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-256M}
export TSHMEM_DISABLE_NVLS=1
nps=("$@"); [ ${#nps[@]} -gt 0 ] || nps=(2 4)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '%-4s %-8s %-10s %-16s %-16s %s\n' PEs backend size "check (us/pair)" "nocheck (us/pair)" ratio
for np in "${nps[@]}"; do
  # Interleaved rounds (check, nocheck, check, ...): each variant keeps its best median, so a slow
  # moment of the machine does not land on one side only.
  for round in 1 2 3; do
    for variant in check nocheck; do
      exe="$build/perftest/host/tshmem_host_malloc"; [ $variant = nocheck ] && exe+=_nocheck
      "$root/scripts/tshmemrun" -np "$np" -- "$exe" --benchmark_repetitions=10 --benchmark_format=json \
        --benchmark_out="$tmp/$np-$variant-$round.json" --benchmark_out_format=json > /dev/null 2>&1
    done
  done
  python3 - "$tmp" "$np" "$TSHMEM_MEM_BACKEND" <<'PY'
import glob, json, sys
def best_medians(pattern):
    out = {}
    for path in glob.glob(pattern):
        for b in json.load(open(path))["benchmarks"]:
            if b.get("aggregate_name") == "median":
                size = b["run_name"].split("/")[2]
                out[size] = min(out.get(size, float("inf")), b["real_time"])
    return out
tmp, np_, backend = sys.argv[1], sys.argv[2], sys.argv[3]
check, nocheck = best_medians(f"{tmp}/{np_}-check-*.json"), best_medians(f"{tmp}/{np_}-nocheck-*.json")
sys.argv = [sys.argv[0], "", "", np_, backend]
for size in check:
    print(f"{sys.argv[3]:<4} {sys.argv[4]:<8} {size:<10} {check[size]:<16.3f} {nocheck[size]:<16.3f} {check[size] / nocheck[size]:.3f}")
PY
done
