#!/usr/bin/env bash
# -rdc builds outside CMake, the way a Makefile or NVSHMEM's examples build them: the link lines name
# libtshmem_device.a (-ltshmem_device, as `pkg-config --libs tshmem` does), which holds the program's one device
# state. No GPU needed: the check is that nvlink and the host linker succeed, that the program holds every unit,
# one device-state registration and one device state, and (with --cuobjdump) that every unit's kernel reads the
# state from constant bank 3 (test/gpu/rdc/check_state_sass.sh). The programs stay in the work folder and run
# under mpirun on a GPU host (every PE checks its inbox, prints "PE i of n: U units, 0 slots wrong", exits 0).
#
#   units:   N tiny units that each include the device API (unit.cu.in) plus main.cu, one `nvcc -rdc=true -c`
#            per unit (JOBS at a time), then for each N in COUNTS both flows:
#              separate  nvcc -dlink <objects> -ltshmem_device -o dlink.o (and once more with CMake's device-link
#                        flags), then g++ links the program
#              one step  nvcc -rdc=true main.cu <objects> -ltshmem -ltshmem_device -o app
#   nvshmem: eight units and main through include/nvshmem-compat, one `nvcc -rdc=true *.cu` as NVSHMEM's
#            examples are built.
#
# Usage: check_nvcc_rdc.sh units|nvshmem --nvcc NVCC --arch 90 --source SRC --build BUILD --work DIR
#                          [--lib DIR (default BUILD/src)] [--counts "8 16 64"] [--jobs 2] [--cuobjdump PATH]
# Exits 77 (ctest SKIP_RETURN_CODE), saying why, when there is no nvcc. The `-c` compiles go through ccache
# where it is installed (as the project's own build does); every link runs each time. The host compiler is
# g++, or NVCC_CCBIN where that is set (nvcc reads it too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}
shift || true
nvcc="" arch=90 src="" build="" lib_dir="" work="" counts="8 16 64" jobs=2 cuobjdump=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nvcc) nvcc=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --source) src=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --lib) lib_dir=$2; shift 2 ;;
    --counts) counts=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --cuobjdump) cuobjdump=$2; shift 2 ;;
    *) echo "check_nvcc_rdc.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$mode" in units|nvshmem) ;; *) echo "usage: $0 units|nvshmem --nvcc NVCC --source SRC --build BUILD --work DIR" >&2; exit 2 ;; esac
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "SKIP: no nvcc (${nvcc:-this build has no CUDA}): the -rdc builds need the CUDA toolkit"
  exit 77
fi
if [ -z "$src" ] || [ -z "$build" ] || [ -z "$work" ]; then
  echo "check_nvcc_rdc.sh: --source, --build and --work are required" >&2
  exit 2
fi
lib_dir=${lib_dir:-$build/src}
for lib in libtshmem.so libtshmem_device.a; do
  [ -e "$lib_dir/$lib" ] || { echo "FAIL: no $lib_dir/$lib (build the tshmem and tshmem_device_state targets first)"; exit 1; }
done
cuda_lib=$(cd "$(dirname "$nvcc")/.." && pwd)/lib64
[ -d "$cuda_lib" ] || cuda_lib=$(cd "$(dirname "$nvcc")/.." && pwd)/targets/x86_64-linux/lib

inc=(-I"$src/include" -I"$src/device" -I"$build/include")
host_cxx=${NVCC_CCBIN:-g++}
cache=()
command -v ccache > /dev/null && cache=(ccache)
rdc=(-std=c++17 -arch=sm_"$arch" -rdc=true)
link=(-L"$lib_dir" -ltshmem -ltshmem_device -Xlinker -rpath -Xlinker "$lib_dir")
failures=0
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# rdc_units.h for a program of `count` units: RDC_UNITS(X) names each unit; `nvshmem` is 0 or 1.
write_units_header() {
  local dir=$1 count=$2 nvshmem=$3 k
  {
    echo "#define RDC_NVSHMEM $nvshmem"
    printf '#define RDC_UNITS(X)'
    for ((k = 0; k < count; ++k)); do printf ' X(%d)' "$k"; done
    echo
  } > "$dir/rdc_units.h"
}

# The linked program: one launcher per unit, one device-state registration and one device state (the
# archive's) for the whole binary; with cuobjdump, every unit's kernel reads the state from constant bank 3.
check_program() {
  local what=$1 app=$2 count=$3 kernels=$4 units registrations states
  units=$(nm -C "$app" | grep -cE ' T rdc_launch_[0-9]+\(int\*\)$' || true)
  registrations=$(nm -C "$app" | grep -cE '^[0-9a-f]+ [A-Za-z] tshmemi::binary::state_registration$' || true)
  states=$(nm -C "$app" | grep -cE '^[0-9a-f]+ [A-Za-z] tshmemi::binary::state_in_libtshmem_device$' || true)
  if [[ $units -eq $count && $registrations -eq 1 && $states -eq 1 ]]; then
    echo "ok    $what: $units units, $registrations device-state registration, $states device state"
  else
    echo "FAIL  $what: $units units (expected $count), $registrations device-state registrations (expected 1)," \
      "$states device states (expected 1)"
    failures=$((failures + 1))
  fi
  [ -n "$cuobjdump" ] || return 0
  local sass rc
  sass=$("$src/test/gpu/rdc/check_state_sass.sh" "$cuobjdump" "$app" "$kernels" "$count") && rc=0 || rc=$?
  case $rc in
    0) echo "ok    $what: ${sass##*PASS: }" ;;
    77) echo "note  $what: SASS not read (${sass#SKIP: })" ;;
    *) echo "FAIL  $what: SASS"; while IFS= read -r line; do echo "      | $line"; done <<< "$sass"; failures=$((failures + 1)) ;;
  esac
}

