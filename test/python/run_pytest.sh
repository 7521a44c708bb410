#!/usr/bin/env bash
# The tshmem Python tests under mpirun: run_pytest.sh <build> <np> [pytest arguments]
# Every rank runs the same tests in the same order (their collectives meet); each rank's output goes to a log, and
# rank 0's log is printed, with every failing rank's. TSHMEM_PYTEST_LIMIT=<seconds> bounds the mpirun (its process
# group is signalled, then killed 10 s later); the logs are printed either way. Needs the packages that scripts/python-test.sh built into
# <build>/python-site and the interpreter it recorded.
set -uo pipefail
build=$1 np=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$(cat "$build/python-interpreter")
logs=$(mktemp -d "${TMPDIR:-/tmp}/tshmem-pytest-logs.XXXXXX")
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
export PYTHONPATH="$build/python-site${PYTHONPATH:+:$PYTHONPATH}"
export TSHMEM_MEM_BACKEND=${TSHMEM_MEM_BACKEND:-shm} TSHMEM_DISABLE_NVLS=1
cd "$build" || exit 1  # not the source tree: the installed package must be the one imported
limit=()
[ -n "${TSHMEM_PYTEST_LIMIT:-}" ] && limit=(timeout -k 10 "$TSHMEM_PYTEST_LIMIT")
# shellcheck disable=SC2086,SC2016
"${limit[@]}" mpirun "${extra[@]}" --oversubscribe --bind-to none --mca btl "${OMPI_MCA_btl:-self,vader}" -np "$np" \
  bash -c '"$0" -m pytest -q -p no:cacheprovider --color=no "$@" > "'"$logs"'/rank.$OMPI_COMM_WORLD_RANK.log" 2>&1' \
  "$py" "$root/python/tests/tshmem" ${TSHMEM_PYTEST_ARGS:-} "$@"
rc=$?
[ "$rc" = 124 ] && echo "run limit: mpirun stopped after TSHMEM_PYTEST_LIMIT = ${TSHMEM_PYTEST_LIMIT} s"
for ((r = 0; r < np; ++r)); do
  log="$logs/rank.$r.log"
  if [ "$r" = 0 ] || ! grep -qE '^[0-9]+ passed|no tests ran' "$log" || grep -qE '(failed|error)' <(tail -1 "$log"); then
    echo "---- PE $r of $np"
    cat "$log"
  fi
done
rm -rf "$logs"
exit $rc
