#!/usr/bin/env bash
# The UCX transport on a GPU host, in one bounded command: builds build-gpu against the UCX of an unpacked
# libucx wheel (UCX with its CUDA transports: `pip download libucx-cu13`, unzipped), then runs the off-node tests
# and benchmarks on both transports. Logs go to $OUT/ucx-gpu-check (else ./ucx-gpu-check).
#   scripts/ucx-gpu-check.sh WHEEL [--budget SECONDS] [--only STAGES] [--rounds N]
#   WHEEL           the wheel file (libucx_cu13-*.whl, 42 MB), a folder holding it, or the unpacked wheel
#                   (WHEEL/libucx/{include,lib,bin} and WHEEL/libucx_cu13.libs: 147 MB); a wheel file is unpacked
#                   into build-gpu/ucx-wheel once
#   --budget S      stop starting stages once S seconds have passed, and bound each by what is left (default 560);
#                   stages done are recorded in build-gpu/ucx-gpu-check.done, so the same command run again goes on
#                   where the budget stopped (delete that file to start over)
#   --only STAGES   a comma list of: build, info, ucx-tcp, mpi, arrangements, ucx-default, python, cpu, perf
#   --rounds N      the perf stage's rounds, the transports alternating within each (default 3)
# Stages, in order:
#   build         configure build-gpu (preset gpu, -DTSHMEM_UCX=ON) against the wheel's UCX; build what the off-node
#                 tests and benchmarks need
#   info          ucx_info (version, transports), tshmem-info (which UCX the process loaded, from where)
#   ucx-tcp       the device offnode suites (ctest -L offnode -L gpu: the suites, the kernel arrangements, the
#                 bounds, the collectives across nodes) with TSHMEM_REMOTE_TRANSPORT=ucx, UCX_TLS=tcp,cuda_copy,self
#                 (a cluster without GPUDirect: the GPU heap takes the staged mode)
#   mpi           the same with TSHMEM_REMOTE_TRANSPORT=mpi (the fallback)
#   arrangements  the two-kernel program (CUDA started first, a third kernel's first launch while a kernel waits
#                 across nodes) and the arrangements test on both transports, lazy and eager module loading
#   ucx-default   the device offnode suites with UCX's own choice of transports
#   python        the Python package over build-gpu's libtshmem (without tshmem_moe), then its off-node tests
#                 (python/tests/tshmem/test_offnode.py: put, get, put_signal across nodes, torch tensors on the vmm
#                 heap) at 2 PEs, with UCX_TLS=tcp,cuda_copy,self and with UCX's defaults; a skip fails the stage
#   cpu           the CPU offnode suites (ctest -L offnode -LE gpu: each sets its transport) with the wheel's UCX
#   perf          scripts/offnode-perf.sh --rounds N: vader (mpi) and ucx side by side, and Open MPI's OpenSHMEM
#                 where built
# A ctest stage cut off by the budget keeps what passed (build-gpu/ucx-gpu-check.<stage>.passed): the next run of
# the same command runs the rest.
# Which UCX loads: tshmem's libucp.so.0 (the wheel's, through LD_LIBRARY_PATH and the build's run path) is loaded
# with the program, before MPI_Init opens Open MPI's UCX components; they link the system's libucp.so.0 (the same
# soname), so the dynamic linker hands them the one already loaded: one UCX per process, the wheel's. tshmem-info
# and the init log (TSHMEM_DEBUG=info) print the version and path loaded.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wheel="" budget=560 only="" rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    -*) echo "ucx-gpu-check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [ -z "$wheel" ] || { echo "ucx-gpu-check.sh: one WHEEL_DIR, got '$1' too" >&2; exit 2; }; wheel=$1; shift ;;
  esac
done
[ -n "$wheel" ] || { echo "ucx-gpu-check.sh: no WHEEL given (see --help)" >&2; exit 2; }
case "$budget" in ''|*[!0-9]*) echo "ucx-gpu-check.sh: --budget takes seconds, got '$budget'" >&2; exit 2 ;; esac
case "$rounds" in ""|*[!0-9]*|0) echo "ucx-gpu-check.sh: --rounds takes a positive count, got '$rounds'" >&2; exit 2 ;; esac
build=$root/build-gpu
if [ -d "$wheel" ] && [ ! -d "$wheel/libucx" ]; then  # a folder holding the wheel file
  found=$(find "$wheel" -maxdepth 1 -name 'libucx*.whl' | head -1)
  [ -n "$found" ] || { echo "ucx-gpu-check.sh: $wheel holds neither libucx/ nor a libucx*.whl" >&2; exit 2; }
  wheel=$found
