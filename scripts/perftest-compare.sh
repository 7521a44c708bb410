#!/usr/bin/env bash
# perftest-compare.sh — every tshmem device benchmark against its NVSHMEM twin (same source, same options),
# plus the PE-check variants and the host malloc / barrier_all twins, at 2 PEs (and the all-pairs benchmarks
# at every count of --np); one table per benchmark (size, tshmem, NVSHMEM, ratio; each library at its best -c
# where -c is swept), the PE-check cost, the device RMA targets (docs/results.md), a JSON summary and PNG charts.
#
#   scripts/perftest-compare.sh [--build DIR] [--out DIR] [--ctas "32 64 132"] [--only "put_bw p_latency"]
#                               [--np "2 4 8"]
#
#   --build DIR   a configured build tree (default $TSHMEM_BUILD_DIR, else /tmp/tshmem-build); configured and
#                 built here (perftest targets only) when it has no tshmem_put_bw yet
#   --out DIR     results: compare.txt (the tables), compare.json, runs.jsonl, logs/, *.png
#                 (default $OUT/perftest-compare, else ./perftest-compare)
#   --ctas LIST   the -c values swept for put_bw and get_bw (each library keeps its best per size)
#   --only LIST   run only these benchmarks (names as in perftest/device/compare.list, or host_malloc,
#                 host_barrier)
#   --np LIST     PE counts (default 2). The pair benchmarks run at 2 only; lines marked ANY_NP in
#                 compare.list (all-pairs put_bw) run at each count, their rows keyed by the PE count
# Suite: perftest/device/compare.list; options: perftest/device/<bench>.args. Multicast stays off (TSHMEM_DISABLE_NVLS=1,
# NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0). Without NVSHMEM twins in the build, the tshmem side still runs.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-/tmp/tshmem-build}
out=${OUT:+$OUT/perftest-compare}
out=${out:-$PWD/perftest-compare}
ctas="32 64 132"
only=""
nps="2"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ctas) ctas=$2; shift 2 ;;
    --only) only=" $2 "; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "perftest-compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

for np in $nps; do
  case "$np" in ''|*[!0-9]*|0|1) echo "perftest-compare.sh: --np takes PE counts from 2 up, got '$np'" >&2; exit 2 ;; esac
done

export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on the shared host
export TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-2G} NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-2G}
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
mkdir -p "$out/logs"
jsonl="$out/runs.jsonl"
: > "$jsonl"
rm -f "$out"/logs/*

dev="$build/perftest/device"
host="$build/perftest/host"
if [ ! -x "$dev/tshmem_put_bw" ]; then
  echo "== configure + build the perftest targets in $build"
  # shellcheck disable=SC2086  # TSHMEM_CMAKE_ARGS is a list of options
  cmake -S "$root" --preset gpu -B "$build" -DTSHMEM_BUILD_MOE=OFF ${TSHMEM_CMAKE_ARGS:-} \
    > "$out/logs/configure.log" 2>&1 \
    || { tail -20 "$out/logs/configure.log"; exit 1; }
  targets=$(sed -n 's/^\([a-z_]*\).*/\1/p' "$root/perftest/device/compare.list" | sort -u)
  list=""
  for b in $targets; do list="$list tshmem_$b"; grep -q "nvshmem_$b:" "$build/build.ninja" && list="$list nvshmem_$b"; done
  for t in tshmem_put_bw_nocheck tshmem_p_latency_nocheck tshmem_host_malloc tshmem_host_malloc_nocheck \
           tshmem_host_barrier nvshmem_host_malloc nvshmem_host_barrier; do
    grep -q "^build [^:]*/$t:" "$build/build.ninja" && list="$list $t"
  done
  # shellcheck disable=SC2086  # a list of targets
  cmake --build "$build" -j "$(nproc)" --target $list > "$out/logs/build.log" 2>&1 \
    || { grep -E "error|FAILED" -A5 "$out/logs/build.log" | head -40; exit 1; }
fi

