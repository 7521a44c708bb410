#!/usr/bin/env bash
# The host path side by side with Open MPI's OpenSHMEM: one OpenSHMEM program (perftest/host/host_shmem.cc) built
# against tshmem, tshmem_nocheck and OSHMEM, run in alternating rounds at each PE count, then one table (size,
# tshmem, OSHMEM, ratio of times) with each library's best round per row.
#   scripts/oshmem-compare.sh [--np "2 4"] [--rounds 3] [--heaps "default 1G 8G"] [--backend shm] [--init-only]
#                             [--json FILE] [-- host_shmem options, e.g. -e 1M -n 200]
# tshmem runs on the shm backend unless --backend names another (vmm, ipc: a GPU heap; TSHMEM_ALLOW_SHARED_GPU is
# passed on, for several PEs on one GPU); both libraries get the same symmetric heap for the full runs
# (TSHMEM_SYMMETRIC_SIZE, default 256M, is also SHMEM_SYMMETRIC_SIZE). Then init alone, in the same alternating
# rounds, at each heap of --heaps (--init-only: init alone, no full runs): "default" sets neither variable (each
# library's own default), a size sets both.
# Without the twin (no oshcc/shmem.h when configured) it prints why and exits 0 after the tshmem rows. Logs:
# <build>/oshmem-compare/.
# The table uses only the rounds (at a PE count) in which every library ran to the end, and says which. A round
# of OSHMEM that does not finish is a finding about the peer, printed with its log's last lines; the exit status
# is 1 only when a tshmem run or the table fails. Each run is bounded (OSHMEM_COMPARE_TIMEOUT_S, default 180 s),
# and what a run leaves in /dev/shm is reported and removed before the next one.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}
nps="2 4" rounds=3 json="" heaps="default 1G 8G" backend=shm init_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --np) nps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --heaps) heaps=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --init-only) init_only=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
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
backend_env=(-x TSHMEM_MEM_BACKEND="$backend")
[ "$backend" != shm ] && backend_env+=(-x TSHMEM_ALLOW_SHARED_GPU="${TSHMEM_ALLOW_SHARED_GPU:-0}")
env_tshmem=("${backend_env[@]}" -x TSHMEM_SYMMETRIC_SIZE="$heap" -x TSHMEM_DISABLE_NVLS=1 -x TSHMEM_PERF_HEAP="$heap")
# Open MPI 4.1's osc/rdma frees memory at MPI_Finalize through a hook into the OpenSHMEM layer that is already
# unloaded (SIGSEGV at the end of every OSHMEM program here); one-sided MPI is no part of the twin, so it is off.
env_oshmem=(-x SHMEM_SYMMETRIC_SIZE="$heap" -x OMPI_MCA_osc=^rdma -x TSHMEM_PERF_HEAP="$heap")
# The comparison is of the host path: UCX under OSHMEM gets the host transports only, unless the caller chose.
# A UCX built with CUDA (cuda_copy, cuda_ipc, gdr_copy) would otherwise make a CUDA context in every PE at
# ucp_init, on a GPU the PEs share, and register the heap with the GPU: neither is part of the twin.
env_oshmem+=(-x UCX_TLS="${UCX_TLS:-self,sm,tcp}")
timeout_s=${OSHMEM_COMPARE_TIMEOUT_S:-180}

# /dev/shm between runs: names a run leaves behind (Open MPI's vader segments, UCX's, tshmem's) that no live
# process maps are removed, so one run's leftovers cannot fill the next run's tmpfs.
shm_names() { find /dev/shm -maxdepth 1 -mindepth 1 -user "$(id -u)" -printf '%f\n' 2>/dev/null | sort; }
shm_free_mib() { df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }'; }
clean_leftovers() {  # <names before the run> -> prints what it removed
  local before=$1 name left=()
  while read -r name; do
    [ -n "$name" ] || continue
    case "$name" in
      vader_segment.* | ucx_* | sm_segment.* | shmem_* | tshmem.*) ;;
      *) continue ;;
    esac
    if ! grep -qs "/dev/shm/$name" /proc/[0-9]*/maps; then
      rm -f "/dev/shm/$name" && left+=("$name")
    fi
  done < <(comm -13 <(printf '%s\n' "$before") <(shm_names))
  [ ${#left[@]} -gt 0 ] && echo "left in /dev/shm and removed: ${left[*]}"
}

label() {  # tshmem_host_shmem -> tshmem, tshmem_host_shmem_nocheck -> tshmem[nocheck], oshmem_host_shmem -> oshmem
  case "$1" in
    *_nocheck) echo "${1%%_*}[nocheck]" ;;
    *) echo "${1%%_*}" ;;
  esac
}

# A run that did not end well, added to $line: OSHMEM's is a finding about the peer, with its log's last lines
# (`more`: what else the finding says), tshmem's a failure.
run_failed() {  # <where> <exe> <why, or ""> <log> [<more>]
  local where=$1 exe=$2 why=$3 log=$4 more=${5:-}
  if [ "$exe" = oshmem_host_shmem ]; then
    line+=" $(label "$exe") did not finish${why:+ ($why)}"
    findings+=("$where: OSHMEM did not finish${why:+ ($why$more)}; the last lines of $log:"$'\n'"$(tail -n 15 "$log" | sed 's/^/    /')")
  else
    line+=" $(label "$exe") FAILED (${why:+$why, }$log)"
    tshmem_failed=1
  fi
}

