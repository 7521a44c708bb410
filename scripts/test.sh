#!/usr/bin/env bash
# Installs what is missing (when run as root), configures, builds with all cores and runs every test.
#   scripts/test.sh                 build in ./build and run ctest
#   TSHMEM_BUILD_DIR=dir scripts/test.sh     another build folder
#   TSHMEM_CMAKE_ARGS="-D..." scripts/test.sh   extra configure options
#   TSHMEM_CUDA_ARCH=100 scripts/test.sh     GPU architectures to build for (default: the GPUs here, else 90)
# The builds are CMakePresets.json's: ci (in the build folder), tsan (<build>-tsan) and, where nvcc is found,
# host-only (-DTSHMEM_ENABLE_CUDA=OFF, in <build>-no-cuda), built and tested for what it changes. Tests that need a
# GPU skip with a reason on machines without one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSHMEM_BUILD_DIR:-$root/build}

need=(cmake ninja-build pkg-config g++ libopenmpi-dev openmpi-bin libhwloc-dev libgtest-dev libbenchmark-dev ccache
      clang-format python3 slurm-wlm munge libucx-dev elfutils)
missing=()
for pkg in "${need[@]}"; do [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" == *"ok installed"* ]] || missing+=("$pkg"); done
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
cmake -S "$root" --preset ci -B "$build" "${cmake_extra[@]}" ${TSHMEM_CMAKE_ARGS:-}
echo "== build (-j$jobs)"
cmake --build "$build" -j "$jobs"
echo "== format check"
bash "$root/scripts/check-format.sh"
echo "== test"
export TSHMEM_DISABLE_NVLS=1  # multicast stays off wherever tests run
# The Python packages (label python) are ctest entries too: scripts/python-test.sh builds them as a fixture.
(cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 600)

# ThreadSanitizer: the threading tests (TSHMEM_THREAD_MULTIPLE, calls racing finalize) once more, in a small
# host-only build of just the library and that test. TSHMEM_SKIP_TSAN=1 leaves it out.
if [ "${TSHMEM_SKIP_TSAN:-0}" != 1 ]; then
  tsan_build="$build-tsan"
  echo "== ThreadSanitizer ($tsan_build)"
  mkdir -p "$tsan_build"
  # The tsan preset: host only, -fsanitize=thread, -Wno-tsan (CMakePresets.json says why).
  cmake -S "$root" --preset tsan -B "$tsan_build" > "$tsan_build/configure.log" 2>&1 \
    || { tail -20 "$tsan_build/configure.log"; exit 1; }
  cmake --build "$tsan_build" -j "$jobs" --target tshmem_thread_tests
  # A report makes the process exit non-zero, which fails the test.
  (cd "$tsan_build" && TSAN_OPTIONS="exitcode=66 halt_on_error=1" ctest --output-on-failure -R '^tshmem_thread_tests_np')
fi

# CUDA is optional: when this build had it, the host-only build (what a machine without the toolkit gets)
# is built and tested as well, so it cannot rot unseen. TSHMEM_SKIP_NO_CUDA_BUILD=1 leaves it out.
if command -v nvcc >/dev/null && [ "${TSHMEM_SKIP_NO_CUDA_BUILD:-0}" != 1 ]; then
  host_build="$build-no-cuda"
  echo "== the same without CUDA ($host_build)"
  mkdir -p "$host_build"
  # shellcheck disable=SC2086
  cmake -S "$root" --preset host-only -B "$host_build" ${TSHMEM_CMAKE_ARGS:-} > "$host_build/configure.log" 2>&1 \
    || { tail -20 "$host_build/configure.log"; exit 1; }
  cmake --build "$host_build" -j "$jobs"
  # This pass tests what the build without CUDA changes; kept, each for what differs from the build above:
  #   label unit        the library's parts as this build compiles them (tshmem-info: no CUDA; include rules)
  #   the MPI tests     the host API at 1, 2 and 4 PEs of a library without CUDA (tshmem_mpi_tests, collectives,
  #                     teams, registration, threads, init failures with the GPU backends refused as absent, the
  #                     off-node path once per transport, no residue after a kill); auto is shm here, its heap
  #                     reserved while MPI starts
  #   label install     the installed package without CUDA (no device library; its CMake and pkg-config files)
  #   label python      the packages built against this library (no tshmem_moe), in the environment made above
  #   label perftest    the host benchmarks linked to this library
  # Left out, as they ran above: each sets TSHMEM_MEM_BACKEND=shm, on which init, the heap and the off-node proxy
  # run the same code in both builds (no GPU is chosen for shm, and the proxy's memory is host memory: init.cc),
  # and checks something of that code or of a script, not of the build:
  host_only_skip=(
    'slurm'                                 # the SLURM job scripts: launchers and job scripts
    '^tshmem_fault_'                        # a PE stopped or killed after init, on each transport (3-8 s each)
    '^tshmem_offnode_bound'                 # the proxy's bounds on a stopped peer (20-25 s each)
    '^tshmem_shm_residue_kill_at_(env|backend|heap-|peer-table|reserved-region|ready)'  # a kill at each step of init
    '^tshmem_proxy_'                        # the proxy's transports (offnode_host stays: one per transport)
    '^tshmem_hostile_uid_'                  # the shm segments' owners and modes
    '^perftest_oshmem_compare_peer_fails$'  # oshmem-compare.sh's handling of a failing peer
    '^perftest_offnode_perf_host_rows$'     # offnode-perf.sh's table
    '^perftest_smoke_host_fanin_off_node$'  # the proxy under fan-in
  )
  skip_re=$(IFS='|'; echo "${host_only_skip[*]}")
  (cd "$host_build" &&
    TSHMEM_PY_VENV="$build/python-venv" ctest --output-on-failure -j "$jobs" --timeout 600 -E "$skip_re")
fi
