#!/usr/bin/env bash
# check_no_libcuda.sh <binary>...: fails if ldd shows libcuda.so (the driver library) for any binary.
# tshmem reaches the driver through cudaGetDriverEntryPointByVersion only, so that every binary loads on a
# machine without a driver. libcudart is fine (it loads the driver itself, at run time).
set -u
status=0
for binary in "$@"; do
  if ! deps=$(ldd "$binary" 2>&1); then
    echo "FAIL: ldd $binary: $deps"
    status=1
    continue
  fi
  if grep -E '(^|[[:space:]/])libcuda\.so' <<<"$deps"; then
    echo "FAIL: $binary links libcuda (see the line above)"
    status=1
  else
    echo "ok: $binary"
  fi
done
[ "$status" = 0 ] && echo "PASS: no binary links libcuda"
exit "$status"
