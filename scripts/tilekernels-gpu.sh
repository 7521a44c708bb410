#!/usr/bin/env bash
# One GPU-host run of issue 16: builds the tshmem_moe package, runs its tests, TileKernels' MoE tests against it,
# and/or the side-by-side table, writing the logs to LOG_DIR (default $OUT, else build/tilekernels).
#   scripts/tilekernels-gpu.sh [tests|table|all] [CARRY]
#     tests  python/tests (incl. the CUDA ones) + TileKernels' tests/moe with its MoE functions replaced
#     table  perftest/moe/side_by_side.py (TileKernels and tshmem_moe, same tensors, same timing) and
#            perftest/moe/tk_mapping_diag.py (which inputs make TileKernels' get_fused_mapping fault)
#     CARRY  default .carry: tilelang-site.tar.xz and TileKernels/ (scripts/tilekernels-prepare.sh made them)
# At most 8 files land in LOG_DIR (the device tool brings back 8).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-all}
carry=$(cd "${2:-$root/.carry}" && pwd)
logs=${OUT:-$root/build/tilekernels}
mkdir -p "$logs" "$root/build"
export TSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
rc=0

start=$(date +%s)
build_only=0
[ "$mode" = table ] && build_only=1  # the table run leaves the package's tests to the tests run
TSHMEM_PY_BUILD_ONLY=$build_only TSHMEM_PYTEST_ARGS="-rs -s ${TSHMEM_PYTEST_ARGS:-}" \
  bash "$root/scripts/python-test.sh" "$root/build" 2>&1 | tee "$logs/python-test.log" || rc=1
echo "== python-test: $(( $(date +%s) - start )) s"
site=$(bash "$root/scripts/tilekernels-env.sh" "$carry") || exit 1
export PYTHONPATH="$site:$root/build/python-site:$carry/TileKernels:$root/perftest/moe${PYTHONPATH:+:$PYTHONPATH}"

if [ "$mode" = tests ] || [ "$mode" = all ]; then
  start=$(date +%s)
  bash "$root/scripts/tilekernels-tests.sh" "$carry/TileKernels" "$carry" "$root/build/tk-tests" 2>&1 \
    | tee "$logs/tk-tests.log" || rc=1
  tar -C "$root/build" -czf "$logs/tk-tests-logs.tgz" tk-tests
  echo "== TileKernels tests: $(( $(date +%s) - start )) s"
fi
if [ "$mode" = table ] || [ "$mode" = all ]; then
  start=$(date +%s)
  (cd "$root/perftest/moe" && python3 side_by_side.py --budget-s "${TK_TABLE_BUDGET_S:-270}" \
    --json "$logs/side_by_side.jsonl") 2>&1 \
    | tee "$logs/side-by-side.log" || rc=1
  echo "== side by side: $(( $(date +%s) - start )) s"
  start=$(date +%s)
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # memcheck only where the inputs keep TileKernels' contract: a fault there is the kernel's.
  (cd "$root/perftest/moe" && timeout 150 python3 tk_mapping_diag.py \
    && { [ -x "$san" ] && timeout 120 python3 tk_mapping_diag.py --sanitizer "$san" \
      --variants tk_inputs_sync,bench_inputs_P; }) 2>&1 \
    | tee "$logs/tk-mapping-diag.log"
  echo "== mapping diagnosis: $(( $(date +%s) - start )) s"
fi
exit $rc
