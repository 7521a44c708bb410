#!/usr/bin/env bash
# Installs what is missing (when run as root), configures, builds with all cores and runs every test.
#   scripts/test.sh                 build in ./build and run ctest
#   TSHMEM_BUILD_DIR=dir scripts/test.sh     another build folder
#   TSHMEM_CMAKE_ARGS="-D..." scripts/test.sh   extra configure options
# Tests that need a GPU skip with a reason on machines without one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}

need=(cmake ninja-build pkg-config g++ libopenmpi-dev openmpi-bin libhwloc-dev libgtest-dev libbenchmark-dev ccache
      clang-format python3 slurm-wlm munge)
missing=()
for pkg in "${need[@]}"; do dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "missing packages: ${missing[*]} (run as root to install them, or install them yourself)" >&2
    exit 1
  fi
fi

# nvcc is optional: the GPU backends and device code are built when it is found.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

# cuobjdump (for the multimem SASS proof) is not in every toolkit install: take NVIDIA's wheels from PyPI.
cmake_extra=()
if command -v nvcc >/dev/null && ! command -v cuobjdump >/dev/null && [ ! -x /usr/local/cuda/bin/cuobjdump ]; then
  tools=${TSHMEM_TOOLS_DIR:-$HOME/.cache/tshmem-tools}
  if [ ! -x "$tools/nvidia/cu13/bin/cuobjdump" ]; then
    echo "== installing cuobjdump + nvdisasm (PyPI wheels) into $tools"
    python3 -m pip install -q --disable-pip-version-check --target "$tools" \
      nvidia-cuda-cuobjdump==13.2.86 'nvidia-cuda-nvdisasm==13.2.*' || echo "(no cuobjdump: the SASS test will skip)"
  fi
  [ -x "$tools/nvidia/cu13/bin/cuobjdump" ] && cmake_extra+=(-DTSHMEM_CUOBJDUMP="$tools/nvidia/cu13/bin/cuobjdump")
fi

jobs=$(nproc)
echo "== configure ($build)"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTSHMEM_WERROR=ON "${cmake_extra[@]}" ${TSHMEM_CMAKE_ARGS:-}
echo "== build (-j$jobs)"
cmake --build "$build" -j "$jobs"
echo "== format check"
bash "$root/scripts/check-format.sh"
echo "== test"
export TSHMEM_DISABLE_NVLS=1  # multicast stays off wherever tests run
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 600
