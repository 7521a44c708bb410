#!/usr/bin/env bash
# tshmem.ep on a GPU host: builds the Python packages against a root build with CUDA (default build-gpu, from
# `cmake --preset gpu`; libtshmem and libtshmem_ep are built there first if missing), then runs
# python/tests/tshmem/test_ep.py and test_ep_low_latency.py under mpirun on the vmm heap at 1, 2 and 4 PEs, and at 2 PEs as two nodes of one PE
# (TSHMEM_DEBUG_NODE_SIZE=1: the staged off-node path). Writes one summary log; exits non-zero if any run failed or
# skipped a GPU test (a run's full output goes into the log when it did); last, the README's example at 2 PEs on one node and as two nodes.
#   src/ep/python/gpu_check.sh [build-folder] [log]      log default: <build>/ep-python-check.log
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=$(cd "${1:-$root/build-gpu}" && pwd) || { echo "no build folder ${1:-$root/build-gpu}: cmake --preset gpu first"; exit 2; }
log=${2:-$build/ep-python-check.log}
# No NVLink multicast anywhere in the job (tshmem, NVSHMEM, NCCL, torch's symmetric memory).
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# Nothing waits without a bound: tshmem's waits (the on-stream collectives, the off-node proxy) end with an error
# naming the PE, a test past TSHMEM_PYTEST_TEST_TIMEOUT dumps every thread's stack and ends its process (conftest),
# and each pytest run stops after TSHMEM_EP_PYTEST_LIMIT seconds with the logs printed. Each run stops at its
# first failure (-x): after one PE fails between collective calls, the others' later results say nothing new.
export TSHMEM_WAIT_TIMEOUT_MS=${TSHMEM_WAIT_TIMEOUT_MS:-60000} TSHMEM_PROXY_TIMEOUT_MS=${TSHMEM_PROXY_TIMEOUT_MS:-60000}
export TSHMEM_PYTEST_TEST_TIMEOUT=${TSHMEM_PYTEST_TEST_TIMEOUT:-120}
limit=${TSHMEM_EP_PYTEST_LIMIT:-900}
: > "$log"
say() { echo "$*" | tee -a "$log"; }

say "== tshmem.ep GPU check: $(date -u +%FT%TZ), $(cd "$root" && git rev-parse --short HEAD 2>/dev/null), build $build"
nvidia-smi --query-gpu=index,name --format=csv,noheader 2>/dev/null | sed 's/^/   gpu /' | tee -a "$log"
if [ ! -e "$build/src/ep/libtshmem_ep.so" ] || [ ! -e "$build/src/libtshmem.so" ]; then
  say "== building tshmem and tshmem_ep in $build"
  cmake --build "$build" --target tshmem tshmem_ep >> "$log" 2>&1 || { say "FAILED: the root build"; exit 1; }
fi
say "== python packages"
if ! TSHMEM_PY_BUILD_ONLY=1 bash "$root/scripts/python-test.sh" "$build" >> "$log" 2>&1; then
  say "FAILED: building the python packages (see above)"
  exit 1
fi
if ! compgen -G "$build/python-site/tshmem/_ep_C*.so" > /dev/null; then
  say "FAILED: tshmem._ep_C was not built (no nvcc, or no libtshmem_ep in $build)"
  exit 1
fi

status=0
run() {  # run <label> <np> [VAR=value ...]
  local label=$1 np=$2 out
  shift 2
  out=$(mktemp)
  local start=$SECONDS
  env TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_MEM_BACKEND=vmm "$@" TSHMEM_PYTEST_ARGS="-k test_ep -rs -x" \
    TSHMEM_PYTEST_LIMIT="$limit" timeout $((limit + 30)) "$root/test/python/run_pytest.sh" "$build" "$np" > "$out" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed|error)' "$out" | tail -1)
  say "-- $label (np $np${*:+, $*}): rc $rc, $((SECONDS - start)) s: ${summary:-no summary}"
  # The one expected skip: the host-heap refusal, which needs the shm backend.
  local skips
  skips=$(grep -E '^SKIPPED' "$out" | grep -vc 'the heap is GPU memory here')
  [ "$skips" -gt 0 ] && say "   $skips unexpected skip(s)"
  if [ $rc -ne 0 ] || [ "$skips" -gt 0 ]; then
    status=1
    cat "$out" >> "$log"
  fi
  rm -f "$out"
}
run "1 PE" 1
run "2 PEs" 2
run "4 PEs" 4
run "2 PEs, two nodes" 2 TSHMEM_DEBUG_NODE_SIZE=1
# The README's program, as written, at 2 PEs on one node and as two nodes of one PE (the off-node path).
example() {  # example <label> [VAR=value ...]
  local label=$1 out rc
  shift
  out=$(mktemp)
  (cd "$build" && env PYTHONPATH="$build/python-site" TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_MEM_BACKEND=vmm "$@" \
    timeout "$limit" mpirun "${extra[@]}" --oversubscribe --bind-to none -np 2 \
    "$(cat "$build/python-interpreter")" "$root/python/examples/ep_moe_layer.py") > "$out" 2>&1
  rc=$?
  say "-- python/examples/ep_moe_layer.py ($label): rc $rc"
  grep -E '^PE [0-9]+ of' "$out" | sed 's/^/   /' | tee -a "$log"
  if [ $rc -ne 0 ] || [ "$(grep -cE '^PE [0-9]+ of' "$out")" != 2 ]; then
    status=1
    cat "$out" >> "$log"
  fi
  rm -f "$out"
}
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
example "np 2"
example "np 2, two nodes" TSHMEM_DEBUG_NODE_SIZE=1
say "== $( [ $status = 0 ] && echo PASS || echo FAIL ) (log: $log)"
exit $status