fi
if [ -f "$wheel" ]; then  # the wheel file: unpacked once (a wheel is a zip archive)
  unpacked=$build/ucx-wheel
  if [ ! -f "$unpacked/$(basename "$wheel").unpacked" ]; then
    rm -rf "$unpacked" && mkdir -p "$unpacked"
    python3 -m zipfile -e "$wheel" "$unpacked" || { echo "ucx-gpu-check.sh: cannot unpack $wheel" >&2; exit 2; }
    chmod +x "$unpacked"/libucx/bin/* 2>/dev/null
    touch "$unpacked/$(basename "$wheel").unpacked"
  fi
  wheel=$unpacked
fi
wheel=$(cd "$wheel" 2>/dev/null && pwd) || { echo "ucx-gpu-check.sh: WHEEL does not exist" >&2; exit 2; }
ucx=$wheel/libucx
[ -f "$ucx/lib/pkgconfig/ucx.pc" ] || { echo "ucx-gpu-check.sh: $ucx/lib/pkgconfig/ucx.pc not found" >&2; exit 2; }

out=${OUT:+$OUT/ucx-gpu-check}
out=${out:-$PWD/ucx-gpu-check}
mkdir -p "$out"
done_file=$build/ucx-gpu-check.done
start=$SECONDS

# The wheel's pkg-config files name the path it was built in as their prefix: copies that name where it is now.
pc=$out/pkgconfig
mkdir -p "$pc"
for f in "$ucx"/lib/pkgconfig/*.pc; do
  sed "s|^prefix *=.*|prefix = $ucx|" "$f" > "$pc/$(basename "$f")"
done
export PKG_CONFIG_PATH=$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$ucx/lib:$wheel/libucx_cu13.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=${CUDAHOSTCXX:-/opt/gcc/bin/g++}
export TSHMEM_CUDA_ARCH=${TSHMEM_CUDA_ARCH:-90}

left() { echo $((budget - (SECONDS - start))); }
wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
finished() { grep -qx "$1" "$done_file" 2>/dev/null; }
status=0
# stage <name> <command...>: runs it bounded by the budget left, logs to $out/<name>.log, records it when it passed.
stage() {
  local name=$1; shift
  wanted "$name" || return 0
  if finished "$name"; then echo "== $name: done in an earlier run ($done_file)"; return 0; fi
  local limit
  limit=$(left)
  if [ "$limit" -lt 30 ]; then echo "== $name: NOT RUN, the budget is spent (run the same command again)"; return 0; fi
  echo "== $name (at most ${limit} s; log $out/$name.log)"
  local t0=$SECONDS
  timeout -k 10 "$limit" bash -c "$*" > "$out/$name.log" 2>&1
  local rc=$?
  # What passed counts even when the budget cut the stage off: a later run leaves it out (offnode_tests).
  grep -E "Test +#[0-9]+: .* Passed" "$out/$name.log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' \
    >> "$build/ucx-gpu-check.$name.passed"
  echo "   rc=$rc after $((SECONDS - t0)) s"
  grep -E "tests passed|\*\*\*Failed|\*\*\*Timeout|Not Run|PASS:|FAIL:|SKIP:|error:" "$out/$name.log" | head -30 \
    | sed 's/^/   /'
  if [ "$rc" = 0 ]; then echo "$name" >> "$done_file"; else status=1; fi
  [ "$rc" = 124 ] && echo "   (cut off by the budget: run the same command again to go on)"
  return 0
}

build_step() {
  # Tests on explicitly: a build-gpu configured before without them (a benchmark-only build) keeps its cache.
  cmake -S "$root" --preset gpu -DTSHMEM_UCX=ON -DTSHMEM_BUILD_TESTS=ON || return 1
  grep -E "^TSHMEM_UCX_BUILT" "$build/CMakeCache.txt"
  # The targets of every test labelled offnode (their commands name the binaries), the tools and the benchmarks.
  local targets
  targets=$(cd "$build" && ctest -N -V -L offnode 2>/dev/null | sed -n 's/.*Test command: //p' | tr -d '"' \
    | tr ' ' '\n' | grep "^$build/" | xargs -r -n1 basename | sort -u | grep -v '\.sh$' | tr '\n' ' ')
  targets="$targets tshmem tshmem-info tshmem_put_bw tshmem_get_bw tshmem_p_ping_pong_latency tshmem_put_latency
           tshmem_get_latency tshmem_g_latency tshmem_proxy_rate tshmem_host_bw tshmem_host_latency tshmem_host_shmem
           tshmem_staged_limits"
  # Test commands name folders too (include paths of the build checks): keep only what ninja can build.
  local known
  known=$(ninja -C "$build" -t targets all 2>/dev/null | sed 's/:.*//')
  # The child-job tests name their binaries through variables, not on the command line: add each listed
  # test's helper and the off-node bound tests by name.
  targets="$targets $(grep -E '^tshmem_((offnode_bound|fault|kill)[a-z_]*|[a-z_]*_helper)$' <<<"$known" | tr '\n' ' ')"
  # shellcheck disable=SC2086
  targets=$(printf '%s\n' $targets | sort -u | grep -Fx -f <(printf '%s\n' "$known") | tr '\n' ' ')
  echo "targets: $targets"
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$(nproc)" --target $targets
}

