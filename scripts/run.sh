#!/usr/bin/env bash
# The main job: builds if needed, then measures what this machine can measure.
#   2+ GPUs  the device perftest between GPUs 0 and 1 (all-pairs put_bw on all of them), the MoE benchmark,
#            the host benchmarks on the GPU heap
#   1 GPU    the MoE benchmark, the device perftest's local rows (1 PE: the peer is the PE itself), the pair
#            benchmarks at 2 PEs sharing the GPU (logic, not speed), the host benchmarks on shm with 2 PEs
#   0 GPUs   the host benchmarks on shm with 2 PEs
# With at most 1 GPU, the host path also runs side by side with Open MPI's OpenSHMEM at 2 and 4 PEs
# (scripts/oshmem-compare.sh: one table of tshmem, OSHMEM and their ratio), where its twin was built; a round in
# which OSHMEM does not finish is printed as a finding about it (with its log's last lines) and left out of the
# table, and does not fail the job.
# A step the machine cannot run (no GPU pair, a part not built) is reported as skipped, with the reason, and
# the job goes on. Exit 0 when every tshmem step that ran passed; the last lines list what failed and what was
# skipped. The first run builds the benchmarks only (perftest/, the MoE and EP benchmarks), not the tests.
#   scripts/run.sh            results print as tables; JSON lines go to build/perftest-results.jsonl
# Environment: TSHMEM_BUILD_DIR (default build/), TSHMEM_RUN_OSHMEM_ROUNDS (rounds of the OSHMEM comparison,
# default 3; each round at 2 and 4 PEs takes about 15-30 s on 16 cores).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if [ ! -x "$build/perftest/host/tshmem_host_bw" ] || [ ! -x "$build/perftest/host/tshmem_host_shmem" ]; then
  echo "== building (first run)"
  cmake -S "$root" --preset default -B "$build" >/dev/null || exit 1  # CMakePresets.json
  # Each benchmark folder's own target (Ninja's <folder>/all); the whole tree where the generator has none.
  # (The list is read whole before it is searched: grep -q on a pipe would stop ninja early with SIGPIPE, which
  # pipefail reports as a failure, and the folder would be left out.)
  targets=() all_targets=$(ninja -C "$build" -t targets all 2>/dev/null)
  for dir in perftest src/moe/perftest src/ep/perftest; do
    grep -q "^$dir/all:" <<<"$all_targets" && targets+=(--target "$dir/all")
  done
  cmake --build "$build" -j "$(nproc)" "${targets[@]}" || exit 1
fi

export TSHMEM_DISABLE_NVLS=${TSHMEM_DISABLE_NVLS:-1}
gpus=0
if command -v nvidia-smi >/dev/null; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
gpus=${gpus:-0}
launcher="$root/scripts/tshmemrun"
json="$build/perftest-results.jsonl"
shared_json="$build/perftest-shared-gpu.jsonl"  # 2 PEs on one GPU: kept apart from the speed figures
: > "$json"
failed=() skipped=()

# run <label> <command...>: runs one step; a failure is recorded and the job goes on.
run() {
  local label=$1
  shift
  if ! "$@"; then
    echo "FAILED: $label (exit status above)"
    failed+=("$label")
  fi
}

# Host put/get across "nodes" (TSHMEM_DEBUG_NODE_SIZE=1: each PE a node of its own) goes through the off-node
# proxy over two-sided MPI, which every MPI here provides.
off_node_step() {
  run "host put/get across nodes (off-node proxy)" env TSHMEM_DEBUG_NODE_SIZE=1 "$launcher" -np 2 -- \
    "$build/perftest/host/tshmem_host_bw" --json "$json"
}

host_benchmarks() {  # <np>
  local np=$1
  run "host_bw" "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_bw" --json "$json"
  run "host_bw --bidir" "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_bw" --bidir --json "$json"
  run "host_latency" "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_latency" --json "$json"
  run "host_init" "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_init"
  run "host_malloc" "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_malloc"
  if [ -x "$build/perftest/host/tshmem_host_malloc_nocheck" ]; then
    run "host_malloc_nocheck" "$launcher" -np "$np" -- "$build/perftest/host/tshmem_host_malloc_nocheck"
  fi
}

