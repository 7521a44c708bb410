#!/usr/bin/env bash
# Submits the SLURM job scripts to a real SLURM: a private one-node cluster (this machine) with its own
# munged, slurmctld and slurmd, all under a temporary folder and private ports, stopped at the end.
# The jobs run on the shm backend (no GPU needed). Skips (exit 77, with the reason) where it cannot run.
#   slurm_test.sh <build dir> <source dir>
set -uo pipefail
build=$1 src=$2
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to start slurmd (run scripts/test.sh as root)"
for tool in munged slurmctld slurmd sbatch sinfo scontrol; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/test.sh installs slurm-wlm and munge as root)"
done
[ -x "$build/perftest/host/tshmem_host_bw" ] || skip "perftest not built in $build"

work=$(mktemp -d /tmp/tshmem-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  sleep 1
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for log in "$work"/*.log "$work"/job-*.out; do [ -f "$log" ] && { echo "----- $log"; tail -40 "$log"; }; done
  exit 1
}
# Bounded wait: wait_for <seconds> <what> <command...>
wait_for() {
  local limit=$1 what=$2; shift 2
  for _ in $(seq 1 "$limit"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  fail "timed out after ${limit}s waiting for $what"
}

# munge: a private key and socket.
mkdir -p "$work/munge"
chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.sock" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed" \
  || fail "munged did not start"
wait_for 10 "munged's pid file" test -s "$work/munge/munged.pid"
pids+=("$(cat "$work/munge/munged.pid")")

# slurm.conf: one node (this host, its CPUs), private ports, state under $work. MinJobAge=5: `sbatch --wait` polls
# the job every 2 s, then every 8 s and 32 s while MinJobAge is 300 (its default) or more; a finished job's record
# stays 5 s, longer than one 2 s poll (sbatch reads the job's exit code from it).
host=$(hostname -s)
cpus=$(nproc)
port=$(( 20000 + RANDOM % 20000 ))
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<CONF
ClusterName=tshmemci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=5
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$work/slurm.conf
setsid slurmctld -D -i > "$work/slurmctld.out" 2>&1 &
pids+=($!)
setsid slurmd -D > "$work/slurmd.out" 2>&1 &
pids+=($!)
wait_for 60 "the node to become idle" sh -c "sinfo -h -o '%T' | grep -qE '^idle'"
echo "slurm up: node $host, $cpus CPUs, port $port"

# tshmem-single-node.sbatch runs every device benchmark of the build folder, and without a GPU each only says it
# skipped (each has its own smoke test): the jobs here see a folder of links to the host benchmarks and to one
# device benchmark, whose skip line the single-node jobs must print.
view=$work/build
mkdir -p "$view/perftest/device" "$view/perftest/host"
ln -s "$build"/perftest/host/tshmem_host_* "$view/perftest/host/"
device_bench=""
for bench in "$build"/perftest/device/tshmem_*; do
  [ -x "$bench" ] && { device_bench=$(basename "$bench"); ln -s "$bench" "$view/perftest/device/"; break; }
done

# The job scripts as users submit them, with the node's shape instead of 8 GPUs per node, on shm.
export TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=64M TSHMEM_DISABLE_NVLS=1 TSHMEM_BUILD_DIR=$view
export TSHMEM_JOB_MAX_SIZE=1M OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
ntasks=2
common=(--wait --chdir="$work" --ntasks-per-node=$ntasks --cpus-per-task=1 --gpus-per-node=0 --time=5)
for job in single-node:mpirun multi-node:mpirun single-node:srun; do
  script=tshmem-${job%%:*}.sbatch launch=${job##*:}
  nodes=(); [ "$script" = tshmem-multi-node.sbatch ] && nodes=(--nodes=1)
  out="$work/job-${job/:/-}.out"
  export TSHMEM_LAUNCH=$launch
  timeout 240 sbatch "${common[@]}" "${nodes[@]}" --output="$out" "$src/scripts/slurm/$script" > "$work/sbatch.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail "sbatch --wait $script returned $rc"
  grep -q "done" "$out" || fail "$script: no 'done' line"
  grep -qE "^1048576 +get" "$out" || fail "$script: the perftest table is missing"
  if [ "$script" = tshmem-single-node.sbatch ] && [ -n "$device_bench" ]; then
    grep -q "^${device_bench#tshmem_} (tshmem)" "$out" || fail "$script: no line of $device_bench"
  fi
  echo "PASS: $script ($launch) ran $ntasks PEs under SLURM ($(grep -o "job [0-9]*" "$out" | head -1))"
done

# The launcher inside an allocation prints what it runs.
dry=$(timeout 60 salloc -n 2 "$src/scripts/tshmemrun" --dry-run -- /bin/true 2>/dev/null)
grep -q "^srun " <<< "$dry" || fail "tshmemrun inside an allocation should use srun, printed: $dry"
echo "PASS: slurm job scripts and launcher"
