#!/usr/bin/env bash
# One GPU round for tshmem_ep on a GPU host: configure (preset gpu), build the ep targets only (the CPU suite,
# which CI runs, is left out: it would build tshmem_moe too), run the GPU suite (np 1, 2, 4 sharing the GPU, one
# node and nodes of 1 and 2 PEs; the benchmark's smoke run) and the benchmark at np 1 and 2. The log goes to one
# file, $OUT/ep_gpu.log (./ep_gpu.log without OUT); the benchmark's JSON lines (both runs) to $OUT/ep_bench.json.
# Usage (repository root): bash src/ep/test/gpu_run.sh
set -uo pipefail
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TSHMEM_ALLOW_SHARED_GPU=1
log=${OUT:-.}/ep_gpu.log
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
{
  echo "== configure"; cmake --preset gpu -DTSHMEM_GPU_TEST_NP="1;2;4" || exit 1
  echo "== build"; cmake --build build-gpu -j16 --target tshmem_ep tshmem_ep_gpu_test tshmem_ep_bench || exit 1
  echo "== ctest -L ep -LE cpu"; (cd build-gpu && ctest -L ep -LE cpu --output-on-failure --timeout 900)
  launcher=build-gpu/test/run_mpi_test.sh
  for np in 1 2; do
    echo "== tshmem_ep_bench np $np"; TSHMEM_SYMMETRIC_SIZE=2G "$launcher" "$np" build-gpu/src/ep/perftest/tshmem_ep_bench --json "${OUT:-.}/ep_bench.json"
  done
} 2>&1 | tee "$log"
