#!/usr/bin/env bash
# Builds the tshmem_moe Python package (python/) with pip and runs its tests.
#   scripts/python-test.sh [build-folder]     default ./build; the package goes to <build>/python-site
# Uses python3 as it is when it already has the build and test tools (the GPU host: torch, numpy, nanobind,
# scikit-build-core and pytest are installed there and no registry is reachable); otherwise makes a virtual
# environment in <build>/python-venv and installs numpy, pytest, nanobind and scikit-build-core from PyPI
# (CI: no torch there, so the tests run the library's CPU reference through numpy arrays).
# Extra pytest arguments: TSHMEM_PYTEST_ARGS="-k cuda -s"; TSHMEM_PY_BUILD_ONLY=1 builds without testing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:-$root/build}" && cd "${1:-$root/build}" && pwd)
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if ! command -v nvcc >/dev/null; then
  echo "== python package: skipped (no nvcc: the extension builds the CUDA kernels)"
  exit 0
fi

py=python3
if ! "$py" -c 'import nanobind, scikit_build_core, numpy, pytest' 2>/dev/null; then
  venv="$build/python-venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pytest nanobind scikit-build-core
  py="$venv/bin/python"
fi

site="$build/python-site"
echo "== python package: build ($py, into $site)"
start=$(date +%s)
# A fixed build folder lets a second run reuse the CMake build; ccache (if present) serves a fresh one.
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --upgrade --target "$site" \
  --config-settings=build-dir="$build/python-build" "$root/python"
echo "== python package: built in $(( $(date +%s) - start )) s"
[ "${TSHMEM_PY_BUILD_ONLY:-0}" = 1 ] && exit 0
cd "$build"  # not the source tree: the installed package must be the one imported
# shellcheck disable=SC2086
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -q -p no:cacheprovider "$root/python/tests" \
  ${TSHMEM_PYTEST_ARGS:-}
