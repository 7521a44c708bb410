#!/usr/bin/env bash
# scripts/oshmem-compare.sh when the peer library fails a round: the peer is played by tshmem's own program under
# the OSHMEM twin's name (its rows relabelled oshmem); it fails in round 2, leaving a file in /dev/shm. The script
# must exit 0, print the finding with the peer's log lines, build the table from rounds 1 and 3 only, say so, and
# remove the leftover; a tshmem run that fails must still fail it. Init alone runs at the default heap only (the
# script's other heaps are perftest_smoke_host_shmem_twin's).
#   oshmem_compare_peer_fails.sh <tshmem_host_shmem>
set -uo pipefail
program=${1:?the tshmem_host_shmem program}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f /dev/shm/ucx_peer_fails_test_*' EXIT
mkdir -p "$work/perftest/host"
ln -s "$program" "$work/perftest/host/tshmem_host_shmem"
cat > "$work/perftest/host/oshmem_host_shmem" <<PEER
#!/usr/bin/env bash
if [[ "\$*" == *-round2.jsonl* ]]; then  # the script names each run's JSON file by its round
  echo "peer: ucp_init failed (on purpose)"
  echo leftover > /dev/shm/ucx_peer_fails_test_\$\$
  exit 1
fi
args=() json=""
while [ \$# -gt 0 ]; do
  if [ "\$1" = --json ]; then json=\$2; shift 2; else args+=("\$1"); shift; fi
done
TSHMEM_MEM_BACKEND=shm "$program" --json "$work/peer-\$\$.jsonl" "\${args[@]}" || exit
[ ! -f "$work/peer-\$\$.jsonl" ] || sed 's/"lib": *"tshmem"/"lib": "oshmem"/' "$work/peer-\$\$.jsonl" >> "\$json"
PEER
chmod +x "$work/perftest/host/oshmem_host_shmem"
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out"; exit 1; }

TSHMEM_BUILD_DIR=$work bash "$root/scripts/oshmem-compare.sh" --np 2 --rounds 3 --heaps default -- -e 4K -n 20 -w 2 \
  > "$work/out" 2>&1
rc=$?
[ $rc = 0 ] || fail "exit status $rc with only the peer failing"
grep -q 'round 2/3, 2 PEs: oshmem did not finish (exit status 1)' "$work/out" || fail "round 2 not reported"
grep -q 'the table uses the rounds in which every library ran: 1 3 of 3' "$work/out" || fail "rounds used not said"
grep -q 'finding about the peer library: round 2, 2 PEs' "$work/out" || fail "no finding"
grep -q '    peer: ucp_init failed (on purpose)' "$work/out" || fail "the peer's log lines are not printed"
grep -q 'left in /dev/shm and removed: ucx_peer_fails_test_' "$work/out" || fail "leftover not reported"
ls /dev/shm/ucx_peer_fails_test_* >/dev/null 2>&1 && fail "leftover not removed"
grep -Eq '^2 +barrier_all +- +us +[0-9.]+ +[0-9.]+ +[0-9.]+' "$work/out" || fail "no table row with both libraries"

rm -f "$work/perftest/host/tshmem_host_shmem"
printf '#!/usr/bin/env bash\necho "tshmem: refused (on purpose)"; exit 3\n' > "$work/perftest/host/tshmem_host_shmem"
chmod +x "$work/perftest/host/tshmem_host_shmem"
TSHMEM_BUILD_DIR=$work bash "$root/scripts/oshmem-compare.sh" --np 2 --rounds 1 --heaps default -- -e 4K -n 20 -w 2 \
  > "$work/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "exit status $rc with tshmem failing (expected 1)"
grep -q 'tshmem FAILED (exit status 3' "$work/out" || fail "tshmem's failure not reported"
echo "PASS: a failing peer round is a finding, the table uses the other rounds; a failing tshmem run fails"