np=2
wanted() { [ -z "$only" ] || [[ "$only" == *" $1 "* ]]; }
# run <log-name> <binary> [args...]: one run at $np PEs, its output kept; a hang is cut off after 150 s.
run() {
  local name=$1 bin=$2; shift 2
  if [ ! -x "$bin" ]; then echo "   (not built: $(basename "$bin"))"; return; fi
  local start=$SECONDS
  timeout -k 10 150 "$root/scripts/tshmemrun" -np "$np" --env "NVSHMEM_SYMMETRIC_SIZE=$NVSHMEM_SYMMETRIC_SIZE" \
    -- "$bin" "$@" < /dev/null > "$out/logs/$name.log" 2>&1  # mpirun reads stdin
  local rc=$?
  printf '   %-52s rc=%s  %3ss\n' "$name" "$rc" "$((SECONDS - start))"
  [ "$rc" = 0 ] || tail -5 "$out/logs/$name.log" | sed 's/^/      /'
}

total_start=$SECONDS
for np in $nps; do
  echo "== device benchmarks, tshmem vs NVSHMEM ($np PEs, logs in $out/logs)"
  while read -r bench extra; do
    case "$bench" in ''|'#'*) continue ;; esac
    wanted "$bench" || continue
    args="$(cat "$root/perftest/device/$bench.args" 2>/dev/null) $extra"
    case "$args" in *ANY_NP*) args=${args//ANY_NP/} ;; *) [ "$np" = 2 ] || continue ;; esac
    bidir=""; sweep=1; at=""
    [ "$np" = 2 ] || at=".np$np"
    case "$args" in *--bidir*) bidir=".bidir" ;; esac
    case "$args" in *SWEEP_CTAS*) sweep=$ctas; args=${args//SWEEP_CTAS/} ;; esac
    for c in $sweep; do
      cflag=(); tag=""
      [ "$sweep" != 1 ] && cflag=(-c "$c") && tag=".c$c"
      # shellcheck disable=SC2086  # args are the suite's words
      run "$bench$bidir$tag$at.tshmem" "$dev/tshmem_$bench" $args "${cflag[@]}" --json "$jsonl"
      # shellcheck disable=SC2086
      run "$bench$bidir$tag$at.nvshmem" "$dev/nvshmem_$bench" $args "${cflag[@]}" --json "$jsonl"
      if [ -x "$dev/tshmem_${bench}_nocheck" ] && [ -z "$bidir" ]; then
        # shellcheck disable=SC2086
        run "$bench$tag$at.tshmem_nocheck" "$dev/tshmem_${bench}_nocheck" $args "${cflag[@]}" --json "$jsonl"
      fi
    done
  done < "$root/perftest/device/compare.list"
done
np=2

echo "== host twins"
if wanted host_barrier; then
  run host_barrier.tshmem "$host/tshmem_host_barrier" --json "$jsonl"
  run host_barrier.nvshmem "$host/nvshmem_host_barrier" --json "$jsonl"
fi
malloc_json=()
if wanted host_malloc; then
  for variant in host_malloc host_malloc_nocheck; do
    run "$variant.tshmem" "$host/tshmem_$variant" --benchmark_out="$out/logs/$variant.tshmem.json" \
      --benchmark_out_format=json
    malloc_json+=("$out/logs/$variant.tshmem.json")
  done
  run host_malloc.nvshmem "$host/nvshmem_host_malloc" --benchmark_out="$out/logs/host_malloc.nvshmem.json" \
    --benchmark_out_format=json
  malloc_json+=("$out/logs/host_malloc.nvshmem.json")
fi
echo "== all runs took $((SECONDS - total_start)) s"

python3 "$root/perftest/common/compare_table.py" --jsonl "$jsonl" --malloc-json "${malloc_json[@]}" \
  --out "$out/compare.json" | tee "$out/compare.txt"
if python3 -c 'import matplotlib' 2>/dev/null; then
  python3 "$root/scripts/plot_perftest.py" "$out/compare.json" --out "$out" | tail -3
else
  echo "(matplotlib missing: no charts; run scripts/plot_perftest.py $out/compare.json elsewhere)"
fi
