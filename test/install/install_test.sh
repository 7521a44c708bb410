#!/usr/bin/env bash
# Installs tshmem into a prefix and builds an outside project against it, as a user would: CMake
# (find_package(tshmem)) with a host C program and a .cu kernel using the device API without -rdc, and
# pkg-config for the C program. Runs the C program with 2 PEs on shm; the kernel only where a GPU is.
#   install_test.sh <build dir> <source dir> <mpi launcher>
set -uo pipefail
build=$1 src=$2 launcher=$3
work=$(mktemp -d /tmp/tshmem-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }
for f in include/tshmem/tshmem.h include/tshmem/tshmemx.h include/tshmem/version.h include/tshmem/device/tshmem_device.cuh \
         lib/cmake/tshmem/tshmemConfig.cmake lib/pkgconfig/tshmem.pc bin/tshmemrun; do
  [ -e "$work/prefix/$f" ] || fail "installed tree lacks $f"
done

cmake -S "$src/test/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the outside project"; }
cmake --build "$work/consumer" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the outside project"; }
echo "PASS: outside project built with find_package(tshmem)"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
cc "$src/test/install/consumer/hello.c" -o "$work/hello-pc" $(pkg-config --cflags --libs tshmem) \
  -Wl,-rpath,"$work/prefix/lib" || fail "building with pkg-config"
echo "PASS: C program built with pkg-config"

for exe in "$work/consumer/hello" "$work/hello-pc"; do
  out=$(TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=8M LD_LIBRARY_PATH="$work/prefix/lib" "$launcher" 2 "$exe" 2>&1)
  echo "$out" | grep -q "PE 1 of 2: sum of notes = 100" || { echo "$out"; fail "$exe with 2 PEs"; }
done
echo "PASS: installed program ran with 2 PEs on shm"

if [ -x "$work/consumer/ring" ]; then
  out=$(LD_LIBRARY_PATH="$work/prefix/lib" "$launcher" 2 "$work/consumer/ring" 2>&1)
  rc=$?
  if echo "$out" | grep -q "SKIPPED: no GPU"; then
    echo "kernel part skipped: no GPU here"
  else
    echo "$out"
    [ $rc -eq 0 ] || fail "device API kernel from the installed headers"
    echo "PASS: device API kernel (no -rdc) ran with 2 PEs"
  fi
fi
echo "PASS: install test"