# Runs a build step; its output goes to a log, shown when it fails.
step() {
  local what=$1 log=$2
  shift 2
  local t0
  t0=$(now)
  if "$@" > "$log" 2>&1; then
    echo "ok    $what ($(since "$t0") s)"
  else
    local rc=$?
    echo "FAIL  $what: exit status $rc ($(since "$t0") s); the command and its output:"
    echo "      $*"
    sed 's/^/      | /' "$log" | tail -20
    failures=$((failures + 1))
    return 1
  fi
}

rm -rf "$work"
mkdir -p "$work"
cd "$work"

if [ "$mode" = units ]; then
  max=0
  for n in $counts; do [ "$n" -gt "$max" ] && max=$n; done
  for ((k = 0; k < max; ++k)); do sed "s/@UNIT@/$k/g" "$here/unit.cu.in" > "unit_$k.cu"; done
  t0=$(now)
  if ! seq 0 $((max - 1)) | xargs -P "$jobs" -I{} "${cache[@]}" "$nvcc" "${rdc[@]}" "${inc[@]}" -c unit_{}.cu -o unit_{}.o \
      > compile.log 2>&1; then
    echo "FAIL  compiling the units:"
    tail -20 compile.log
    exit 1
  fi
  echo "ok    compiled $max units, $jobs at a time${cache:+ (through ccache)} ($(since "$t0") s)"
  for n in $counts; do
    dir=n$n
    mkdir -p "$dir"
    cp "$here/main.cu" "$dir/main.cu"
    write_units_header "$dir" "$n" 0
    objects=()
    for ((k = 0; k < n; ++k)); do objects+=("unit_$k.o"); done
    step "$n units: compile main" "$dir/main.log" "${cache[@]}" "$nvcc" "${rdc[@]}" "${inc[@]}" -I"$dir" -c "$dir/main.cu" \
      -o "$dir/main.o" || continue
    if step "$n units: nvcc -dlink" "$dir/dlink.log" "$nvcc" -arch=sm_"$arch" -dlink "$dir/main.o" "${objects[@]}" \
        "${link[@]}" -o "$dir/dlink.o" &&
       step "$n units: g++ links the device-linked objects" "$dir/link.log" "$host_cxx" "$dir/main.o" "${objects[@]}" \
        "$dir/dlink.o" -o "$dir/app_separate" -L"$lib_dir" -ltshmem -ltshmem_device -Wl,-rpath,"$lib_dir" \
        -L"$cuda_lib" -lcudart_static -ldl -lrt -lpthread; then
      check_program "$n units, separate device link" "$dir/app_separate" "$n" rdc_kernel_
    fi
    step "$n units: nvcc -dlink with CMake's flags" "$dir/dlink_cmake.log" "$nvcc" -O2 -g \
      "--generate-code=arch=compute_$arch,code=[compute_$arch,sm_$arch]" -Xcompiler=-fPIC -shared -dlink \
      "$dir/main.o" "${objects[@]}" "$lib_dir/libtshmem_device.a" -o "$dir/dlink_cmake.o" || true
    if step "$n units: one-step nvcc -rdc=true main.cu <objects>" "$dir/onestep.log" "$nvcc" "${rdc[@]}" "${inc[@]}" \
        -I"$dir" "$dir/main.cu" "${objects[@]}" "${link[@]}" -o "$dir/app_onestep"; then
      check_program "$n units, one step" "$dir/app_onestep" "$n" rdc_kernel_
    fi
  done
else
  units=8  # and main: nine units
  for ((k = 0; k < units; ++k)); do sed "s/@UNIT@/$k/g" "$here/nvshmem_unit.cu.in" > "nvshmem_unit_$k.cu"; done
  cp "$here/main.cu" main.cu
  write_units_header . "$units" 1
  # NVSHMEM's examples: nvcc -rdc=true -ccbin g++ -gencode=... -I <include> x.cu -o x -L <lib> -lnvshmem ...
  if step "NVSHMEM-style: nvcc -rdc=true *.cu ($((units + 1)) units, compat headers)" nvshmem.log \
      "$nvcc" -rdc=true -ccbin "$host_cxx" -gencode=arch=compute_"$arch",code=sm_"$arch" -I"$src/include/nvshmem-compat" \
      "${inc[@]}" -I. ./*.cu -o app_nvshmem "${link[@]}"; then
    check_program "NVSHMEM-style program" app_nvshmem "$units" nvshmem_kernel_
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures step(s) failed (logs in $work)"
  exit 1
fi
echo "PASS: -rdc builds outside CMake ($mode)"
