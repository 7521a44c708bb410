#!/usr/bin/env bash
# The host path side by side with Open MPI's OpenSHMEM: one OpenSHMEM program (perftest/host/host_shmem.cc) built
# against tshmem, tshmem_nocheck and OSHMEM, run in alternating rounds at each PE count, then one table (size,
# tshmem, OSHMEM, ratio of times) with each library's best round per row.
#   scripts/oshmem-compare.sh [--np "2 4"] [--rounds 3] [--heaps "default 1G 8G"] [--json FILE]
#                             [-- host_shmem options, e.g. -e 1M -n 200]
# tshmem runs on the shm backend; both libraries get the same symmetric heap for the full runs
# (TSHMEM_SYMMETRIC_SIZE, default 256M, is also SHMEM_SYMMETRIC_SIZE). Then init alone, in the same alternating
# rounds, at each heap of --heaps: "default" sets neither variable (each library's own default), a size sets both.
# Without the twin (no oshcc/shmem.h when configured) it prints why and exits 0 after the tshmem rows. Logs:
# <build>/oshmem-compare/.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}
nps="2 4" rounds=3 json="" heaps="default 1G 8G"
while [ $# -gt 0 ]; do
  case "$1" in
    --np) nps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --heaps) heaps=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "oshmem-compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
bench_args=("$@")
dir="$build/perftest/host"
if [ ! -x "$dir/tshmem_host_shmem" ]; then
  echo "oshmem-compare.sh: $dir/tshmem_host_shmem is not built (build the perftest first)" >&2
  exit 1
fi
variants=(tshmem_host_shmem)
[ -x "$dir/tshmem_host_shmem_nocheck" ] && variants+=(tshmem_host_shmem_nocheck)
twin_status=$(cat "$build/perftest/oshmem_twin.txt" 2>/dev/null || echo "not built: configure did not look for it")
if [ -x "$dir/oshmem_host_shmem" ]; then
  variants+=(oshmem_host_shmem)
else
  echo "SKIPPED: the OSHMEM twin: $twin_status"
fi

logs="$build/oshmem-compare"
mkdir -p "$logs"
jsonl="$logs/host_shmem.jsonl"
: > "$jsonl"
heap=${TSHMEM_SYMMETRIC_SIZE:-256M}
launch=(mpirun --bind-to none)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
env_tshmem=(-x TSHMEM_MEM_BACKEND=shm -x TSHMEM_SYMMETRIC_SIZE="$heap" -x TSHMEM_DISABLE_NVLS=1 -x TSHMEM_PERF_HEAP="$heap")
# Open MPI 4.1's osc/rdma frees memory at MPI_Finalize through a hook into the OpenSHMEM layer that is already
# unloaded (SIGSEGV at the end of every OSHMEM program here); one-sided MPI is no part of the twin, so it is off.
env_oshmem=(-x SHMEM_SYMMETRIC_SIZE="$heap" -x OMPI_MCA_osc=^rdma -x TSHMEM_PERF_HEAP="$heap")

label() {  # tshmem_host_shmem -> tshmem, tshmem_host_shmem_nocheck -> tshmem[nocheck], oshmem_host_shmem -> oshmem
  case "$1" in
    *_nocheck) echo "${1%%_*}[nocheck]" ;;
    *) echo "${1%%_*}" ;;
  esac
}

failed=0
for round in $(seq 1 "$rounds"); do
  order=("${variants[@]}")
  if [ $((round % 2)) = 0 ]; then  # every other round backwards: a slow moment does not land on one side only
    order=()
    for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[$i]}"); done
  fi
  for np in $nps; do
    extra=()
    [ "$np" -gt "$(nproc)" ] && extra+=(--oversubscribe)
    line="round $round/$rounds, $np PEs:"
    for exe in "${order[@]}"; do
      envs=("${env_tshmem[@]}")
      [ "$exe" = oshmem_host_shmem ] && envs=("${env_oshmem[@]}")
      log="$logs/$exe-np$np-round$round.log"
      if "${launch[@]}" "${extra[@]}" -np "$np" "${envs[@]}" "$dir/$exe" --json "$jsonl" "${bench_args[@]}" \
        > "$log" 2>&1; then
        line+=" $(label "$exe") ok"
      else
        line+=" $(label "$exe") FAILED ($log)"
        failed=1
      fi
    done
    echo "$line"
  done
done
# Init alone at each heap size (host_shmem stops after its init row with TSHMEM_PERF_INIT_ONLY).
for round in $(seq 1 "$rounds"); do
  for size in $heaps; do
    for np in $nps; do
      extra=()
      [ "$np" -gt "$(nproc)" ] && extra+=(--oversubscribe)
      line="init round $round/$rounds, heap $size, $np PEs:"
      for exe in tshmem_host_shmem oshmem_host_shmem; do
        [ -x "$dir/$exe" ] || continue
        envs=(-x TSHMEM_PERF_INIT_ONLY=1 -x TSHMEM_PERF_HEAP="$size")
        if [ "$exe" = oshmem_host_shmem ]; then
          envs+=(-x OMPI_MCA_osc=^rdma)
          [ "$size" != default ] && envs+=(-x SHMEM_SYMMETRIC_SIZE="$size")
        else
          envs+=(-x TSHMEM_MEM_BACKEND=shm -x TSHMEM_DISABLE_NVLS=1)
          [ "$size" != default ] && envs+=(-x TSHMEM_SYMMETRIC_SIZE="$size")
        fi
        log="$logs/$exe-init-$size-np$np-round$round.log"
        # "default": neither library gets a heap size, not even one this shell holds.
        if env -u TSHMEM_SYMMETRIC_SIZE -u SHMEM_SYMMETRIC_SIZE "${launch[@]}" "${extra[@]}" -np "$np" "${envs[@]}" \
          "$dir/$exe" --json "$jsonl" > "$log" 2>&1; then
          line+=" $(label "$exe") ok"
        else
          line+=" $(label "$exe") FAILED ($log)"
          failed=1
        fi
      done
      echo "$line"
    done
  done
done
python3 "$root/perftest/common/oshmem_table.py" --jsonl "$jsonl" --out "$logs/summary.json" || failed=1
[ -n "$json" ] && cat "$jsonl" >> "$json"
exit $failed
