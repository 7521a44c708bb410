#!/usr/bin/env bash
# Runs DeepSeek TileKernels' own MoE tests (tests/moe/test_*.py) with TileKernels' 12 tile_kernels.moe
# functions replaced by tshmem_moe's (perftest/moe/tilekernels_compat.py), and prints per test file the
# passed / failed / skipped / error counts. GPU host only.
#   scripts/tilekernels-tests.sh TK_SRC CARRY [LOG_DIR]
#     TK_SRC   a TileKernels checkout (tile_kernels/, tests/); never part of this repository
#     CARRY    a folder holding tilelang-site.tar.xz (tilelang 0.1.15 and the dependencies the GPU host lacks,
#              unpacked wheels; scripts/tilekernels-prepare.sh makes it)
#     LOG_DIR  where the per-file logs and JUnit XML go (default: $build/tilekernels-tests)
# Environment: TSHMEM_MOE_SITE (tshmem_moe installed there by scripts/python-test.sh; default build/python-site),
# TK_TEST_JOBS (pytest-xdist workers on the GPU, default 4; 0 = no xdist), TSHMEM_TK_IMPL=tilekernels (run
# TileKernels' own kernels instead, to check the harness), TK_TEST_ARGS (more pytest arguments, e.g. -x or
# -k), TK_FILE_TIMEOUT (seconds per file, default 400) and TK_BUDGET_S (seconds for all files, default 420, so
# that the table prints inside a 10-minute GPU command): a file cut off shows as 'timeout', one not started
# as 'not run'.
# Benchmark tests are marked `benchmark` and skipped unless TK_TEST_ARGS=--run-benchmark.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tk=$(cd "${1:?TileKernels checkout}" && pwd)
carry=$(cd "${2:?carry folder with tilelang-site.tar.xz}" && pwd)
logs=${3:-$root/build/tilekernels-tests}
mkdir -p "$logs"
rm -f "$logs"/seconds.txt "$logs"/test_*.xml
tsite=${TSHMEM_MOE_SITE:-$root/build/python-site}

site=$(bash "$root/scripts/tilekernels-env.sh" "$carry") || exit 1
export PYTHONPATH="$site:$tsite:$tk:$root/perftest/moe${PYTHONPATH:+:$PYTHONPATH}"
export TSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -c 'import tilelang, tile_kernels, tshmem_moe; print("tilelang", tilelang.__version__, "tshmem_moe", tshmem_moe.__file__)' \
  || { echo "tilekernels-tests: imports failed (see above)"; exit 1; }

jobs=${TK_TEST_JOBS:-4}
xdist=()
[ "$jobs" != 0 ] && xdist=(-n "$jobs")
cd "$tk"  # TileKernels' conftest loads its plugins as the package `tests`
deadline=$(( $(date +%s) + ${TK_BUDGET_S:-420} ))
for f in tests/moe/test_*.py; do
  name=$(basename "$f" .py)
  start=$(date +%s)
  left=$(( deadline - start ))
  limit=${TK_FILE_TIMEOUT:-400}
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    echo "$name 0" >> "$logs/seconds.txt"
    echo "$name: not run (TK_BUDGET_S spent)"
    continue
  fi
  # shellcheck disable=SC2086
  timeout "$limit" python3 -m pytest -p tilekernels_compat -p no:cacheprovider -p no:benchmark -q -rfEs \
    "${xdist[@]}" "$f" --junitxml="$logs/$name.xml" ${TK_TEST_ARGS:-} > "$logs/$name.log" 2>&1
  echo "$name $(( $(date +%s) - start ))" >> "$logs/seconds.txt"
  echo "$name: $(tail -1 "$logs/$name.log")"
done
python3 - "$logs" <<'PY'
import glob, os, sys
import xml.etree.ElementTree as ET
logs = sys.argv[1]
secs = dict(l.split() for l in open(os.path.join(logs, 'seconds.txt')))
rows, tot = [], [0, 0, 0, 0]
for name in sorted(secs):
    x = os.path.join(logs, name + '.xml')
    if not os.path.exists(x):
        what = 'not run (budget spent)' if secs[name] == '0' else f'timeout or crash (see {name}.log)'
        rows.append(f'| {name}.py | {what} | | | | {secs[name]} |')
        tot[3] += 1
        continue
    s = ET.parse(x).getroot()
    s = s if s.tag == 'testsuite' else s.find('testsuite')
    n, f, e, k = (int(s.get(a, 0)) for a in ('tests', 'failures', 'errors', 'skipped'))
    r = [n - f - e - k, f, k, e]
    tot = [a + b for a, b in zip(tot, r)]
    rows.append(f'| {name}.py | {r[0]} | {r[1]} | {r[2]} | {r[3]} | {secs.get(name, "?")} |')
impl = os.environ.get('TSHMEM_TK_IMPL', 'tshmem')
print(f'\nTileKernels tests/moe against {"tshmem_moe" if impl == "tshmem" else "TileKernels itself"}:')
print('| file | passed | failed | skipped | errors | s |\n| --- | ---: | ---: | ---: | ---: | ---: |')
print('\n'.join(rows))
print(f'| total | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} | |')
print(f'{tot[0]} passed, {tot[1] + tot[3]} failed, {tot[2]} skipped')
sys.exit(1 if tot[1] + tot[3] else 0)
PY
