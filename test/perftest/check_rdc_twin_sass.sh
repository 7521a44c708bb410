#!/usr/bin/env bash
# The block put kernel of the -rdc benchmark twin compiles like the one without -rdc (SASS, no GPU needed):
#   - the -rdc binary holds no __cuda_sm20_* routine (the 64-bit division and its kin): under -rdc a call of one is
#     an ABI call whose clobbers ptxas cannot see, after which it keeps every uniform value of the kernel in vector
#     registers (perftest/device/perf_types.cuh, ceil_div);
#   - the kernel makes no more R2UR moves than the build without -rdc (the symptom: an R2UR pair before each global
#     access, to rebuild the memory descriptor in uniform registers);
#   - it reads the peer slot through the uniform path (ULDC.64 from constant bank 3, the state), not as an indexed
#     per-thread LDC.
#   check_rdc_twin_sass.sh <cuobjdump> <binary without -rdc> <binary with -rdc> <kernel pattern (awk regex)>
# Exit 77 (ctest SKIP_RETURN_CODE) when cuobjdump or its nvdisasm is missing, saying how to get them.
set -uo pipefail
cuobjdump=$1 plain=$2 rdc=$3 pattern=$4
# shellcheck source=../common/sass_tools.sh
. "$(dirname "$0")/../common/sass_tools.sh"
require_cuobjdump "$cuobjdump"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in plain rdc; do
  binary=$plain
  [ "$side" = rdc ] && binary=$rdc
  dump_sass "$cuobjdump" "$binary" "$tmp/$side"
  # The first matching kernel's text (one architecture's copy).
  awk -v pattern="$pattern" '/Function : / { if (taken) exit; inside = ($3 ~ pattern); taken = inside; next } inside' \
    "$tmp/$side" > "$tmp/$side.kernel"
  if [ ! -s "$tmp/$side.kernel" ]; then
    echo "FAIL: no kernel matching '$pattern' in $binary"
    exit 1
  fi
done
count() { grep -cE "$1" "$2" || true; }
r2ur_plain=$(count 'R2UR ' "$tmp/plain.kernel")
r2ur_rdc=$(count 'R2UR ' "$tmp/rdc.kernel")
helpers=$(grep -oE 'Function : __cuda_sm[0-9a-z_]+' "$tmp/rdc" | sort -u | sed 's/Function : //' | tr '\n' ' ')
uniform_slot=$(count 'ULDC\.64 UR[0-9]+, c\[0x3\]\[UR' "$tmp/rdc.kernel")
indexed_slot=$(count '[^U]LDC\.64 R[0-9]+, c\[0x3\]\[R' "$tmp/rdc.kernel")
echo "R2UR moves: $r2ur_plain without -rdc, $r2ur_rdc with; peer-slot reads with -rdc: $uniform_slot uniform," \
  "$indexed_slot indexed per thread; __cuda_sm routines with -rdc: ${helpers:-none}"
fail=0
[ -z "$helpers" ] || { echo "FAIL: $rdc holds ${helpers}(an ABI call in a kernel: see the header)"; fail=1; }
[ "$r2ur_rdc" -le "$r2ur_plain" ] || { echo "FAIL: more R2UR moves with -rdc than without"; fail=1; }
if [ "$uniform_slot" -lt 1 ] || [ "$indexed_slot" != 0 ]; then
  echo "FAIL: the -rdc kernel does not read the peer slot through the uniform path"
  fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "PASS: the -rdc twin's kernel keeps its uniform values in uniform registers, as the build without -rdc does"
