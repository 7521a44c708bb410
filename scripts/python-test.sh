#!/usr/bin/env bash
# Builds the Python packages (python/: tshmem and, where nvcc is found, tshmem_moe) with pip and runs their tests.
#   scripts/python-test.sh [build-folder]     default ./build; the packages go to <build>/python-site
# libtshmem: the build folder's own when it holds one (src/libtshmem.so: no second compile), else the package
# builds it. Tests: tshmem_moe's (src/moe/python/tests), then tshmem's (python/tests/tshmem) under mpirun at each PE
# count of TSHMEM_PY_NP (default "1 2"), on the backend TSHMEM_MEM_BACKEND names (default shm).
# Uses python3 as it is when it already has the build and test tools (a CUDA image: torch, numpy, nanobind,
# scikit-build-core and pytest are installed there and no registry is reachable); otherwise makes a virtual
# environment in <build>/python-venv (or $TSHMEM_PY_VENV) and installs numpy, pytest, nanobind and scikit-build-core
# from PyPI (CI: no torch there, so the tests run on numpy arrays). The interpreter is written to <build>/python-interpreter
# for ctest's entries (test/python).
# TSHMEM_PY_BUILD_ONLY=1 builds without testing; TSHMEM_PY_MOE=OFF leaves tshmem_moe's CUDA kernels out of a CUDA
# build; extra pytest arguments: TSHMEM_PYTEST_ARGS="-k put -s".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:-$root/build}" && cd "${1:-$root/build}" && pwd)
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

py=python3
if ! "$py" -c 'import nanobind, scikit_build_core, numpy, pytest' 2>/dev/null; then
  venv="${TSHMEM_PY_VENV:-$build/python-venv}"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pytest nanobind scikit-build-core
  py="$venv/bin/python"
fi
command -v "$py" >/dev/null && py=$(command -v "$py")
echo "$py" > "$build/python-interpreter"

defines=()
if [ -e "$build/src/libtshmem.so" ]; then
  defines+=(--config-settings=cmake.define.TSHMEM_PREBUILT_DIR="$build")
  # tshmem_moe only beside a CUDA build of tshmem (the host-only build's packages have no CUDA to test). Said
  # either way: the package's CMake cache keeps the last value.
  moe=${TSHMEM_PY_MOE:-ON}
  grep -q '^TSHMEM_ENABLE_CUDA:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null && moe=OFF
  defines+=("--config-settings=cmake.define.TSHMEM_PYTHON_MOE=$moe")
fi
site="$build/python-site"
echo "== python packages: build ($py, into $site${defines:+, libtshmem of $build})"
start=$(date +%s)
# A fixed build folder lets a second run reuse the CMake build; ccache (if present) serves a fresh one.
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --upgrade --target "$site" \
  --config-settings=build-dir="$build/python-build" "${defines[@]}" "$root/python"
echo "== python packages: built in $(( $(date +%s) - start )) s"
[ "${TSHMEM_PY_BUILD_ONLY:-0}" = 1 ] && exit 0

cd "$build"  # not the source tree: the installed packages must be the ones imported
if compgen -G "$site/tshmem_moe/_C*.so" >/dev/null; then
  echo "== tshmem_moe tests"
  # shellcheck disable=SC2086
  PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -q -p no:cacheprovider "$root/src/moe/python/tests" \
    ${TSHMEM_PYTEST_ARGS:-}
fi
for np in ${TSHMEM_PY_NP:-1 2}; do
  echo "== tshmem tests, $np PE(s)"
  TSHMEM_PYTEST_ARGS="${TSHMEM_PYTEST_ARGS:-}" "$root/test/python/run_pytest.sh" "$build" "$np"
done
