#!/usr/bin/env bash
# A one-PE init failure for real (no fault switch): PE 0 runs under `ulimit -v`, so only its heap mapping
# fails. Every PE must report the same error naming PE 0 and exit by itself, promptly (this hung: PE 1
# waited in the backend's destroy barrier while PE 0 was in MPI_Finalize), with no segment left behind.
# Usage: rlimit_heap_test.sh <launcher> <np> <kill_helper>
set -u
launcher=$1 np=$2 helper=$3
uid=$(id -u)
tshmem_segments() { find /dev/shm -maxdepth 1 -name 'tshmem*' -uid "$uid" -printf '%f\n' 2>/dev/null | sort; }
# shellcheck disable=SC2010  # ls -l shows where each descriptor points (a glob cannot)
in_use() { grep -qsF "/dev/shm/$1" /proc/[0-9]*/maps || ls -l /proc/[0-9]*/fd 2>/dev/null | grep -qF "/dev/shm/$1"; }

before=$(tshmem_segments)
# 1 GiB of heap cannot be mapped in 600 MB of address space; MPI itself fits.
# shellcheck disable=SC2016  # the script runs in the PE's shell, not here
out=$(TSHMEM_SYMMETRIC_SIZE=1G timeout 60 "$launcher" "$np" bash -c \
  'if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" = 0 ]; then ulimit -v 600000; fi; exec "$0" expect-init-failure' \
  "$helper" 2>&1)
rc=$?
fail() { echo "FAIL (np $np): $*"; echo "--- job output:"; echo "$out"; exit 1; }
[ "$rc" -ne 124 ] || fail "the job hung (killed after 60 s)"
errors=$(grep '^init failed: ' <<<"$out" | sort -u)
[ "$(grep -c '^init failed: ' <<<"$out")" -eq "$np" ] || fail "not every PE reported the failure"
[ "$(wc -l <<<"$errors")" -eq 1 ] || fail "the PEs reported different errors"
grep -q 'failed on PE 0: ' <<<"$errors" || fail "the error does not name PE 0"
! grep -qi 'signal\|core dumped\|Bus error' <<<"$out" || fail "a PE died instead of returning"
[ "$rc" -eq 0 ] || fail "expected every PE to return from main by itself (rc $rc)"
residue=""
for name in $(comm -13 <(echo "$before") <(tshmem_segments)); do in_use "$name" || residue+=" $name"; done
[ -z "$residue" ] || fail "residue in /dev/shm:$residue"
echo "PASS: PE 0's heap failed under ulimit -v; all $np PEs returned the same error naming it: ${errors#init failed: }"