tshmem_failed=0 findings=() complete=() tshmem_ran=()
full_rounds=$rounds
[ "$init_only" = 1 ] && full_rounds=0
for round in $(seq 1 "$full_rounds"); do
  order=("${variants[@]}")
  if [ $((round % 2)) = 0 ]; then  # every other round backwards: a slow moment does not land on one side only
    order=()
    for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[$i]}"); done
  fi
  for np in $nps; do
    extra=()
    [ "$np" -gt "$(nproc)" ] && extra+=(--oversubscribe)
    line="round $round/$rounds, $np PEs:" all_ran=1
    for exe in "${order[@]}"; do
      envs=("${env_tshmem[@]}")
      [ "$exe" = oshmem_host_shmem ] && envs=("${env_oshmem[@]}")
      run_id="$exe-np$np-round$round"
      log="$logs/$run_id.log"
      : > "$logs/$run_id.jsonl"
      before=$(shm_names) free_mib=$(shm_free_mib)
      timeout -k 10 "$timeout_s" "${launch[@]}" "${extra[@]}" -np "$np" "${envs[@]}" "$dir/$exe" \
        --json "$logs/$run_id.jsonl" "${bench_args[@]}" > "$log" 2>&1
      rc=$?
      leftovers=$(clean_leftovers "$before")
      [ -n "$leftovers" ] && echo "$leftovers" >> "$log"
      if [ $rc = 0 ]; then
        line+=" $(label "$exe") ok"
        [ "$exe" != oshmem_host_shmem ] && tshmem_ran+=("$logs/$run_id.jsonl")
        continue
      fi
      all_ran=0
      why="exit status $rc"
      [ $rc = 124 ] && why="stopped after ${timeout_s} s"
      run_failed "round $round, $np PEs" "$exe" "$why" "$log" \
        "; /dev/shm had ${free_mib:-?} MiB free before it${leftovers:+; $leftovers}"
    done
    echo "$line"
    [ $all_ran = 1 ] && complete+=("$round:$np") && cat "$logs"/*-np"$np"-round"$round".jsonl >> "$jsonl"
  done
done
[ "$init_only" = 1 ] || for np in $nps; do
  used=()
  for c in "${complete[@]}"; do [ "${c#*:}" = "$np" ] && used+=("${c%%:*}"); done
  if [ ${#used[@]} = "$rounds" ]; then
    echo "$np PEs: the table uses all $rounds rounds"
  elif [ ${#used[@]} -gt 0 ]; then
    echo "$np PEs: the table uses the rounds in which every library ran: ${used[*]} of $rounds"
  else
    echo "$np PEs: no round in which every library ran: tshmem's rows alone at $np PEs"
    for f in "${tshmem_ran[@]}"; do [[ $f == *-np$np-round* ]] && cat "$f" >> "$jsonl"; done
  fi
done
# Init alone at each heap size (host_shmem stops after its init row with TSHMEM_PERF_INIT_ONLY); an OSHMEM run
# that does not finish is a finding, as above.
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
          envs+=(-x OMPI_MCA_osc=^rdma -x UCX_TLS="${UCX_TLS:-self,sm,tcp}")
          [ "$size" != default ] && envs+=(-x SHMEM_SYMMETRIC_SIZE="$size")
        else
          envs+=("${backend_env[@]}" -x TSHMEM_DISABLE_NVLS=1)
          [ "$size" != default ] && envs+=(-x TSHMEM_SYMMETRIC_SIZE="$size")
        fi
        log="$logs/$exe-init-$size-np$np-round$round.log"
        # "default": neither library gets a heap size, not even one this shell holds.
        if timeout -k 10 "$timeout_s" env -u TSHMEM_SYMMETRIC_SIZE -u SHMEM_SYMMETRIC_SIZE "${launch[@]}" "${extra[@]}" \
          -np "$np" "${envs[@]}" "$dir/$exe" --json "$jsonl" > "$log" 2>&1; then
          line+=" $(label "$exe") ok"
        elif [ "$exe" = tshmem_host_shmem ] && grep -q "PEs need .* together (make" "$log"; then
          line+=" $(label "$exe") refused: the node's heaps do not fit $(df -Ph /dev/shm | awk 'NR == 2 { print $4 }') free in /dev/shm"
        else
          run_failed "init round $round, heap $size, $np PEs" "$exe" "" "$log"
        fi
      done
      echo "$line"
    done
  done
done
for f in "${findings[@]}"; do echo "finding about the peer library: $f"; done
table_rc=0
if [ -s "$jsonl" ]; then
  python3 "$root/perftest/common/oshmem_table.py" --backend "$backend" --jsonl "$jsonl" --out "$logs/summary.json" || table_rc=1
elif [ ${#findings[@]} = 0 ]; then
  table_rc=1
  echo "oshmem-compare.sh: no rows: no run of tshmem finished" >&2
fi
[ -n "$json" ] && cat "$jsonl" >> "$json"
[ $tshmem_failed = 0 ] && [ $table_rc = 0 ]
