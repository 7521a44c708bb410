#!/usr/bin/env bash
# staged_put_lazy.cu as a user builds it (plain nvcc, two units), run across nodes (2 PEs, nodes of 1) with CUDA
# started before tshmem_init and CUDA_MODULE_LOADING=LAZY, for puts the kernel stages (thread and warp scope, up
# to TSHMEM_PROXY_STAGE_MAX, an unaligned source), and for gets that land in the staging (at most 256 bytes per
# thread of the group); a block's puts and gets take the proxy's copy, as the control does: each must complete with every byte right, on each remote
# transport built. A proxy that copied the payload with CUDA would be held by the module load until
# TSHMEM_PROXY_TIMEOUT_MS (30 s here) and the run would fail. The control (TSHMEM_PROXY_STAGE_MAX=0: the proxy
# copies the payload) must end within the bound either way; whether it completed is printed.
# Usage: staged_put_lazy_test.sh <launcher> <nvcc> <cuda arch> <include dir>... -- <library dir> [transport...]
set -u
launcher=$1 nvcc=$2 arch=$3
shift 3
includes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do includes+=("-I$1"); shift; done
shift
libdir=$1
shift
transports=("$@")
[ ${#transports[@]} -eq 0 ] && transports=(mpi)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 77; fi
ccbin=()
[ -n "${NVCC_CCBIN:-}" ] && ccbin=(-ccbin "$NVCC_CCBIN")
"$nvcc" "${ccbin[@]}" -std=c++17 -arch="sm_$arch" -O2 "${includes[@]}" "$here/staged_put_lazy.cu" \
  "$here/plain_kernel.cu" -L"$libdir" -ltshmem -Xlinker -rpath,"$libdir" -o "$work/staged_put_lazy" ||
  { echo "FAIL: the program does not build with plain nvcc"; exit 1; }

export TSHMEM_DISABLE_NVLS=1 TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_SYMMETRIC_SIZE=256M TSHMEM_DEBUG_NODE_SIZE=1
export CUDA_MODULE_LOADING=LAZY TSHMEM_PROXY_TIMEOUT_MS=30000
failed=0
run() {  # name transport stage_max put|get scope bytes offset
  local name=$1 transport=$2 stage_max=$3
  shift 3
  local start=$SECONDS
  # The control only has to end within its bound: 5 s, not the 30 s that lets a staged run finish under load.
  local bound=30000
  [ "$stage_max" = 0 ] && bound=5000
  TSHMEM_PROXY_TIMEOUT_MS=$bound TSHMEM_REMOTE_TRANSPORT=$transport TSHMEM_PROXY_STAGE_MAX=$stage_max timeout -s KILL 120 "$launcher" 2 \
    "$work/staged_put_lazy" "$@" >"$work/$name.log" 2>&1
  local rc=$? done
  done=$(grep -c "done, 0 bytes wrong" "$work/$name.log")
  if [ "$stage_max" = 0 ]; then  # the control: bounded either way
    if [ "$rc" -eq 137 ]; then
      echo "FAIL $name: did not end within 120 s"; sed 's/^/    /' "$work/$name.log" | tail -20; failed=1
    else
      echo "ok   $name (control, proxy copies): ended in $((SECONDS - start)) s, $done of 2 PEs done, rc $rc"
    fi
  elif [ "$rc" -eq 0 ] && [ "$done" -eq 2 ]; then
    echo "ok   $name: $((SECONDS - start)) s"
  else
    echo "FAIL $name (rc $rc, $done of 2 PEs done):"; sed 's/^/    /' "$work/$name.log" | tail -20; failed=1
  fi
}
for t in "${transports[@]}"; do
  run "${t}_put_thread_4099" "$t" 64K put thread 4099 0
  run "${t}_put_warp_65536" "$t" 64K put warp 65536 0
  run "${t}_put_warp_65533_unaligned" "$t" 64K put warp 65533 3
  run "${t}_put_warp_16" "$t" 64K put warp 16 8
  run "${t}_get_thread_200" "$t" 64K get thread 200 0
  run "${t}_get_warp_8192" "$t" 64K get warp 8192 0
  run "${t}_get_warp_8189_unaligned" "$t" 64K get warp 8189 3
  run "${t}_control_put_block_65536" "$t" 0 put block 65536 0
  run "${t}_control_get_block_65536" "$t" 0 get block 65536 0
done
[ "$failed" -eq 0 ] && echo "PASS: staged puts and gets complete while a module loads in the origin process" || exit 1