moe_benchmark() {
  if [ -x "$build/perftest/moe/tshmem_moe_bench" ]; then
    echo "== MoE benchmark (one GPU)"
    run "tshmem_moe_bench" "$build/perftest/moe/tshmem_moe_bench" --json "$json"
  else
    echo "SKIPPED: MoE benchmark: not built (no CUDA toolkit when configured)"
    skipped+=("MoE benchmark (not built)")
  fi
}

device_benches=()
for bench in "$build"/perftest/device/tshmem_*; do [ -x "$bench" ] && [ -f "$bench" ] && device_benches+=("$bench"); done
if [ "$gpus" -ge 1 ] && [ ${#device_benches[@]} -eq 0 ]; then
  echo "SKIPPED: device perftest: not built (no CUDA toolkit when configured)"
  skipped+=("device perftest (not built)")
fi

if [ "$gpus" -ge 2 ]; then
  echo "== perftest on $gpus GPUs: the pair benchmarks on GPUs 0 and 1, all-pairs put_bw on all $gpus"
  unset TSHMEM_MEM_BACKEND
  for bench in "${device_benches[@]}"; do
    run "$(basename "$bench")" "$launcher" -np 2 -- "$bench" --json "$json"
  done
  if [ "$gpus" -gt 2 ] && [ -x "$build/perftest/device/tshmem_put_bw_all_pairs" ]; then
    run "tshmem_put_bw_all_pairs -np $gpus" "$launcher" -np "$gpus" -- "$build/perftest/device/tshmem_put_bw_all_pairs" --json "$json"
  fi
  moe_benchmark
  echo "== host benchmarks on the GPU heap, $gpus PEs"
  host_benchmarks "$gpus"

elif [ "$gpus" -eq 1 ]; then
  unset TSHMEM_MEM_BACKEND
  moe_benchmark
  echo "== device perftest, local rows: 1 PE, the peer is the PE itself (this GPU's memory, no link)"
  for bench in "${device_benches[@]}"; do
    run "$(basename "$bench") (1 PE)" "$launcher" -np 1 -- "$bench" --json "$json"
  done
  echo "== pair benchmarks at 2 PEs sharing the one GPU (TSHMEM_ALLOW_SHARED_GPU=1): LOGIC, NOT SPEED"
  echo "   (small sizes; figures go to $shared_json, not to the results)"
  : > "$shared_json"
  for bench in "${device_benches[@]}"; do
    run "$(basename "$bench") (2 PEs on 1 GPU)" env TSHMEM_ALLOW_SHARED_GPU=1 "$launcher" -np 2 -- "$bench" \
      -b 16K -e 64K -f 4 -n 3 -w 1 -c 2 -t 128 --json "$shared_json"
  done
  echo "SKIPPED: GPU-to-GPU speed: needs 2 GPUs"
  skipped+=("GPU-to-GPU speed (one GPU here)")
fi

if [ "$gpus" -le 1 ]; then
  echo "== host benchmarks on the shm backend with 2 PEs"
  export TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-256M}
  echo "== host put/get to a PE of another node (TSHMEM_DEBUG_NODE_SIZE=1: each PE a node; the off-node proxy)"
  off_node_step
  echo "== the same on one node (load/store), then the rest"
  host_benchmarks 2
  rounds=${TSHMEM_RUN_OSHMEM_ROUNDS:-3}
  echo "== the host path against Open MPI's OpenSHMEM: one OpenSHMEM program, each library's best of $rounds rounds"
  if [ -x "$build/perftest/host/oshmem_host_shmem" ]; then
    run "tshmem vs OSHMEM (oshmem-compare.sh)" env TSHMEM_BUILD_DIR="$build" bash "$root/scripts/oshmem-compare.sh" \
      --np "2 4" --rounds "$rounds" --json "$json"
  else
    reason=$(cat "$build/perftest/oshmem_twin.txt" 2>/dev/null || echo "not built")
    echo "SKIPPED: tshmem vs OSHMEM: $reason"
    skipped+=("tshmem vs OSHMEM ($reason)")
  fi
fi

echo "== JSON results: $json"
for s in "${skipped[@]}"; do echo "skipped: $s"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run.sh: ${#failed[@]} step(s) FAILED: ${failed[*]}"
  exit 1
fi
echo "run.sh: every tshmem step that ran passed (${#skipped[@]} skipped)"
