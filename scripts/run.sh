#!/usr/bin/env bash
# The main job: builds if needed, then runs the perftest on the GPUs present (one PE per GPU), or,
# without a GPU, the host benchmarks on the shm backend with 2 PEs.
#   scripts/run.sh            results print as tables; JSON lines go to build/perftest-results.jsonl
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}
if [ ! -x "$build/perftest/host/tshmem_host_bw" ]; then
  echo "== building (first run)"
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)"
fi

export TSHMEM_DISABLE_NVLS=${TSHMEM_DISABLE_NVLS:-1}
gpus=0
if command -v nvidia-smi >/dev/null; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
launcher="$root/scripts/tshmemrun"
json="$build/perftest-results.jsonl"
: > "$json"

if [ "$gpus" -ge 2 ]; then
  np=$gpus
  echo "== perftest on $gpus GPUs: the pair benchmarks on GPUs 0 and 1, all-pairs put_bw on all $gpus"
  unset TSHMEM_MEM_BACKEND
  for bench in "$build"/perftest/device/tshmem_*; do
    [ -x "$bench" ] || continue
    "$launcher" -np 2 -- "$bench" --json "$json"
  done
  if [ "$gpus" -gt 2 ] && [ -x "$build/perftest/device/tshmem_put_bw_all_pairs" ]; then
    "$launcher" -np "$gpus" -- "$build/perftest/device/tshmem_put_bw_all_pairs" --json "$json"
  fi

else
  np=2
  echo "== no GPU pair found: host benchmarks on the shm backend with $np PEs"
  export TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-256M}
  echo "== host put/get to a PE of another node (TSHMEM_DEBUG_NODE_SIZE=1: each PE a node; the off-node proxy over two-sided MPI)"
  TSHMEM_DEBUG_NODE_SIZE=1 "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_bw" --json "$json"
  echo "== the same on one node (load/store)"
fi
"$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_bw" --json "$json"
"$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_bw" --bidir --json "$json"
"$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_latency" --json "$json"
"$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_init"
"$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_malloc"
[ -x "$build/perftest/host/tshmem_host_malloc_nocheck" ] && "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_malloc_nocheck"
echo "== JSON results: $json"
