#!/usr/bin/env bash
# Another local user (uid 65534, through setpriv) floods every tshmem socket with connections and squats
# names in /tmp and /dev/shm while a job of <np> PEs initialises, several times over. Every init must
# succeed (the hostile user cannot even connect), quickly, and leave nothing in /tmp or /dev/shm.
# Usage: hostile_uid_test.sh <launcher> <np> <init_probe> <hostile_peer.py> [rounds]
# Prints "SKIP: <reason>" where the sandbox cannot run a second uid, "PASS: ..." on success.
set -u
launcher=$1 np=$2 probe=$3 hostile_src=$4 rounds=${5:-5}

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to start a process of another uid (setpriv)"; exit 0; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is not installed"; exit 0; }
python=/usr/bin/python3  # the system one: a per-user install (pyenv) is not reachable by the other uid
[ -x "$python" ] || { echo "SKIP: $python is not installed"; exit 0; }
if [ "${TSHMEM_MEM_BACKEND:-shm}" != shm ] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: TSHMEM_MEM_BACKEND=$TSHMEM_MEM_BACKEND needs a GPU and none is visible"; exit 0
fi
setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null \
  || { echo "SKIP: setpriv --reuid=65534 is not permitted here"; exit 0; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cp "$hostile_src" "$work/hostile.py" && chmod 644 "$work/hostile.py"
residue() { { ls -d /tmp/tshmem-?????? 2>/dev/null; ls /dev/shm 2>/dev/null | grep '^tshmem\.'; } | sort; }
before=$(residue)

setpriv --reuid=65534 --regid=65534 --clear-groups "$python" "$work/hostile.py" > "$work/hostile.log" 2>&1 &
hostile=$!
sleep 0.5
kill -0 "$hostile" 2>/dev/null || { echo "FAIL: the hostile process did not start:"; cat "$work/hostile.log"; exit 1; }
fail=0
for round in $(seq "$rounds"); do
  start=$(date +%s)
  out=$(timeout -k 5 60 "$launcher" "$np" "$probe" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  ok=$(grep -c ' ok$' <<<"$out")
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL: round $round hung (killed after 60 s):"; echo "$out"; fail=1
  elif [ "$ok" != "$np" ]; then echo "FAIL: round $round: $ok of $np PEs ok (rc $rc):"; echo "$out"; fail=1
  else echo "round $round: $np PEs initialised and finalised in ${took} s"; fi
done
kill -TERM "$hostile"; wait "$hostile"
cat "$work/hostile.log"
grep -q ", 0 reached a tshmem socket" "$work/hostile.log" \
  || { echo "FAIL: the other uid reached a socket of the job (or did not report)"; fail=1; }
# The hostile user's own squatted names are gone (it removed them); ours must be too.
# A job that ctest runs beside this one holds its socket directory for milliseconds: look twice.
after=$(residue)
[ "$before" = "$after" ] || { sleep 2; after=$(residue); }
if [ "$before" != "$after" ]; then echo "FAIL: residue:"; comm -13 <(echo "$before") <(echo "$after"); fail=1; fi
[ "$fail" = 0 ] && echo "PASS: $rounds rounds at $np PEs under a hostile uid: all initialised, nothing reached, nothing left"
exit "$fail"
