#!/usr/bin/env bash
# Builds NVSHMEM's own examples unchanged against tshmem's NVSHMEM compat headers and runs each at N PEs,
# then prints a table: example | built | ran | result | why not.
#
#   scripts/nvshmem-examples.sh <nvshmem examples dir> [--build DIR] [--np N] [--build-only] [--out DIR]
#
# <nvshmem examples dir> is NVSHMEM's examples/ folder, fetched into an ignored folder (never committed).
# --build: a configured and built tshmem build tree (default: build). Examples compile with nvcc, no -rdc,
# -I include/nvshmem-compat, and link libtshmem (plus MPI for the MPI-initialised ones, libcuda for the one
# that calls the driver itself). Runs use TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_DISABLE_NVLS=1 and a 2 GiB heap
# (NVSHMEM_SYMMETRIC_SIZE, read through the compat layer; NVSHMEM grows its heap, tshmem's is fixed). Every example
# calls cudaSetDevice(its node-local PE number) after init; with fewer GPUs than PEs a preloaded shim maps
# that to (number mod GPUs) so N PEs can share one GPU (say so in the table; with enough GPUs no shim).
# A result is "checked" when the exit status is 0, the example's own success lines are all there and no
# error line is printed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
examples="" build="$here/build" np=2 build_only=0 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --np) np=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "nvshmem-examples.sh: unknown option $1" >&2; exit 2 ;;
    *) examples=$(cd "$1" && pwd); shift ;;
  esac
done
if [ -z "$examples" ] || [ ! -d "$examples" ]; then
  echo "usage: $0 <nvshmem examples dir> [--build DIR] [--np N]" >&2; exit 2
