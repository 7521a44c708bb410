#!/usr/bin/env bash
# One GPU round of tshmem_moe against TileKernels in one command: builds the tshmem_moe package and runs its tests, TileKernels'
# MoE tests against it, and the side-by-side table, writing the logs and a summary to LOG_DIR ($OUT, else
# build/tilekernels).
#   scripts/tilekernels-gpu.sh [all|tests|table|diag] [CARRY]
#     all    src/moe/python/tests, then TileKernels' tests/moe (scripts/tilekernels-tests.sh: parallel processes, one
#            table file | passed | failed | skipped | reasons) while in the background the library's GPU tests
#            of the MoE kernels build and run (ctest -L moe; TK_CTEST=0: not) and a process fills tilelang's
#            JIT cache for the table's TileKernels kernels, then the table (src/moe/perftest/side_by_side.py: both
#            implementations on the same tensors, TileKernels' CUPTI timer, L2 flushed, spec and TileKernels'
#            benchmark shapes); summary.txt gathers the result lines
#     tests  src/moe/python/tests + TileKernels' tests/moe (+ ctest -L moe);  table  the package build + the table
#     diag   src/moe/perftest/tk_mapping_diag.py (which inputs make TileKernels' get_fused_mapping fault)
#     CARRY  default tilekernels-deps: tilelang-site.tar.xz and TileKernels/ (scripts/tilekernels-prepare.sh made them)
# Budgets: TK_BUDGET_S (TileKernels' tests, default 240 s), TK_TABLE_BUDGET_S (start no table row after it,
# default 120 s); TK_TABLE_ONLY=KERNEL[,KERNEL...]: only those kernels' rows; TK_FILES
# (scripts/tilekernels-tests.sh): only those test files. With the defaults `all` takes about 7 minutes on one H200 with 16 cores.
# At most 8 files land in LOG_DIR.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-all}
case $mode in
  all | tests | table | diag) ;;
  *) echo "tilekernels-gpu: mode '$mode' is not all, tests, table or diag" >&2; exit 2 ;;
esac
carry=$(cd "${2:-$root/tilekernels-deps}" && pwd) || exit 2
logs=${OUT:-$root/build/tilekernels}
mkdir -p "$logs" "$root/build"
export TSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 TILELANG_PRINT_ON_COMPILATION=0
rc=0
t0=$(date +%s)
summary="$logs/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

# The table's TileKernels kernels compile into this cache (in the background during the tests in `all`).
table_cache=/tmp/tk-table-tilelang-cache
start=$(date +%s)
build_only=0
[ "$mode" = table ] || [ "$mode" = diag ] && build_only=1
TSHMEM_PY_BUILD_ONLY=$build_only TSHMEM_PYTEST_ARGS="-rs ${TSHMEM_PYTEST_ARGS:-}" \
  bash "$root/scripts/python-test.sh" "$root/build" > "$logs/python-test.log" 2>&1 || rc=1
tail -3 "$logs/python-test.log"
counts=$(grep -E '(passed|failed|skipped).* in [0-9.]+s' "$logs/python-test.log" | tail -1)
note "== python package: ${counts:-no pytest summary (see python-test.log)} ($(( $(date +%s) - start )) s, rc $rc)"
site=$(bash "$root/scripts/tilekernels-env.sh" "$carry") || exit 1
export PYTHONPATH="$site:$root/build/python-site:$carry/TileKernels:$root/src/moe/perftest${PYTHONPATH:+:$PYTHONPATH}"
note "== carry unpacked: $(( $(date +%s) - t0 )) s since start"

