#!/usr/bin/env bash
# One GPU round for tshmem_ep on a GPU host: configure (preset gpu), build the ep targets only, run every ep test
# (CPU suite; GPU suite at np 1, 2, 4 sharing the GPU, one node and nodes of 1 and 2 PEs) and the benchmark at
# np 1 and 2. Everything goes to one log: $OUT/ep_gpu.log where OUT is set, else ./ep_gpu.log.
# Usage (repository root): bash src/ep/test/gpu_run.sh
set -uo pipefail
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TSHMEM_ALLOW_SHARED_GPU=1
log=${OUT:-.}/ep_gpu.log
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
{
  echo "== configure"; cmake --preset gpu -DTSHMEM_GPU_TEST_NP="1;2;4" || exit 1
  echo "== build"; cmake --build build-gpu -j16 --target tshmem_ep tshmem_ep_cpu_test tshmem_ep_gpu_test tshmem_ep_bench || exit 1
  echo "== ctest -L ep"; (cd build-gpu && ctest -L ep --output-on-failure --timeout 900)
  launcher=build-gpu/test/run_mpi_test.sh
  for np in 1 2; do
    echo "== tshmem_ep_bench np $np"; "$launcher" "$np" build-gpu/src/ep/perftest/tshmem_ep_bench --json "${OUT:-.}/ep_bench_np$np.json"
  done
} 2>&1 | tee "$log"
