#!/usr/bin/env bash
# scripts/tshmemrun exports CUDA_MODULE_LOADING=EAGER to a job over several nodes unless it is set, and to no other.
#   tshmemrun_test.sh <repository>
set -uo pipefail
run=$1/scripts/tshmemrun
fails=0
expect() {  # expect <what> <present|absent> <text> -- env...
  local what=$1 want=$2 text=$3; shift 4
  local out
  out=$(env -u SLURM_JOB_ID -u CUDA_MODULE_LOADING -u TSHMEM_DEBUG_NODE_SIZE -u OMPI_MCA_orte_default_hostfile \
        -u PBS_NODEFILE "$@" "$run" --dry-run -np 2 -- /bin/true)
  if { [ "$want" = present ] && [[ "$out" != *"$text"* ]]; } || { [ "$want" = absent ] && [[ "$out" == *"$text"* ]]; }; then
    echo "FAIL: $what: expected '$text' $want in: $out"
    fails=$((fails + 1))
  else
    echo "ok: $what"
  fi
}
hosts=$(mktemp)
printf 'nodeA slots=2\nnodeB slots=2\n' > "$hosts"
one=$(mktemp)
printf 'nodeA slots=2\nnodeA\n' > "$one"
expect "one node" absent CUDA_MODULE_LOADING --
expect "nodes made by TSHMEM_DEBUG_NODE_SIZE" present "-x CUDA_MODULE_LOADING=EAGER" -- TSHMEM_DEBUG_NODE_SIZE=1
expect "a hostfile of 2 hosts" present "-x CUDA_MODULE_LOADING=EAGER" -- OMPI_MCA_orte_default_hostfile="$hosts"
expect "a hostfile of 1 host" absent CUDA_MODULE_LOADING -- OMPI_MCA_orte_default_hostfile="$one"
expect "the user's choice is kept" present "-x CUDA_MODULE_LOADING=LAZY" -- TSHMEM_DEBUG_NODE_SIZE=1 CUDA_MODULE_LOADING=LAZY
rm -f "$hosts" "$one"
[ "$fails" = 0 ] && echo "PASS" || exit 1
