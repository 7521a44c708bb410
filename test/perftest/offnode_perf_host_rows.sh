#!/usr/bin/env bash
# scripts/offnode-perf.sh --host-only: the host rows of both transports beside OpenSHMEM at its defaults and over
# the ucx column's UCX transports, in alternating rounds. The ucx column's off-node endpoint must have used tcp (the
# transports asked for), every latency row must carry a figure in every column and a ratio to each other column, and
# a bad --rounds or --host-max must be refused naming the option and the value. Then the whole run (the
# device-channel rows driven by CPU producers too) in 2 rounds: each row of the first table carries both rounds'
# figures, and every row both transports have gets ucx's ratio to the mpi transport, from each round's own pair.
#   offnode_perf_host_rows.sh <build dir> <twin: 1 where oshmem_host_shmem was built, else 0>
set -uo pipefail
build=${1:?the build directory}
twin=${2:?1 where the OpenSHMEM twin was built, else 0}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out"; exit 1; }

bash "$root/scripts/offnode-perf.sh" --build "$build" --rounds 0 > "$work/out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--rounds 0 exited $rc, not 2"
grep -q -- "--rounds must be a positive integer, got '0'" "$work/out" || fail "--rounds 0: no message naming the value"
bash "$root/scripts/offnode-perf.sh" --build "$build" --host-max 12Q > "$work/out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "--host-max 12Q exited $rc, not 2"
grep -q -- "--host-max takes a size (64M, 1G, 4096), got '12Q'" "$work/out" || fail "--host-max 12Q: no message naming it"

bash "$root/scripts/offnode-perf.sh" --build "$build" --out "$work/perf" --host-only --rounds 2 --host-max 64 \
  --btl "vader ucx" --ucx-tls tcp,self > "$work/out" 2>&1 || fail "offnode-perf.sh exited $?"
grep -Eq "^ +ucx +off-node endpoint: .*rma_am\(tcp/" "$work/out" || fail "the ucx column did not run over tcp"
for r in 1 2; do [ -s "$work/perf/ucx.host_shmem.r$r.jsonl" ] || fail "no ucx rows in round $r"; done
if [ "$twin" = 1 ]; then
  grep -Eq "^ +oshmem-tls +off-node endpoint: .*rma_am\(tcp/" "$work/out" || fail "the oshmem-tls column did not run over tcp"
  # vader, ucx, oshmem, oshmem-tls, then ucx/oshmem, ucx/oshmem-tls, ucx/vader
  rows=$(grep -Ec "^(put\+quiet|get) +[0-9]+ B( +[0-9]+\.[0-9]+){7}$" "$work/out")
else
  rows=$(grep -Ec "^(put\+quiet|get) +[0-9]+ B( +[0-9]+\.[0-9]+){3}$" "$work/out")
fi
[ "$rows" = 8 ] || fail "$rows latency rows with every figure, not 8 (8 .. 64 B, put+quiet and get)"

bash "$root/scripts/offnode-perf.sh" --build "$build" --out "$work/all" --rounds 2 --host-max 64 --btl "vader ucx" \
  > "$work/out" 2>&1 || fail "offnode-perf.sh (every row) exited $?"
for btl in vader ucx; do
  for r in 1 2; do [ -s "$work/all/$btl.r$r.jsonl" ] || fail "no $btl rows in round $r"; done
  # 64 KiB .. 16 MiB: the median, then the two rounds' figures
  rows=$(grep -Ec "^$btl +host_proxy: put bandwidth .* [0-9.]+ GB/s .* [0-9.e+]+/[0-9.e+]+$" "$work/out")
  [ "$rows" = 5 ] || fail "$rows $btl put bandwidth rows with both rounds' figures, not 5"
done
grep -q "^== ucx / vader, ratio of times" "$work/out" || fail "no table of ucx / vader"
rows=$(grep -Ec "^host_proxy: put bandwidth .* [0-9]+\.[0-9]{2}  [0-9]+\.[0-9]{2}/[0-9]+\.[0-9]{2}$" "$work/out")
[ "$rows" = 5 ] || fail "$rows put bandwidth ratios from both rounds, not 5"
echo "PASS: host rows side by side over tcp,self, 2 rounds; every row in 2 rounds with ucx / vader"
