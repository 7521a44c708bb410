#!/usr/bin/env bash
# rdc-compare.sh — what separate compilation (-rdc) costs the device API: p + quiet latency (tshmem_p_latency) and
# putmem_nbi_block bandwidth (tshmem_put_bw), each beside its twin built from the same source with separable
# compilation (tshmem_*_rdc), in alternating rounds of one run; one table per benchmark and PE count (every
# round of both builds, the medians' ratio, the goal: latency <= 1.05x, bandwidth >= 0.97x). Both builds run the same
# arguments; the build that goes first alternates from round to round (without, with; then with, without), so
# neither always runs on a GPU the other has just warmed. put_bw's sizes reach 8 MiB, where every thread of the
# 32 x 1024 runs the library's 16-byte copy loop several times (up to 512 KiB each moves one 16-byte word); each
# timed launch makes 1000 transfers, after a launch of 100.
#
#   scripts/rdc-compare.sh [--build DIR] [--out DIR] [--np "1 2"] [--rounds 5]
#
#   --build DIR   a build tree (default $TSHMEM_BUILD_DIR, else build-gpu), configured with the gpu preset where it
#                 has none; the four benchmarks are brought up to date there before the runs
#   --out DIR     results: rdc.txt (the tables), rdc.json, logs/ (default $OUT/rdc-compare, else ./rdc-compare)
#   --np LIST     PE counts: 1 (the peer is the PE itself: local rows), 2 (on one GPU the two PEs share it:
#                 TSHMEM_ALLOW_SHARED_GPU=1 is set where there are fewer GPUs)
#   --rounds N    rounds per PE count, each one run of every benchmark in both builds (the median is reported)
# Multicast stays off (TSHMEM_DISABLE_NVLS=1).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build-gpu}
out=${OUT:+$OUT/rdc-compare}
out=${out:-$PWD/rdc-compare}
nps="1 2"
rounds=5
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "rdc-compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for np in $nps; do
  case "$np" in 1|2) ;; *) echo "rdc-compare.sh: --np takes 1 and 2 (pair benchmarks), got '$np'" >&2; exit 2 ;; esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "rdc-compare.sh: --rounds takes a positive count, got '$rounds'" >&2; exit 2 ;; esac

export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on a shared host
export TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-1G}
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
mkdir -p "$out/logs"
rm -f "$out"/logs/*

dev="$build/perftest/device"
targets="tshmem_p_latency tshmem_p_latency_rdc tshmem_put_bw tshmem_put_bw_rdc"
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "== configure $build (gpu preset)"
  # shellcheck disable=SC2086  # TSHMEM_CMAKE_ARGS is a list of options
  cmake -S "$root" --preset gpu -B "$build" \
    ${TSHMEM_CMAKE_ARGS:-} > "$out/logs/configure.log" 2>&1 || { tail -20 "$out/logs/configure.log"; exit 1; }
fi
# Always brought up to date (nothing to do when they are): both builds measured are the tree's.
echo "== build $targets in $build"
# shellcheck disable=SC2086  # a list of targets
cmake --build "$build" -j "$(nproc)" --target $targets > "$out/logs/build.log" 2>&1 \
  || { grep -E "error|FAILED" -A5 "$out/logs/build.log" | head -40; exit 1; }

gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
failed=0
# run <np> <round> <bench> <variant> <args...>: one run, its table kept as JSON lines; a hang is cut off at 120 s.
run() {
  local np=$1 round=$2 bench=$3 variant=$4
  shift 4
  local name="$bench$variant.np$np.r$round" start=$SECONDS shared=0
  [ "$np" -gt "${gpus:-0}" ] && shared=1
  timeout -k 10 120 env TSHMEM_ALLOW_SHARED_GPU=$shared "$root/scripts/tshmemrun" -np "$np" -- \
    "$dev/tshmem_$bench$variant" "$@" --json "$out/logs/$name.jsonl" < /dev/null > "$out/logs/$name.log" 2>&1
  local rc=$?
  printf '   %-32s rc=%s  %3ss\n' "$name" "$rc" "$((SECONDS - start))"
  if [ "$rc" != 0 ]; then
    tail -5 "$out/logs/$name.log" | sed 's/^/      /'
    failed=$((failed + 1))
  fi
}

start=$SECONDS
for np in $nps; do
  echo "== $np PE(s), $rounds rounds (logs in $out/logs)"
  for ((round = 1; round <= rounds; ++round)); do
    variants=("" _rdc)
    ((round % 2)) || variants=(_rdc "")
    for variant in "${variants[@]}"; do
      run "$np" "$round" p_latency "$variant" -b 8 -e 8 -n 10000 -w 1000
      run "$np" "$round" put_bw "$variant" -b 32K -e 8M -f 4 -n 1000 -w 100
    done
  done
done
echo "== all runs took $((SECONDS - start)) s"
if ! cat "$out"/logs/*.jsonl > /dev/null 2>&1 || [ -z "$(cat "$out"/logs/*.jsonl)" ]; then
  reason=$(grep -h "skipped:" "$out"/logs/*.log 2>/dev/null | head -1)
  [ -n "$reason" ] && { echo "$reason" | tee "$out/rdc.txt"; exit 0; }
fi
python3 "$root/perftest/common/rdc_table.py" --logs "$out/logs" --out "$out/rdc.json" | tee "$out/rdc.txt"
[ "$failed" = 0 ] || { echo "rdc-compare.sh: $failed run(s) failed"; exit 1; }
