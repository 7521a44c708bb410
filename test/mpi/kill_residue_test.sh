#!/usr/bin/env bash
# A PE killed by SIGKILL leaves no tshmem segment in /dev/shm (they are unlinked right after init).
# Usage: kill_residue_test.sh <launcher> <np> <kill_helper>
set -u
launcher=$1 np=$2 helper=$3
before=$(ls /dev/shm | grep '^tshmem\.' | sort)
out=$(timeout 60 "$launcher" "$np" "$helper" 2>&1)
rc=$?
ready=$(grep -c 'ready$' <<<"$out")
after=$(ls /dev/shm | grep '^tshmem\.' | sort)
if [ "$ready" -ne "$np" ]; then echo "FAIL: only $ready of $np PEs got through init:"; echo "$out"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the job was expected to die (rc 0)"; exit 1; fi
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung after a PE was killed"; exit 1; fi
if [ "$before" != "$after" ]; then echo "FAIL: residue in /dev/shm:"; comm -13 <(echo "$before") <(echo "$after"); exit 1; fi
echo "PASS: job ended (rc $rc) and /dev/shm holds no tshmem segment"
