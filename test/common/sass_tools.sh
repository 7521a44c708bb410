# shellcheck shell=sh
# Sourced by the SASS checks (no GPU needed): finding cuobjdump, and dumping a binary's SASS. A missing tool is a
# skip (exit 77, ctest's SKIP_RETURN_CODE) that says how to get it; a binary cuobjdump cannot read is a failure.

# require_cuobjdump <path>: skips unless it is executable; puts its folder first on PATH (nvdisasm lives there).
require_cuobjdump() {
  if [ ! -x "$1" ]; then
    echo "SKIP: cuobjdump not found (CUDA toolkit bin/, or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm;"
    echo "      configure with -DTSHMEM_CUOBJDUMP=<path>)"
    exit 77
  fi
  PATH="$(dirname "$1"):$PATH"
  export PATH
}

# dump_sass <cuobjdump> <binary> <out file>
dump_sass() {
  if ! "$1" --dump-sass "$2" > "$3" 2> "$3.err"; then
    if grep -q nvdisasm "$3.err"; then
      echo "SKIP: cuobjdump needs nvdisasm next to it or on PATH: $(cat "$3.err")"
      exit 77
    fi
    echo "FAIL: cuobjdump --dump-sass $2: $(cat "$3.err")"
    exit 1
  fi
}
