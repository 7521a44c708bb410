#!/usr/bin/env bash
# One GPU round for tshmem_ep and tshmem.ep on a GPU host, in about four minutes with the build:
#   1. configure build-gpu (preset gpu) only when it has no build.ninja; build libtshmem, libtshmem_ep and the GPU
#      test only (-j16; the CPU suite, which CI runs, would pull in tshmem_moe);
#   2. every GPU test of ctest -L ep (np 1, 2, 4 sharing the GPU, one node, nodes of 1 and 2 PEs, CUDA's lazy
#      loading over nodes), each under a 60 s limit: every wait inside is bounded at 40 s (a PE that never comes is
#      an error that names it), the limit catches the rest;
#   3. src/ep/python/gpu_check.sh (tshmem.ep's tests at 1, 2, 4 PEs and as two nodes, the README's example), each
#      pytest run under `timeout 120` and a per-test stack dump after 60 s (faulthandler, python/tests/tshmem/conftest.py).
# Logs: $OUT/ep_gpu.log (everything), $OUT/ep_python.log (gpu_check.sh's), $OUT/ep_summary.txt (the key lines:
# each test's result, the first lines of every failure). OUT defaults to the current folder.
# Usage (repository root or anywhere): bash src/ep/test/gpu_run.sh
set -uo pipefail
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export TSHMEM_ALLOW_SHARED_GPU=1
out=${OUT:-$PWD}
mkdir -p "$out"
log=$out/ep_gpu.log summary=$out/ep_summary.txt pylog=$out/ep_python.log
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 2
: > "$log"
: > "$summary"
say() { echo "$*" | tee -a "$log" >> "$summary"; }
start=$SECONDS

say "== tshmem_ep GPU round: $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/   gpu /' |
  tee -a "$log" >> "$summary"

# 1. Build.
if [ ! -e build-gpu/build.ninja ]; then
  echo "== configure (preset gpu)" >> "$log"
  if ! cmake --preset gpu >> "$log" 2>&1; then
    say "FAILED: cmake --preset gpu"
    tail -30 "$log" >> "$summary"
    exit 1
  fi
fi
echo "== build" >> "$log"
if ! cmake --build build-gpu -j16 --target tshmem tshmem_ep tshmem_ep_gpu_test tshmem_ep_ll_gpu_test >> "$log" 2>&1; then
  say "FAILED: the build"
  grep -E 'error|FAILED' "$log" | head -30 >> "$summary"
  exit 1
fi
say "== built in $((SECONDS - start)) s"

# 2. The GPU tests of ctest -L ep, one at a time, each under its own limit.
status=0
mapfile -t tests < <(cd build-gpu && ctest -N -L ep | sed -n 's/^ *Test *#[0-9]*: \(tshmem_ep_gpu_[a-z0-9_]*\)$/\1/p')
[ "${#tests[@]}" -gt 0 ] || {
  say "FAILED: ctest -L ep lists no tshmem_ep_gpu_* test"
  status=1
}
for t in "${tests[@]}"; do
  t0=$SECONDS
  tlog=$(mktemp)
  # timeout signals its whole process group (ctest, mpirun, the ranks) at 60 s, and kills it 10 s later.
  (cd build-gpu && timeout -k 10 60 ctest -R "^${t}\$" --output-on-failure) > "$tlog" 2>&1
  rc=$?
  cat "$tlog" >> "$log"
  if [ $rc = 0 ] && grep -q '100% tests passed' "$tlog"; then
    say "-- $t: passed, $((SECONDS - t0)) s"
  else
    status=1
    [ $rc = 124 ] && why="killed at 60 s" || why="rc $rc"
    say "-- $t: FAILED ($why), $((SECONDS - t0)) s"
    # The first lines that say what went wrong: gtest failures, tshmem's and the kernels' messages.
    grep -E '\[  FAILED  \]|Failure|error|Error|timed out|trap|stopped|waited|WARN|Expected|Which is' "$tlog" |
      grep -v '^\[  FAILED  \] *[0-9]* tests\?, listed below' | head -25 | sed 's/^/     /' >> "$summary"
  fi
  rm -f "$tlog"
done
say "== ctest: $((SECONDS - start)) s so far"

# 3. tshmem.ep's Python tests (their own build of the packages against build-gpu, their own log).
t0=$SECONDS
TSHMEM_PYTEST_TEST_TIMEOUT=60 TSHMEM_EP_PYTEST_LIMIT=120 TSHMEM_WAIT_TIMEOUT_MS=40000 TSHMEM_PROXY_TIMEOUT_MS=40000 \
  bash src/ep/python/gpu_check.sh "$root/build-gpu" "$pylog" >> "$log" 2>&1
rc=$?
[ $rc = 0 ] || status=1
say "-- src/ep/python/gpu_check.sh: rc $rc, $((SECONDS - t0)) s"
# Its summary lines, then the first lines of each failure: pytest's, the stack dump of a test past its limit.
grep -E '^(==|--|   [0-9]+ unexpected|   PE )' "$pylog" | sed 's/^/   /' >> "$summary"
if [ $rc != 0 ]; then
  {
    grep -E '^(FAILED|ERROR) |^E  |Timeout \(|^Thread 0x|^Current thread|^  File .*test_ep.py|^---- PE|run limit' \
      "$pylog" | head -60 | sed 's/^/     /'
    echo "     the test each rank was in last:"
    grep -E '^\[rank [0-9]+\] start' "$pylog" | awk '{last[$2] = $0} END {for (r in last) print "       " last[r]}'
  } >> "$summary"
fi

say "== $([ $status = 0 ] && echo PASS || echo FAIL) in $((SECONDS - start)) s (logs: $log, $pylog)"
exit $status