# The library's own GPU tests of the MoE kernels (ctest -L moe: bitwise against the CPU reference, every kernel
# path), built and run in the background during TileKernels' tests; TK_CTEST=0 leaves them out.
ctest_pid=
if { [ "$mode" = all ] || [ "$mode" = tests ]; } && [ "${TK_CTEST:-1}" = 1 ]; then
  mb="$root/build/moe-gpu"
  (
    export PATH=/usr/local/cuda/bin:$PATH
    [ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
    cmake -S "$root" --preset gpu -B "$mb" > "$logs/moe-ctest.log" 2>&1 &&
      cmake --build "$mb" -j 8 --target tshmem_moe_gpu_test tshmem_moe_cpu_test >> "$logs/moe-ctest.log" 2>&1 &&
      cd "$mb" && timeout $(( ${TK_BUDGET_S:-240} - 20 )) ctest -L moe -j 8 --output-on-failure \
      >> "$logs/moe-ctest.log" 2>&1
  ) &
  ctest_pid=$!
fi
warm_pid=
if [ "$mode" = all ]; then
  rm -rf "$table_cache"
  (cd "$root/src/moe/perftest" && TILELANG_CACHE_DIR=$table_cache exec python3 side_by_side.py --warm-only) \
    > "$logs/table-warm.log" 2>&1 &
  warm_pid=$!
fi
if [ "$mode" = tests ] || [ "$mode" = all ]; then
  start=$(date +%s)
  TK_BUDGET_S=${TK_BUDGET_S:-240} bash "$root/scripts/tilekernels-tests.sh" "$carry/TileKernels" "$carry" \
    "$root/build/tk-tests" > "$logs/tk-tests.log" 2>&1 || rc=1
  tar -C "$root/build" -czf "$logs/tk-tests-logs.tgz" tk-tests
  sed -n '/^TileKernels tests\/moe/,$p' "$logs/tk-tests.log" | tee -a "$summary"
  note "== TileKernels tests: $(( $(date +%s) - start )) s"
fi
if [ -n "$ctest_pid" ]; then
  wait "$ctest_pid" || rc=1
  note "== ctest -L moe: $(grep -E 'tests passed|tests failed' "$logs/moe-ctest.log" | tail -1)"
  grep -E '\(Failed\)|\(Timeout\)|\*\*\*Failed|error:' "$logs/moe-ctest.log" | head -20 | tee -a "$summary"
fi
if [ -n "$warm_pid" ]; then
  # The table times kernels: nothing else may run on the GPU then.
  kill -0 "$warm_pid" 2>/dev/null && { note "== table warm-up still running: stopped"; kill "$warm_pid"; }
  wait "$warm_pid" 2>/dev/null
  note "== table warm-up: $(tail -1 "$logs/table-warm.log")"
fi
if [ "$mode" = table ] || [ "$mode" = all ]; then
  start=$(date +%s)
  # TileKernels' get_fused_mapping faults at some shapes (docs/moe.md): its side of those rows runs in worker
  # processes, and a fault shows as 'TK faults (...)' in its cell. Exit status 1: tshmem_moe lost the context.
  trc=0
  (cd "$root/src/moe/perftest" && TILELANG_CACHE_DIR=$table_cache python3 side_by_side.py \
    --budget-s "${TK_TABLE_BUDGET_S:-120}" --json "$logs/side_by_side.jsonl" ${TK_TABLE_ONLY:+--only "$TK_TABLE_ONLY"}) \
    > "$logs/side-by-side.log" 2>&1 || trc=$?
  grep -E '^(\||# )' "$logs/side-by-side.log" | tee -a "$summary"
  note "== side by side: $(( $(date +%s) - start )) s, exit status $trc"
fi
if [ "$mode" = diag ]; then
  start=$(date +%s)
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # memcheck only where the inputs keep TileKernels' contract: a fault there is the kernel's.
  (cd "$root/src/moe/perftest" && timeout 150 python3 tk_mapping_diag.py \
    && { [ -x "$san" ] && timeout 120 python3 tk_mapping_diag.py --sanitizer "$san" \
      --variants tk_inputs_sync,bench_inputs_P; }) > "$logs/tk-mapping-diag.log" 2>&1
  tail -20 "$logs/tk-mapping-diag.log"
  note "== mapping diagnosis: $(( $(date +%s) - start )) s"
fi
note "== tilekernels-gpu $mode: $(( $(date +%s) - t0 )) s in all, exit status $rc"
exit $rc