info_step() {
  "$ucx/bin/ucx_info" -v
  "$ucx/bin/ucx_info" -d | grep -E "Transport|Device" | sort -u
  echo "--- system UCX (Open MPI's):"
  ldconfig -p | grep -E "libucp\.so" || true
  echo "--- tshmem-info (this environment):"
  "$build/tools/tshmem-info" | sed -n '/Remote transports/,/^$/p'
  echo "--- the libucp a tshmem job loads, and each peer's path (TSHMEM_DEBUG=info):"
  TSHMEM_DEBUG=info TSHMEM_DEBUG_NODE_SIZE=1 TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_REMOTE_TRANSPORT=ucx \
    UCX_TLS=tcp,cuda_copy,self "$root/scripts/tshmemrun" -np 2 -- "$build/perftest/host/tshmem_host_latency" \
    -b 8 -e 8 -n 10 -w 2 2>&1 | grep -E "reached through|PE|latency" | head -20
}

# offnode_tests <stage> <ctest label arguments...>: the tests a cut-off run of this stage passed already are left out.
offnode_tests() {
  local stage=$1 passed=$build/ucx-gpu-check.$1.passed
  shift
  # A first run finds tests or fails: a build-gpu without the tests (a benchmark-only build) must not pass a stage.
  local select=(--no-tests=error)
  [ -s "$passed" ] && select=(-E "^($(sort -u "$passed" | paste -sd'|'))\$")
  cd "$build" && ctest "$@" "${select[@]}" --output-on-failure -j 2 --timeout 900
}

two_kernels() {
  local rc=0
  for transport in ucx mpi; do
    for loading in "" EAGER; do
      echo "--- TSHMEM_REMOTE_TRANSPORT=$transport CUDA_MODULE_LOADING=${loading:-(unset)}"
      (cd "$build" && env TSHMEM_REMOTE_TRANSPORT=$transport UCX_TLS=tcp,cuda_copy,self \
        ${loading:+CUDA_MODULE_LOADING=$loading} ctest -R "tshmem_offnode_two_kernels_program|arrangements_vmm_vader_np2" \
        --output-on-failure) || rc=1
    done
  done
  return $rc
}

python_offnode() {
  TSHMEM_PY_BUILD_ONLY=1 TSHMEM_PY_MOE=OFF "$root/scripts/python-test.sh" "$build" || return 1
  local rc=0 tls log
  for tls in tcp,cuda_copy,self ""; do
    echo "--- UCX_TLS=${tls:-unset: the defaults of UCX}"
    log=$(env ${tls:+UCX_TLS=$tls} TSHMEM_MEM_BACKEND=vmm TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_PYTEST_LIMIT=300 \
      "$root/test/python/run_pytest.sh" "$build" 2 -rs -k test_offnode 2>&1) || rc=1
    echo "$log"
    # The tests skip the ucx transport where the build has none: here that is a failure, not a pass.
    grep -qE "[0-9]+ skipped|^SKIPPED" <<<"$log" && { echo "FAIL: a test skipped"; rc=1; }
  done
  return $rc
}

export root build ucx out wheel rounds
export -f build_step info_step offnode_tests two_kernels python_offnode
echo "ucx-gpu-check.sh: wheel $wheel ($(cat "$ucx/UCX_WHEEL_VERSION.txt" 2>/dev/null || echo "?")), budget ${budget} s, logs $out"
mkdir -p "$build"
stage build build_step
stage info info_step
stage ucx-tcp TSHMEM_REMOTE_TRANSPORT=ucx UCX_TLS=tcp,cuda_copy,self offnode_tests ucx-tcp -L offnode -L gpu
stage mpi TSHMEM_REMOTE_TRANSPORT=mpi offnode_tests mpi -L offnode -L gpu
stage arrangements two_kernels
stage ucx-default TSHMEM_REMOTE_TRANSPORT=ucx offnode_tests ucx-default -L offnode -L gpu
stage python python_offnode
stage cpu offnode_tests cpu -L offnode -LE gpu
stage perf '"$root/scripts/offnode-perf.sh" --build "$build" --out "$out/offnode-perf" --rounds "$rounds"'
echo "ucx-gpu-check.sh: $((SECONDS - start)) s; stages done: $(tr '\n' ' ' 2>/dev/null < "$done_file")"
exit $status
