#!/usr/bin/env bash
# One GPU round on the test host: configure (the gpu preset of CMakePresets.json: Release, built for the GPUs
# present unless TSHMEM_CUDA_ARCH says otherwise), build with all cores, run every test (GPU tests at each PE
# count of --np, MPI tests at 1, 2 and 4), the perftest comparisons against NVSHMEM and NCCL, SASS and ldd
# checks; logs into one folder.
#   scripts/device-test.sh [log-folder] [--np "1 2 4 8"]
#     log-folder   default: $OUT, else ./device-logs
#     --np LIST    PE counts of the GPU tests; default 1, 2 and every power of two up to the GPUs here
#                  (1 2 on a 2-GPU host, 1 2 4 8 on an 8-GPU one). A count above the GPUs runs them with
#                  TSHMEM_ALLOW_SHARED_GPU=1 (several PEs per GPU: the logic of 4 PEs on 2 GPUs). The
#                  comparisons run at the counts from 2 up that the GPUs allow.
#   TSHMEM_SKIP_PERFTEST_COMPARE=1 / TSHMEM_SKIP_COLL_COMPARE=1 leave out the comparisons.
#   scripts/run.sh runs last, as a newcomer would (on this build): exit 1 if it fails; TSHMEM_SKIP_RUN_SH=1
#   leaves it out (then only the host benchmarks and the MoE benchmark run).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
logs="" nps=""
while [ $# -gt 0 ]; do
  case "$1" in
    --np) nps=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "device-test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) logs=$1; shift ;;
  esac
done
logs=${logs:-${OUT:-$root/device-logs}}
mkdir -p "$logs"
build=${TSHMEM_BUILD_DIR:-/tmp/tshmem-build}
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on the shared host
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
summary="$logs/summary.txt"
: > "$summary"
step() { echo "== $*" | tee -a "$summary"; }

gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
gpus=${gpus:-0}
if [ -z "$nps" ]; then
  nps="1 2"
  for n in 4 8 16 32 64; do [ "$n" -le "$gpus" ] && nps="$nps $n"; done
fi
compare_nps=""
for np in $nps; do
  case "$np" in ''|*[!0-9]*|0) echo "device-test.sh: --np takes positive PE counts, got '$np'" >&2; exit 2 ;; esac
  [ "$np" -gt "$gpus" ] && export TSHMEM_ALLOW_SHARED_GPU=1
  [ "$np" -ge 2 ] && [ "$np" -le "$gpus" ] && compare_nps="$compare_nps $np"
done
compare_nps=${compare_nps# }

step "host: $(hostname), $gpus GPUs; GPU tests at PEs: $nps${TSHMEM_ALLOW_SHARED_GPU:+ (several PEs per GPU allowed)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$summary" 2>&1
nvidia-smi topo -m > "$logs/topo.txt" 2>&1

step "configure + build"
start=$(date +%s)
# shellcheck disable=SC2086  # TSHMEM_CMAKE_ARGS is a list of options
cmake -S "$root" --preset gpu -B "$build" "-DTSHMEM_GPU_TEST_NP=${nps// /;}" ${TSHMEM_CMAKE_ARGS:-} \
  > "$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log" | tee -a "$summary"; exit 1; }
grep -m1 "tshmem: CUDA architectures" "$logs/configure.log" | tee -a "$summary"
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

step "ctest (all tests; GPU tests at PEs: $nps)"
# Every gtest binary also writes XML, so the summary can show what ran and what skipped inside ctest's "Passed".
xml=/tmp/tshmem-gtest-xml
rm -rf "$xml"
mkdir -p "$xml"
(cd "$build" && GTEST_OUTPUT="xml:$xml/" ctest --output-on-failure -j 4 --timeout 150) > "$logs/ctest.log" 2>&1
python3 - "$xml" <<'PY' | tee -a "$summary"
import sys, glob, xml.etree.ElementTree as ET
total = [0, 0, 0]
for path in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    text = open(path, encoding="utf-8", errors="replace").read()
    # Processes of one test that ran at once (ctest -j, several PEs) may overwrite each other's file: count
    # the first complete document.
    end = text.find("</testsuites>")
    try:
        root = ET.fromstring(text[:end + len("</testsuites>")] if end >= 0 else text)
    except ET.ParseError as e:
        print(f"  gtest {path.split('/')[-1][:-4]:<34} unreadable XML ({e})")
        continue
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
if [ "${TSHMEM_SKIP_PERFTEST_COMPARE:-0}" != 1 ] && [ -n "$compare_nps" ]; then
  "$root/scripts/perftest-compare.sh" --build "$build" --out "$logs/perftest-compare" --np "$compare_nps" \
    > "$logs/perftest-compare.log" 2>&1
  sed -n '/^## /,$p' "$logs/perftest-compare/compare.txt" >> "$summary" 2>/dev/null || tail -40 "$logs/perftest-compare.log" >> "$summary"
fi
step "collectives: tshmem vs NCCL (scripts/coll-compare.sh, PEs: ${compare_nps:-none})"
if [ "${TSHMEM_SKIP_COLL_COMPARE:-0}" != 1 ] && [ -n "$compare_nps" ]; then
  "$root/scripts/coll-compare.sh" --build "$build" --out "$logs/coll-compare" --np "$compare_nps" \
    > "$logs/coll-compare.log" 2>&1
  sed -n '/^## /,$p' "$logs/coll-compare/coll.txt" >> "$summary" 2>/dev/null || tail -40 "$logs/coll-compare.log" >> "$summary"
fi
step "scripts/run.sh, as a newcomer runs it (this build; log: run-sh.log)"
# The README's main command must work on a GPU host too: its failure fails this round. It runs the MoE
# benchmark and the host benchmarks too; TSHMEM_SKIP_RUN_SH=1 runs only those instead.
run_sh_rc=0
if [ "${TSHMEM_SKIP_RUN_SH:-0}" != 1 ]; then
  (unset TSHMEM_ALLOW_SHARED_GPU; TSHMEM_BUILD_DIR="$build" timeout 1500 "$root/scripts/run.sh") > "$logs/run-sh.log" 2>&1
  run_sh_rc=$?
  cp "$build"/perftest-results.jsonl "$build"/perftest-shared-gpu.jsonl "$logs/" 2>/dev/null
  grep -E "^==|^SKIPPED|^FAILED|^skipped:|^run.sh:" "$logs/run-sh.log" | tee -a "$summary"
  if [ $run_sh_rc -ne 0 ]; then
    echo "FAIL: scripts/run.sh exited $run_sh_rc (see run-sh.log)" | tee -a "$summary"
  else
    echo "ok: scripts/run.sh exited 0" | tee -a "$summary"
  fi
  tail -150 "$logs/run-sh.log" >> "$summary"
else
  launcher="$root/scripts/tshmemrun"
  for bench in host_bw host_latency host_init; do
    [ -x "$build/perftest/host/tshmem_$bench" ] || continue
    timeout 300 "$launcher" -np 2 -- "$build/perftest/host/tshmem_$bench" --json "$logs/perftest.jsonl" >> "$logs/perftest.log" 2>&1
  done
  [ -x "$build/perftest/moe/tshmem_moe_bench" ] && timeout 300 "$build/perftest/moe/tshmem_moe_bench" --json "$logs/perftest.jsonl" >> "$logs/perftest.log" 2>&1
  tail -150 "$logs/perftest.log" >> "$summary"
fi
step "done"
[ $run_sh_rc -eq 0 ] || exit 1
