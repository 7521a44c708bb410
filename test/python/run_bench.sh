#!/usr/bin/env bash
# perftest/python/bench.py under mpirun: run_bench.sh <build> <np> [bench arguments] (a smoke run in ctest).
set -euo pipefail
build=$1 np=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
export PYTHONPATH="$build/python-site${PYTHONPATH:+:$PYTHONPATH}"
cd "$build"
exec mpirun "${extra[@]}" --oversubscribe --bind-to none --mca btl "${OMPI_MCA_btl:-self,vader}" -np "$np" \
  "$(cat "$build/python-interpreter")" "$root/perftest/python/bench.py" "$@"