fi
[ -f "$build/src/libtshmem.so" ] || { echo "no libtshmem.so under $build/src: build tshmem first" >&2; exit 2; }
out=${out:-$build/nvshmem-examples}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
# The architecture the tshmem build was made for (its CMakeCache.txt, cmake/TshmemCudaArch.cmake), unless
# TSHMEM_CUDA_ARCH (or CUDA_ARCH, as before) names one; a build from before that record: 90.
arch=${TSHMEM_CUDA_ARCH:-${CUDA_ARCH:-$(sed -n 's/^TSHMEM_CUDA_ARCHITECTURES:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)}}
arch=${arch%%;*}
arch=${arch:-90}
inc=(-I"$here/include/nvshmem-compat" -I"$here/include" -I"$build/include" -I"$here/device")
lib=(-L"$build/src" -ltshmem -Xlinker -rpath -Xlinker "$build/src")
mpi_c=$(mpicc --showme:compile 2>/dev/null) mpi_l=$(mpicc --showme:link 2>/dev/null)
launcher=(mpirun --oversubscribe --bind-to none -np "$np")
[ "$(id -u)" = 0 ] && launcher=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np")

# Features tshmem does not offer, with the reason printed in the table.
declare -A excluded=(
  [uid-based-init]="unique-ID bootstrap (excluded: tshmem bootstraps over MPI)"
  [shmem-based-init]="OpenSHMEM bootstrap (excluded: needs an OpenSHMEM library and shmem.h)"
)
# Success lines each example prints at 2+ PEs, and its error pattern. {pe}: every PE number; {prev}: the PE
# before it in the ring; {ring}: pe + n(n-1)/2, what collective-launch's ring of n rounds leaves on PE pe.
declare -A expect=(
  [collective-launch]='results on device \[{pe}\] is {ring} *$'
  [dev-guide-ring]='^{pe}: received message {prev}$'
  [dev-guide-ring-mpi]='^{pe}: received message {prev}$'
  [mpi-based-init]='\[{pe} of NP\] run complete'
  [on-stream]='\[{pe} of NP\] run complete'
  [put-block]='\[{pe} of NP\] run complete'
  [thread-group]='\[{pe} of NP\] run complete'
  [user-buffer]='^No errors found$' [ring-bcast]='' [ring-reduce]=''
  [moe_shuffle]='Rank: {pe} Time:'
  [hello]='Hello from PE {pe} of NP'
)
errors='error|failure|Error|FAIL|mismatch'
# Examples written for one PE count. moe_shuffle's offset exchange reads PE threadIdx.x / npes for
# threadIdx.x < 16 * npes (16 experts): in range only at 16 PEs (at 2 PEs it names PE 2..15, which tshmem's PE
# check traps and NVSHMEM would read out of bounds), so it runs at 16.
declare -A example_np=([moe_shuffle]=16)
# And its options: -c puts its index tables in cudaMalloc memory; by default they are host malloc memory that
# its kernels read, which needs HMM or ATS (without -c, at 16 PEs on the 1 x H200 host, it stopped with an
# illegal memory access; with -c it ran to the end there: docs/results.md, "NVSHMEM's examples").
declare -A example_args=([moe_shuffle]="-c")

# The cudaSetDevice shim, used when there are fewer GPUs than PEs.
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
preload=""
max_np=$np
for n in "${example_np[@]}"; do [ "$n" -gt "$max_np" ] && max_np=$n; done
if [ "$build_only" = 0 ] && [ "${gpus:-0}" -lt "$max_np" ]; then
  cat > "$out/setdevice_shim.c" <<'SHIM'
#define _GNU_SOURCE
#include <dlfcn.h>
typedef int (*set_fn)(int);
typedef int (*count_fn)(int *);
/* cudaSetDevice(d) -> cudaSetDevice(d mod device count): lets N PEs that pick "their" GPU share fewer GPUs. */
int cudaSetDevice(int device) {
  set_fn real = (set_fn)dlsym(RTLD_NEXT, "cudaSetDevice");
  count_fn count = (count_fn)dlsym(RTLD_NEXT, "cudaGetDeviceCount");
  int n = 0;
  if (count != 0 && count(&n) == 0 && n > 0 && device >= n) device %= n;
  return real(device);
}
/* The same for the device an example names in its own VMM allocation (user-buffer: location.id = node PE). */
#include <cuda.h>
static int driver_devices(void) {
  CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(RTLD_NEXT, "cuDeviceGetCount");
  int n = 0;
  return count != 0 && count(&n) == CUDA_SUCCESS ? n : 0;
}
static void fold(CUmemLocation *where) {
  int n = driver_devices();
  if (where->type == CU_MEM_LOCATION_TYPE_DEVICE && n > 0 && where->id >= n) where->id %= n;
}
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
  CUresult (*real)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long) =
      (CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))dlsym(
          RTLD_NEXT, "cuMemCreate");
  CUmemAllocationProp folded = *prop;
  fold(&folded.location);
  return real(handle, size, &folded, flags);
}
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  CUresult (*real)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t) =
      (CUresult(*)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))dlsym(RTLD_NEXT, "cuMemSetAccess");
  CUmemAccessDesc folded[8];
  if (count > 8) return real(ptr, size, desc, count);
  for (size_t i = 0; i < count; ++i) {
    folded[i] = desc[i];
    fold(&folded[i].location);
  }
  return real(ptr, size, folded, count);
}
SHIM
  cc -shared -fPIC -I/usr/local/cuda/include "$out/setdevice_shim.c" -o "$out/libsetdevice_shim.so" -ldl &&
    preload="$out/libsetdevice_shim.so"
fi

