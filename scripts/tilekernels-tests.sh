#!/usr/bin/env bash
# Runs DeepSeek TileKernels' own MoE tests (tests/moe/test_*.py) with TileKernels' 12 tile_kernels.moe
# functions replaced by tshmem_moe's (src/moe/perftest/tilekernels_compat.py) as parallel pytest processes inside
# one time budget (src/moe/perftest/tk_tests_run.py says where the time goes), and prints one table:
# file | passed | failed | skipped | reasons (every skip reason with its count). Needs a GPU.
#   scripts/tilekernels-tests.sh TK_SRC CARRY [LOG_DIR]
#     TK_SRC   a TileKernels checkout (tile_kernels/, tests/); never part of this repository
#     CARRY    a folder holding tilelang-site.tar.xz (tilelang 0.1.15 and the dependencies a CUDA 13 + torch image lacks,
#              unpacked wheels; scripts/tilekernels-prepare.sh makes it)
#     LOG_DIR  where the per-process logs and result lines go (default: build/tilekernels-tests)
# Environment: TSHMEM_MOE_SITE (tshmem_moe installed there by scripts/python-test.sh; default build/python-site),
# TK_BUDGET_S (wall seconds for all files, default 300), TK_TEST_JOBS (processes at once, default 12),
# TK_SHARDS (slices per file, e.g. test_reduce_fused=6), TK_FILES (only these files, e.g.
# test_reduce_fused,test_expand_to_fused), TK_STALL_S (a test without progress this long is stopped, 75),
# TSHMEM_TK_IMPL=tilekernels (TileKernels' own kernels, to check the harness), TK_TEST_ARGS (more pytest
# arguments; --run-benchmark runs the benchmark tests too), TK_TORCH_CAST=0 (expand_to_fused_with_sf's inputs
# by TileKernels' tilelang per_token_cast, JIT-compiled, instead of its torch reference).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tk=$(cd "${1:?TileKernels checkout}" && pwd)
carry=$(cd "${2:?carry folder with tilelang-site.tar.xz}" && pwd)
logs=${3:-$root/build/tilekernels-tests}
mkdir -p "$logs"
tsite=${TSHMEM_MOE_SITE:-$root/build/python-site}

site=$(bash "$root/scripts/tilekernels-env.sh" "$carry") || exit 1
export PYTHONPATH="$site:$tsite:$tk:$root/src/moe/perftest${PYTHONPATH:+:$PYTHONPATH}"
export TSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
# The tests' own tilelang JIT cache, empty at the start: the kernels in it afterwards are the tilelang kernels
# the tests compiled (0 expected: the MoE functions are tshmem_moe's, the references torch).
export TILELANG_CACHE_DIR=${TK_TESTS_TILELANG_CACHE:-/tmp/tk-tests-tilelang-cache}
rm -rf "$TILELANG_CACHE_DIR"
# shellcheck disable=SC2086
python3 "$root/src/moe/perftest/tk_tests_run.py" --tk "$tk" --logs "$logs" --budget-s "${TK_BUDGET_S:-300}" \
  --jobs "${TK_TEST_JOBS:-12}" --shards "${TK_SHARDS:-}" --files "${TK_FILES:-}" --stall-s "${TK_STALL_S:-75}" \
  -- ${TK_TEST_ARGS:-}
rc=$?
n=$(find "$TILELANG_CACHE_DIR" -name device_kernel.cu 2>/dev/null | wc -l)
echo "tilelang kernels JIT-compiled by the tests: $n"
exit $rc
