#!/usr/bin/env bash
# Installs tshmem into a prefix and builds an outside project against it, as a user would: CMake
# (find_package(tshmem)) with a host C program and a .cu kernel using the device API without -rdc and with it
# (separable compilation, two units), and pkg-config for the C program and, with nvcc, for the -rdc kernel (one
# nvcc command; nvcc -dlink then g++); where the build has tshmem_moe (tshmem_ep), a C program on tshmem::moe
# (tshmem::ep). Runs the C program with 2 PEs on shm (the MoE program on its CPU reference); the kernels only
# where a GPU is.
#   install_test.sh <build dir> <source dir> <mpi launcher> [GPU architectures, comma-separated: the build's]
#                   [nvcc: the build's, empty without CUDA]
set -uo pipefail
build=$1 src=$2 launcher=$3 arch=${4:-} nvcc=${5:-}
work=$(mktemp -d /tmp/tshmem-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
for f in include/tshmem/tshmem.h include/tshmem/tshmemx.h include/tshmem/version.h include/tshmem/device/tshmem_device.cuh \
         include/nvshmem-compat/nvshmem.h include/nvshmem-compat/nvshmemx.h lib/pkgconfig/tshmem-nvshmem.pc \
         lib/cmake/tshmem/tshmemConfig.cmake lib/pkgconfig/tshmem.pc bin/tshmemrun; do
  [ -e "$work/prefix/$f" ] || fail "installed tree lacks $f"
done

cmake -S "$src/test/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  ${arch:+"-DCMAKE_CUDA_ARCHITECTURES=${arch//,/;}"} \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the outside project"; }
cmake --build "$work/consumer" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the outside project"; }
echo "PASS: outside project built with find_package(tshmem)"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046  # pkg-config prints a list of flags
cc "$src/test/install/consumer/hello.c" -o "$work/hello-pc" $(pkg-config --cflags --libs tshmem) \
  -Wl,-rpath,"$work/prefix/lib" || fail "building with pkg-config"
echo "PASS: C program built with pkg-config"
# shellcheck disable=SC2046  # pkg-config prints a list of flags
cc "$src/test/install/consumer/nvshmem_hello.c" -o "$work/nvshmem-hello-pc" $(pkg-config --cflags --libs tshmem-nvshmem) \
  -Wl,-rpath,"$work/prefix/lib" || fail "building the NVSHMEM program with pkg-config tshmem-nvshmem"
echo "PASS: NVSHMEM program built with pkg-config tshmem-nvshmem"
if [ -n "$nvcc" ] && [ -n "$arch" ]; then
  # -rdc with pkg-config, both flows; `pkg-config --libs tshmem` names libtshmem_device.a for the device link.
  consumer=$src/test/install/consumer
  rdc=(-std=c++17 -rdc=true -arch=sm_"${arch%%,*}")
  # shellcheck disable=SC2046  # pkg-config prints a list of flags
  "$nvcc" "${rdc[@]}" $(pkg-config --cflags tshmem) "$consumer/ring.cu" "$consumer/second_unit.cu" -o "$work/ring-rdc-pc" \
    $(pkg-config --libs tshmem) -Xlinker -rpath -Xlinker "$work/prefix/lib" > "$work/rdc-pc.log" 2>&1 \
    || { cat "$work/rdc-pc.log"; fail "building the -rdc kernel in one nvcc command with pkg-config"; }
  for unit in ring second_unit; do
    # shellcheck disable=SC2046
    "$nvcc" "${rdc[@]}" $(pkg-config --cflags tshmem) -c "$consumer/$unit.cu" -o "$work/$unit.o" \
      || fail "compiling $unit.cu with -rdc"
  done
  # shellcheck disable=SC2046
  "$nvcc" -arch=sm_"${arch%%,*}" -dlink "$work/ring.o" "$work/second_unit.o" $(pkg-config --libs tshmem) \
    -o "$work/dlink.o" || fail "nvcc -dlink with pkg-config --libs tshmem"
  cuda_lib=$(cd "$(dirname "$nvcc")/.." && pwd)/lib64
  # shellcheck disable=SC2046
  g++ "$work/ring.o" "$work/second_unit.o" "$work/dlink.o" -o "$work/ring-rdc-pc-dlink" $(pkg-config --libs tshmem) \
    -Wl,-rpath,"$work/prefix/lib" -L"$cuda_lib" -lcudart_static -ldl -lrt -lpthread || fail "g++ linking the -rdc kernel"
  for exe in "$work/consumer/ring_rdc" "$work/consumer/nvshmem_ring_rdc" "$work/consumer/ring_rdc_lib" "$work/ring-rdc-pc" \
             "$work/ring-rdc-pc-dlink"; do
    symbols=$(nm -C "$exe")
    grep -q ' tshmemi::binary::state_in_libtshmem_device$' <<< "$symbols" \
      || fail "$exe holds no device state from libtshmem_device.a"
  done
  echo "PASS: -rdc kernels built with find_package (tshmem::device, tshmem::nvshmem, a separable static library)" \
    "and pkg-config (nvcc; nvcc -dlink + g++)"
fi

for exe in "$work/consumer/hello" "$work/hello-pc"; do
  out=$(TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=8M LD_LIBRARY_PATH="$work/prefix/lib" "$launcher" 2 "$exe" 2>&1)
  grep -q "PE 1 of 2: sum of notes = 100" <<< "$out" || { echo "$out"; fail "$exe with 2 PEs"; }
done
echo "PASS: installed program ran with 2 PEs on shm"
for exe in "$work/consumer/nvshmem_hello" "$work/nvshmem-hello-pc"; do
  out=$(TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=8M LD_LIBRARY_PATH="$work/prefix/lib" "$launcher" 2 "$exe" 2>&1)
  grep -q "nvshmem PE 1 of 2: got 500, expected 500" <<< "$out" || { echo "$out"; fail "$exe with 2 PEs"; }
done
echo "PASS: NVSHMEM program (find_package COMPONENTS nvshmem, pkg-config) ran with 2 PEs on shm"

# tshmem_moe, where this build has it: the header installed as tshmem/moe.h, tshmem::moe found and linked.
if [ -e "$build/src/moe/libtshmem_moe.so" ]; then
  [ -e "$work/prefix/include/tshmem/moe.h" ] || fail "installed tree lacks include/tshmem/moe.h"
  [ -x "$work/consumer/moe_hello" ] || fail "the outside project did not build moe_hello (tshmem::moe not found)"
  out=$(LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/moe_hello" 2>&1)
  grep -q "moe topk_gate: 1 3 / 0 1" <<< "$out" || { echo "$out"; fail "moe_hello"; }
  echo "PASS: tshmem_moe program (tshmem/moe.h, tshmem::moe) ran its CPU reference"
fi

# tshmem_ep, where this build has it: tshmem/ep.h installed, tshmem::ep found and linked, its host calls run.
if [ -e "$build/src/ep/libtshmem_ep.so" ]; then
  [ -e "$work/prefix/include/tshmem/ep.h" ] || fail "installed tree lacks include/tshmem/ep.h"
  # Versioned like libtshmem, and it finds libtshmem beside itself wherever the prefix is moved.
  ep_lib=$(readlink -f "$work/prefix/lib/libtshmem_ep.so")
  dynamic=$(readelf -d "$ep_lib" 2>&1)
  grep -q 'SONAME.*\[libtshmem_ep\.so\.[0-9]*\]' <<< "$dynamic" || { echo "$dynamic"; fail "libtshmem_ep has no SOVERSION"; }
  grep -q 'R[UN]*PATH.*\[\$ORIGIN\]' <<< "$dynamic" || { echo "$dynamic"; fail "libtshmem_ep's RUNPATH is not \$ORIGIN"; }
  echo "PASS: libtshmem_ep installed as $(basename "$ep_lib"), SONAME with its SOVERSION, RUNPATH \$ORIGIN"
  [ -x "$work/consumer/ep_hello" ] || fail "the outside project did not build ep_hello (tshmem::ep not found)"
  out=$(LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/ep_hello" 2>&1)
  grep -q "ep row: 7504 / TSHMEM_EP_ERR_INVALID_ARGUMENT" <<< "$out" || { echo "$out"; fail "ep_hello"; }
  echo "PASS: tshmem_ep program (tshmem/ep.h, tshmem::ep) ran its host calls"
fi

for kernel in consumer/ring consumer/nvshmem_ring consumer/ring_rdc consumer/nvshmem_ring_rdc consumer/ring_rdc_lib \
              ring-rdc-pc ring-rdc-pc-dlink; do
if [ -x "$work/$kernel" ]; then
  out=$(LD_LIBRARY_PATH="$work/prefix/lib" "$launcher" 2 "$work/$kernel" 2>&1)
  rc=$?
  if grep -q "SKIPPED: no GPU" <<< "$out"; then
    echo "kernel part skipped: no GPU here"
  else
    echo "$out"
    [ $rc -eq 0 ] || fail "device API kernel from the installed headers"
    echo "PASS: $kernel: device API kernel ran with 2 PEs"
  fi
fi
done
echo "PASS: install test"