rows=()
status=0
for src in "$examples"/*.cu "$examples"/*.cpp; do
  [ -e "$src" ] || continue
  name=$(basename "$src"); name=${name%.*}
  if [ -n "${excluded[$name]:-}" ]; then rows+=("$name|no|no|-|${excluded[$name]}"); continue; fi
  exe="$out/$name" log="$out/$name.build.log"
  extra=()
  # shellcheck disable=SC2206  # mpicc's flags: lists of words
  grep -q '"mpi.h"\|<mpi.h>' "$src" && extra+=($mpi_c $mpi_l)
  grep -q 'cuMem\|cuInit' "$src" && extra+=(-lcuda)
  if [[ "$src" == *.cpp ]]; then
    # shellcheck disable=SC2054  # -Wl,-rpath,<dir> is one word
    build_cmd=(g++ -std=c++17 "${inc[@]}" -I/usr/local/cuda/include "$src" -o "$exe" -L"$build/src" -ltshmem
               -Wl,-rpath,"$build/src" -L/usr/local/cuda/lib64 -lcudart "${extra[@]}")
  else
    build_cmd=(nvcc -std=c++17 "-arch=sm_$arch" -cudart shared "${inc[@]}" "$src" -o "$exe" "${lib[@]}" "${extra[@]}")
  fi
  if ! "${build_cmd[@]}" > "$log" 2>&1; then
    why=$(grep -m1 -oE 'identifier "[A-Za-z0-9_]+" is undefined|error: [^(]*' "$log" | head -1)
    rows+=("$name|no|no|-|${why:-see $log}"); status=1; continue
  fi
  if [ "$build_only" = 1 ]; then rows+=("$name|yes|-|-|build only"); continue; fi
  run_log="$out/$name.run.log"
  run_np=${example_np[$name]:-$np}
  run_launcher=("${launcher[@]}")
  run_launcher[${#run_launcher[@]} - 1]=$run_np
  # NVSHMEM grows its heap on demand; tshmem's is fixed at init, so the examples get room for their largest
  # allocations (ring-reduce takes 2 x 512 MiB) plus tshmem's own region: 2 GiB unless the caller set a size.
  # shellcheck disable=SC2086  # the example's arguments: a list of words
  env TSHMEM_ALLOW_SHARED_GPU=1 TSHMEM_DISABLE_NVLS=1 NVSHMEM_SYMMETRIC_SIZE="${NVSHMEM_SYMMETRIC_SIZE:-2G}" \
    timeout 300 "${run_launcher[@]}" -x TSHMEM_ALLOW_SHARED_GPU -x TSHMEM_DISABLE_NVLS -x NVSHMEM_SYMMETRIC_SIZE \
    ${preload:+-x LD_PRELOAD="$preload"} "$exe" ${example_args[$name]:-} > "$run_log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    rows+=("$name|yes|failed|-|exit status $rc: $(grep -m1 -E "$errors" "$run_log" | cut -c1-100)"); status=1; continue
  fi
  ok=yes why=""
  pattern=${expect[$name]:-}
  if [ -n "$pattern" ]; then
    for ((pe = 0; pe < run_np; ++pe)); do
      p=${pattern//\{pe\}/$pe}; p=${p//NP/$run_np}
      p=${p//\{prev\}/$(( (pe + run_np - 1) % run_np ))}; p=${p//\{ring\}/$(( pe + run_np * (run_np - 1) / 2 ))}
      grep -qE "$p" "$run_log" || { ok=no; why="missing line /$p/"; break; }
    done
  fi
  bad=$(grep -E "$errors" "$run_log" | grep -v '^No errors found$' | head -1)  # user-buffer's success line
  [ -n "$bad" ] && { ok=no; why="printed: ${bad:0:100}"; }
  [ "$ok" = yes ] && [ -z "$pattern" ] && [ "$name" != ring-bcast ] && why="the example checks nothing itself"
  [ "$run_np" != "$np" ] && why="${why:+$why; }at $run_np PEs (the PE count it is written for)"
  [ "$name" = moe_shuffle ] && why="${why:+$why; }its lines are timings: it verifies no data"
  [ "$ok" = yes ] || status=1
  rows+=("$name|yes|yes|$([ $ok = yes ] && echo checked || echo WRONG)|${why}${preload:+ (cudaSetDevice shim: $gpus GPU(s))}")
done
rows+=("gemm_allreduce/|no|no|-|Blackwell-only (sm_100 CUTLASS kernels; excluded)")

printf '\n| example | built | ran | result | why not / notes |\n| --- | --- | --- | --- | --- |\n'
for r in "${rows[@]}"; do IFS='|' read -r a b c d e <<< "$r"; printf '| %s | %s | %s | %s | %s |\n' "$a" "$b" "$c" "$d" "$e"; done
echo "logs: $out"
exit $status
