#!/usr/bin/env bash
# A 64 MiB tmpfs as /dev/shm (a container's default), in a private mount namespace: a heap that does not
# fit fails init on every PE with TSHMEM_ERR_OUT_OF_MEMORY naming the size and the filesystem, promptly,
# and a heap that fits still works there. Nothing stays allocated in /dev/shm afterwards.
# Usage: small_dev_shm_test.sh <launcher> <np> <init_probe>
# Prints "SKIP: <reason>" where the sandbox forbids mount namespaces, "PASS: ..." on success.
set -u
if [ "${1:-}" != --inside ]; then
  command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) is not installed"; exit 0; }
  unshare -m --propagation private true 2>/dev/null || { echo "SKIP: no private mount namespace here (unshare -m)"; exit 0; }
  exec unshare -m --propagation private "$0" --inside "$@"
fi
shift
launcher=$1 np=$2 probe=$3
mount -t tmpfs -o size=64M,mode=1777 tshmem-test /dev/shm 2>/dev/null \
  || { echo "SKIP: mounting a tmpfs on /dev/shm is not permitted here"; exit 0; }
used() { df --output=used -k /dev/shm | tail -1 | tr -d ' '; }
fail=0

# 1. Every PE's heap is too large: each fails locally, all agree.  2. Only some PEs' heaps fit.
for size in 128M 24M; do
  bytes=$(numfmt --from=iec "$size")
  start=$(date +%s)
  out=$(TSHMEM_SYMMETRIC_SIZE=$size timeout -k 5 60 "$launcher" "$np" "$probe" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  failed=$(grep -c "init failed: code 4: .*reserving the ${bytes}-byte .* heap in /dev/shm" <<<"$out")
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL: $size heap: init hung"; echo "$out"; fail=1
  elif [ "$failed" != "$np" ]; then
    echo "FAIL: $size heap: $failed of $np PEs reported TSHMEM_ERR_OUT_OF_MEMORY naming ${bytes} bytes and /dev/shm:"
    echo "$out"; fail=1
  else echo "$size heap x $np PEs in a 64 MiB /dev/shm: every PE failed init with code 4 in ${took} s"; fi
  grep -m1 "init failed" <<<"$out"
done
# 3. A heap that fits works, and nothing of it stays once the job is gone.
base=$(used)
out=$(TSHMEM_SYMMETRIC_SIZE=8M timeout -k 5 60 "$launcher" "$np" "$probe" 2>&1)
ok=$(grep -c ' ok$' <<<"$out")
[ "$ok" = "$np" ] || { echo "FAIL: an 8 MiB heap did not work in the 64 MiB /dev/shm:"; echo "$out"; fail=1; }
left=$(( $(used) - base ))
[ "$left" -le 1024 ] || { echo "FAIL: $left KiB still used in /dev/shm after the job"; ls -la /dev/shm; fail=1; }
[ "$fail" = 0 ] && echo "PASS: a heap larger than /dev/shm is TSHMEM_ERR_OUT_OF_MEMORY on every PE at init"
exit "$fail"
