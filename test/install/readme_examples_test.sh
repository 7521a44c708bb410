#!/usr/bin/env bash
# The README's examples, exactly as written: extracts "A complete program" (C) and "A kernel" (CUDA) from
# README.md, builds them as an outside project against an installed tshmem, and runs them.
#   readme_examples_test.sh <build dir> <source dir> <mpi launcher> <shm|gpu> "<PE counts>" [cuda: ON|OFF]
#                           [GPU architectures of the kernel, comma-separated: the build's]
#   shm  the host program on the shm backend, on one node and across nodes over each remote transport built (the
#        kernel is built when CUDA is, not run): CI
#   gpu  the host program on shm, vmm and ipc, the kernel on vmm and ipc; more PEs than GPUs share them
#        (TSHMEM_ALLOW_SHARED_GPU=1). Without a GPU: "SKIPPED: no GPU", exit 0.
set -uo pipefail
build=$1 src=$2 launcher=$3 mode=$4 nps=$5 cuda=${6:-OFF} arch=${7:-}
fail() { echo "FAIL: $*"; exit 1; }
case "$mode" in shm|gpu) ;; *) fail "mode must be shm or gpu, got '$mode'" ;; esac

gpus=0
if command -v nvidia-smi >/dev/null; then gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true); fi
if [ "$mode" = gpu ] && [ "${gpus:-0}" -eq 0 ]; then
  echo "SKIPPED: no GPU (the README examples on the GPU backends need one)"
  exit 0
fi

work=$(mktemp -d /tmp/tshmem-readme.XXXXXX)
trap 'rm -rf "$work"' EXIT

# extract <section heading> <fence language> <out>: the first fenced block of that language after the heading.
extract() {
  awk -v heading="$1" -v fence="\`\`\`$2" '
    $0 == heading { in_section = 1; next }
    in_section && /^## / { exit }
    in_section && !in_block && $0 == fence { in_block = 1; next }
    in_block && $0 == "```" { exit }
    in_block { print }
  ' "$src/README.md" > "$3"
  [ -s "$3" ] || fail "README.md has no \`\`\`$2 block under '$1'"
}
mkdir -p "$work/examples"
extract "## A complete program" c "$work/examples/hello.c"
extract "## A kernel" cuda "$work/examples/ring.cu"
grep -q "int main" "$work/examples/ring.cu" || fail "the README's kernel example has no main (it must run as written)"

cat > "$work/examples/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(readme_examples LANGUAGES C CXX)
find_package(tshmem REQUIRED)
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE tshmem::tshmem)
if(README_KERNEL)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  add_executable(ring ring.cu)
  target_link_libraries(ring PRIVATE tshmem::tshmem tshmem::device)
endif()
CMAKE

kernel=OFF
[ "$cuda" = ON ] && kernel=ON
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
cmake -S "$work/examples" -B "$work/out" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DREADME_KERNEL=$kernel \
  ${arch:+"-DCMAKE_CUDA_ARCHITECTURES=${arch//,/;}"} \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the README examples"; }
cmake --build "$work/out" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the README examples"; }
echo "PASS: README examples built against the installed tshmem (kernel: $kernel)"

export LD_LIBRARY_PATH="$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" TSHMEM_SYMMETRIC_SIZE=8M TSHMEM_DISABLE_NVLS=1
# run_hello <np> <what> [VAR=value ...]: the host program on <np> PEs with those variables set; every PE must print
# the sum of every PE's note.
run_hello() {
  local np=$1 what=$2 out rc lines sum
  shift 2
  sum=$((100 * np * (np - 1) / 2))
  out=$(env "$@" "$launcher" "$np" "$work/out/hello" 2>&1)
  rc=$?
  lines=$(grep -c "of $np: sum of notes = $sum$" <<< "$out" || true)
  if [ $rc -ne 0 ] || [ "$lines" -ne "$np" ]; then
    echo "$out"
    fail "host program, $what (want $np lines 'sum of notes = $sum')"
  fi
  echo "PASS: host program, $what: every PE's sum of notes = $sum"
}
host_backends=shm kernel_backends=""
[ "$mode" = gpu ] && host_backends="shm vmm ipc" kernel_backends="vmm ipc"
for np in $nps; do
  shared=0
  [ "$mode" = gpu ] && [ "$np" -gt "$gpus" ] && shared=1
  for backend in $host_backends; do
    run_hello "$np" "$np PEs, $backend" TSHMEM_MEM_BACKEND="$backend" TSHMEM_ALLOW_SHARED_GPU="$shared"
  done
  for backend in $kernel_backends; do
    out=$(TSHMEM_MEM_BACKEND=$backend TSHMEM_ALLOW_SHARED_GPU=$shared "$launcher" "$np" "$work/out/ring" 2>&1)
    rc=$?
    good=0
    for ((pe = 0; pe < np; ++pe)); do
      prev=$(((pe + np - 1) % np))
      grep -q "^PE $pe: slot = $((1000 + prev)) (from PE $prev)$" <<< "$out" && good=$((good + 1))
    done
    if [ $rc -ne 0 ] || [ "$good" -ne "$np" ]; then
      echo "$out"
      fail "kernel program, $np PEs, $backend"
    fi
    how="$np PEs"
    [ $shared = 1 ] && how="$np PEs sharing $gpus GPU(s)"
    echo "PASS: kernel program, $how, $backend: every PE got its neighbour's number"
  done
done
# The host program across nodes, unchanged (shm mode: CI): every PE a node of its own (2 PEs) and two nodes of 2
# (4 PEs), over each remote transport the installed build has (tshmem-info lists them; ucx over shared memory and
# over tcp, the network between nodes).
if [ "$mode" = shm ]; then
  transports=("mpi:TSHMEM_REMOTE_TRANSPORT=mpi")
  info=$("$work/prefix/bin/tshmem-info" 2>/dev/null)
  if grep -qE '^  ucx +UCX [0-9.]+ loaded from' <<< "$info"; then
    transports+=("ucx-sm:TSHMEM_REMOTE_TRANSPORT=ucx UCX_TLS=sm,self" "ucx-tcp:TSHMEM_REMOTE_TRANSPORT=ucx UCX_TLS=tcp,self")
  fi
  for shape in "2:1" "4:2"; do
    np=${shape%:*} node_size=${shape#*:}
    for transport in "${transports[@]}"; do
      # shellcheck disable=SC2086  # the transport's variables, one word each
      run_hello "$np" "across nodes, $np PEs in nodes of $node_size, ${transport%%:*}" \
        TSHMEM_MEM_BACKEND=shm TSHMEM_DEBUG_NODE_SIZE="$node_size" ${transport#*:}
    done
  done
fi
echo "PASS: README examples"
