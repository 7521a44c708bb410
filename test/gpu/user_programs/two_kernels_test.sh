#!/usr/bin/env bash
# The two-kernel program (two_kernels.cu) as a user builds it, with plain nvcc, then run the ways a user runs it:
# across nodes (TSHMEM_DEBUG_NODE_SIZE) on both GPU heaps, over tcp, at 4 PEs, with CUDA started before
# tshmem_init and with CUDA_MODULE_LOADING=LAZY set by the user; and on one node. Every run must end (each is
# bounded at 120 s) with every PE's rounds done and no byte wrong.
# Usage: two_kernels_test.sh <launcher> <nvcc> <cuda arch> <include dir>... -- <library dir>
set -u
launcher=$1 nvcc=$2 arch=$3
shift 3
includes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do includes+=("-I$1"); shift; done
shift
libdir=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no GPU"; exit 77; fi
ccbin=()
[ -n "${NVCC_CCBIN:-}" ] && ccbin=(-ccbin "$NVCC_CCBIN")
"$nvcc" "${ccbin[@]}" -std=c++17 -arch="sm_$arch" -O2 "${includes[@]}" "$here/two_kernels.cu" -L"$libdir" -ltshmem \
  -Xlinker -rpath,"$libdir" -o "$work/two_kernels" || { echo "FAIL: the program does not build with plain nvcc"; exit 1; }

export TSHMEM_DISABLE_NVLS=1 TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_SYMMETRIC_SIZE=256M
failed=0
run() {  # name np env... -- args
  local name=$1 np=$2
  shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local start=$SECONDS
  env "${envs[@]}" timeout -s KILL 120 "$launcher" "$np" "$work/two_kernels" "$@" >"$work/$name.log" 2>&1
  local rc=$? done
  done=$(grep -c "rounds done, 0 bytes wrong" "$work/$name.log")
  if [ "$rc" -eq 0 ] && [ "$done" -eq "$np" ]; then
    echo "ok   $name: $np PEs, $((SECONDS - start)) s"
  else
    echo "FAIL $name (rc $rc, $done of $np PEs done):"; sed 's/^/    /' "$work/$name.log" | tail -20; failed=1
  fi
}
run across_nodes_vmm 2 TSHMEM_DEBUG_NODE_SIZE=1 TSHMEM_MEM_BACKEND=vmm --
run across_nodes_ipc 2 TSHMEM_DEBUG_NODE_SIZE=1 TSHMEM_MEM_BACKEND=ipc --
run across_nodes_tcp 2 TSHMEM_DEBUG_NODE_SIZE=1 OMPI_MCA_btl=self,tcp --
run across_nodes_np4 4 TSHMEM_DEBUG_NODE_SIZE=2 --
run cuda_started_first 2 TSHMEM_DEBUG_NODE_SIZE=1 -- cuda-first
run user_sets_lazy_loading 2 TSHMEM_DEBUG_NODE_SIZE=1 CUDA_MODULE_LOADING=LAZY --
run one_node 2 --
[ "$failed" -eq 0 ] && echo "PASS: the two-kernel program completes in every arrangement" || exit 1
