#!/usr/bin/env bash
# A job SIGKILLed at some point of init, or after it, leaves nothing of tshmem behind.
# Usage: kill_residue_test.sh <launcher> <np> <kill_helper> <point>
#   point = after-init  every PE initialises and allocates, then the last PE kills itself
#         = <step>      every PE pauses at that init step (TSHMEM_DEBUG_FAIL=<step>:all:pause), then one
#                       PE, chosen at random, is killed
#         = random      one PE is killed at a random moment from 0 to 1.5 s after the launch
# The shm heap has no name (O_TMPFILE in /dev/shm, or memfd): the kernel frees it with its last process, so
# the test asks that every PE process is gone. As a regression check it also fails on a name in /dev/shm
# with the tshmem prefix, of this uid, that appeared during the test and that no live process uses (names of
# jobs running beside this one are theirs).
set -u
launcher=$1 np=$2 helper=$3 point=$4
uid=$(id -u)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tshmem_segments() { find /dev/shm -maxdepth 1 -name 'tshmem*' -uid "$uid" -printf '%f\n' 2>/dev/null | sort; }
# Socket directories of the descriptor exchange: in $TMPDIR or /tmp, or in a launcher's directory of the job below it.
socket_dirs() { find "${TMPDIR:-/tmp}" /tmp -maxdepth 4 -name 'tshmem-[0-9]*-??????' -uid "$uid" 2>/dev/null | sort -u; }
in_use() {  # is /dev/shm/$1 mapped or open by a live process?
  grep -qsF "/dev/shm/$1" /proc/[0-9]*/maps && return 0
  ls -l /proc/[0-9]*/fd 2>/dev/null | grep -qF "/dev/shm/$1"
}
children_of() {  # pids whose parent is $1, from /proc (no procps needed)
  local proc
  for proc in /proc/[0-9]*; do
    [ "$(sed 's/^.*) //' "$proc/stat" 2>/dev/null | cut -d' ' -f2)" = "$1" ] && echo "${proc#/proc/}"
  done
}
fail() { echo "FAIL ($point, np $np): $*"; echo "--- job output:"; cat "$work/out"; exit 1; }

before=$(tshmem_segments)
dirs_before=$(socket_dirs)
case "$point" in
  after-init) ;;
  random) ;;
  *) export TSHMEM_DEBUG_FAIL="$point:all:pause" ;;
esac
"$launcher" "$np" "$helper" >"$work/out" 2>&1 &
job=$!

if [ "$point" = random ]; then
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", (r % 1500) / 1000 }')"
  victim=$(children_of "$job" | shuf -n 1)
  [ -n "$victim" ] && kill -KILL "$victim"
elif [ "$point" != after-init ]; then
  # Wait until every PE stands at the step, then kill one of them.
  for _ in $(seq 600); do
    [ "$(grep -c "paused at init step $point " "$work/out")" -ge "$np" ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  paused=$(grep -c "paused at init step $point " "$work/out")
  [ "$paused" -eq "$np" ] || { kill -KILL "$job" 2>/dev/null; fail "only $paused of $np PEs reached step $point"; }
  victim=$(sed -n "s/.*(pid \([0-9]*\)) paused at init step $point .*/\1/p" "$work/out" | shuf -n 1)
  kill -KILL "$victim"
fi

# The launcher takes the job down once a PE has died; it must not hang.
for _ in $(seq 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
  for pid in $(children_of "$job"); do kill -KILL "$pid"; done
  kill -KILL "$job"
  fail "the job hung after a PE was killed"
fi
wait "$job"
rc=$?
[ "$rc" -ne 0 ] || fail "the job was expected to die (rc 0)"
if [ "$point" = after-init ]; then
  [ "$(grep -c 'ready$' "$work/out")" -eq "$np" ] || fail "not every PE got through init"
fi
# Every paused PE is gone (a survivor would still hold its heap).
for pid in $(sed -n 's/.*(pid \([0-9]*\)) paused at init step .*/\1/p' "$work/out"); do
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done  # the launcher kills them
  ! kill -0 "$pid" 2>/dev/null || fail "PE process $pid outlived the job by 10 s"
done

residue=""
for name in $(comm -13 <(echo "$before") <(tshmem_segments)); do
  in_use "$name" || residue+=" $name"
done
[ -z "$residue" ] || { rm -f $(printf '/dev/shm/%s ' $residue); fail "residue in /dev/shm:$residue (removed)"; }
# A killed exchange leaves no socket directory either: it lives in the launcher's directory of the job, which the
# launcher removes however the job ended (the heap-exchange point kills a PE while the directory exists).
stale=""
for dir in $(comm -13 <(echo "$dirs_before") <(socket_dirs)); do
  creator=${dir##*/tshmem-}
  creator=${creator%%-*}
  kill -0 "$creator" 2>/dev/null || stale+=" $dir"
done
[ -z "$stale" ] || { rm -rf $stale; fail "socket directories left by the killed job:$stale (removed)"; }
echo "PASS: killed at $point (np $np): job ended (rc $rc), no tshmem residue in /dev/shm or in socket directories"
