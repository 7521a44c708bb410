#!/usr/bin/env bash
# One GPU round on the test host: configure (CUDA architecture 90), build with all cores, run every
# test (GPU + MPI at 1 and 2 PEs), a perftest smoke, SASS and ldd checks; logs into one folder.
#   scripts/device-test.sh [log-folder]     (default: $OUT, else ./device-logs)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
logs=${1:-${OUT:-$root/device-logs}}
mkdir -p "$logs"
build=${TSHMEM_BUILD_DIR:-/tmp/tshmem-build}
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on the shared host
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
summary="$logs/summary.txt"
: > "$summary"
step() { echo "== $*" | tee -a "$summary"; }

step "host: $(hostname), $(nvidia-smi -L 2>/dev/null | wc -l) GPUs"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$summary" 2>&1
nvidia-smi topo -m > "$logs/topo.txt" 2>&1

step "configure + build"
start=$(date +%s)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DTSHMEM_ENABLE_CUDA=ON ${TSHMEM_CMAKE_ARGS:-} > "$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log" | tee -a "$summary"; exit 1; }
# Keep going past a broken target (-k 0): the rest still gets built and tested, and the failure is listed.
if ! cmake --build "$build" -j "$(nproc)" -- -k 0 > "$logs/build.log" 2>&1; then
  echo "BUILD FAILED for some targets (the others are tested below):" | tee -a "$summary"
  grep -E "^FAILED|error" "$logs/build.log" | head -20 | tee -a "$summary"
fi
echo "build took $(( $(date +%s) - start )) s" | tee -a "$summary"

step "ldd: no binary links libcuda"
if find "$build" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'ldd "$1" 2>/dev/null | grep -q "libcuda\.so" && echo "$1"' _ {} \; | grep . ; then
  echo "FAIL: the files above link libcuda" | tee -a "$summary"
else
  echo "ok: no libcuda in any built binary" | tee -a "$summary"
fi

step "ctest (all tests; GPU tests with 1 and 2 PEs)"
# Every gtest binary also writes XML, so the summary can show what ran and what skipped inside ctest's "Passed".
xml=/tmp/tshmem-gtest-xml
rm -rf "$xml"
mkdir -p "$xml"
(cd "$build" && GTEST_OUTPUT="xml:$xml/" ctest --output-on-failure -j 4 --timeout 150) > "$logs/ctest.log" 2>&1
python3 - "$xml" <<'PY' | tee -a "$summary"
import sys, glob, xml.etree.ElementTree as ET
total = [0, 0, 0]
for path in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    root = ET.parse(path).getroot()
    tests, failures, skipped = (int(root.get(k, 0)) for k in ("tests", "failures", "skipped"))
    total = [total[0] + tests, total[1] + failures, total[2] + skipped]
    print(f"  gtest {path.split('/')[-1][:-4]:<34} {tests:4} tests {failures:3} failed {skipped:3} skipped")
print(f"  gtest total: {total[0]} tests, {total[1]} failed, {total[2]} skipped (last PE to write each file)")
PY
grep -E "tests passed|tests failed|Failed|\*\*\*|Not Run|Skipped" "$logs/ctest.log" | tail -40 | tee -a "$summary"
(cd "$build" && ctest -N) | tail -1 >> "$summary"

step "perftest: tshmem vs NVSHMEM (scripts/perftest-compare.sh), host benchmarks"
# The device benchmarks and their NVSHMEM twins, the PE-check variants, host malloc / barrier_all twins:
# tables, targets, JSON and charts in $logs/perftest-compare (their smoke runs were part of ctest above).
if [ "${TSHMEM_SKIP_PERFTEST_COMPARE:-0}" != 1 ]; then
  "$root/scripts/perftest-compare.sh" --build "$build" --out "$logs/perftest-compare" > "$logs/perftest-compare.log" 2>&1
  sed -n '/^## /,$p' "$logs/perftest-compare/compare.txt" >> "$summary" 2>/dev/null || tail -40 "$logs/perftest-compare.log" >> "$summary"
fi
launcher="$root/scripts/tshmemrun"
for bench in host_bw host_latency host_init; do
  [ -x "$build/perftest/host/tshmem_$bench" ] || continue
  timeout 300 "$launcher" -np 2 -- "$build/perftest/host/tshmem_$bench" --json "$logs/perftest.jsonl" >> "$logs/perftest.log" 2>&1
done
[ -x "$build/perftest/moe/tshmem_moe_bench" ] && timeout 300 "$build/perftest/moe/tshmem_moe_bench" --json "$logs/perftest.jsonl" >> "$logs/perftest.log" 2>&1
tail -150 "$logs/perftest.log" >> "$summary"
step "done"
