#!/usr/bin/env bash
# coll-compare.sh — tshmem's on-stream collectives against their NCCL twins (perftest/device/coll, both timed
# alike in one binary and run), at each PE count of --np, back-to-back on a stream and, for the collectives of
# --graph, replayed from a CUDA graph. Prints one scaling table per collective and mode (size; per PE count:
# tshmem latency and bus bandwidth, NCCL's, and the ratio NCCL time / tshmem time, > 1 = tshmem faster),
# the collectives' targets at 2 PEs (docs/results.md), and writes a JSON summary.
#
#   scripts/coll-compare.sh [--build DIR] [--out DIR] [--np "2 4 8"] [--only "allreduce alltoall"]
#                           [--graph "allreduce"] [-d bfloat16] [-b 8K] [-e 256M]
#
#   --build DIR   a configured build tree (default $TSHMEM_BUILD_DIR, else /tmp/tshmem-build); the coll
#                 targets are configured and built there when missing
#   --out DIR     results: coll.txt (the tables), coll.json, runs/*.jsonl, logs/ (default $OUT/coll-compare,
#                 else ./coll-compare)
#   --np LIST     PE counts (default: 2, 4, 8 ... up to the GPUs on this node; 2 without GPUs)
#   --only LIST   collectives (allreduce allgather reduce_scatter alltoall broadcast barrier; default all)
#   --graph LIST  collectives also timed from a CUDA graph (default allreduce; "" for none)
#   -d -b -e      data type and size range, passed to every run (defaults bfloat16, 8K, 256M)
# Multicast stays off (TSHMEM_DISABLE_NVLS=1, NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0). A PE count above
# the node's GPUs is skipped (the benchmark needs a GPU per PE for a fair comparison).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-/tmp/tshmem-build}
out=${OUT:+$OUT/coll-compare}
out=${out:-$PWD/coll-compare}
all="allreduce allgather reduce_scatter alltoall broadcast barrier"
only=$all graph="allreduce" dtype=bfloat16 min=8K max=256M nps=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --graph) graph=$2; shift 2 ;;
    -d) dtype=$2; shift 2 ;;
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "coll-compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for c in $only $graph; do
  [[ " $all " == *" $c "* ]] || { echo "coll-compare.sh: unknown collective '$c' (one of: $all)" >&2; exit 2; }
done
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
if [ -z "$nps" ]; then
  nps=2
  for n in 4 8 16 32 64; do [ "$n" -le "${gpus:-0}" ] && nps="$nps $n"; done
fi
for np in $nps; do
  case "$np" in ''|*[!0-9]*|0|1) echo "coll-compare.sh: --np takes PE counts from 2 up, got '$np'" >&2; exit 2 ;; esac
done
# The largest size in MiB (K/M/G suffixes), for the symmetric heap each run needs.
max_mib=$(python3 -c 'import sys; s=sys.argv[1].upper(); m={"K":1/1024,"M":1,"G":1024}.get(s[-1:]); print(max(1, int(float(s[:-1])*m if m else int(s)/2**20)))' "$max") \
  || { echo "coll-compare.sh: -e $max is not a size" >&2; exit 2; }

export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on the shared host
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
mkdir -p "$out/logs" "$out/runs"
rm -f "$out"/logs/* "$out"/runs/*

bin="$build/perftest/device/coll"
missing=""
for c in $only; do [ -x "$bin/tshmem_coll_$c" ] || missing="$missing tshmem_coll_$c"; done
if [ -n "$missing" ]; then
  echo "== configure + build$missing in $build"
  # shellcheck disable=SC2086  # TSHMEM_CMAKE_ARGS is a list of options
  cmake -S "$root" --preset gpu -B "$build" -DTSHMEM_BUILD_MOE=OFF ${TSHMEM_CMAKE_ARGS:-} \
    > "$out/logs/configure.log" 2>&1 \
    || { tail -20 "$out/logs/configure.log"; exit 1; }
  # shellcheck disable=SC2086  # target names
  cmake --build "$build" -j "$(nproc)" --target $missing > "$out/logs/build.log" 2>&1 \
    || { grep -E "error|FAILED" -A5 "$out/logs/build.log" | head -40; exit 1; }
fi

echo "== collectives, tshmem vs NCCL (PE counts: $nps; $dtype, $min to $max; logs in $out/logs)"
start_all=$SECONDS
for np in $nps; do
  if [ "$np" -gt "${gpus:-0}" ]; then
    echo "   $np PEs: skipped (this node has ${gpus:-0} GPUs)"
    continue
  fi
  # Two buffers of the largest gathered size (max x PEs) and the library's own areas.
  heap="$((2 * max_mib * np + 1024))M"
  for c in $only; do
    modes="stream"
    [[ " $graph " == *" $c "* ]] && modes="stream graph"
    for mode in $modes; do
      name="$c.np$np.$mode"
      s=$SECONDS
      TSHMEM_SYMMETRIC_SIZE=$heap TSHMEM_COLL_GRAPH=$([ "$mode" = graph ] && echo 1 || echo 0) \
        timeout -k 10 300 "$root/scripts/tshmemrun" -np "$np" -- "$bin/tshmem_coll_$c" -d "$dtype" -b "$min" \
        -e "$max" --json "$out/runs/$name.jsonl" < /dev/null > "$out/logs/$name.log" 2>&1
      rc=$?
      printf '   %-34s rc=%s  %3ss\n' "$name" "$rc" "$((SECONDS - s))"
      [ "$rc" = 0 ] || tail -5 "$out/logs/$name.log" | sed 's/^/      /'
    done
  done
done
echo "== all runs took $((SECONDS - start_all)) s"
python3 "$root/perftest/common/coll_table.py" --runs "$out/runs" --out "$out/coll.json" | tee "$out/coll.txt"
