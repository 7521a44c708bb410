#!/usr/bin/env bash
# Under -rdc, kernels read the device state from constant memory: every kernel of BINARY whose name matches
# PATTERN (an awk regex on the mangled name) reads constant bank 3 (c[0x3][...], where the device state lives)
# and makes no plain global load (LDG without .CONSTANT): the state's words are constant-bank operands, and the
# only global read of the p path is the read-only-cache load of its peer slot from the table's mirror
# (docs/design.md, "Peer-table read path"). A state in global memory fails both: its words come through LDG.
#   check_state_sass.sh <cuobjdump> <binary> <pattern> <expected kernel count>
# Exit 77 (ctest SKIP_RETURN_CODE) when cuobjdump or its nvdisasm is missing, saying how to get them.
set -uo pipefail
cuobjdump=$1 binary=$2 pattern=$3 expected=$4
# shellcheck source=../../common/sass_tools.sh
. "$(dirname "$0")/../../common/sass_tools.sh"
require_cuobjdump "$cuobjdump"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump_sass "$cuobjdump" "$binary" "$tmp/sass"
# One line per matching kernel (each architecture's copy counts once): name, constant-bank-3 reads, plain LDGs.
awk -v pattern="$pattern" '
  /Function : / { name = ($3 ~ pattern) ? $3 : ""; if (name != "" && !(name in c3)) { c3[name] = 0; ldg[name] = 0 } }
  name != "" && /c\[0x3\]\[/ { c3[name]++ }
  name != "" && /LDG\.E/ && !/\.CONSTANT/ { ldg[name]++ }
  END { for (n in c3) print n, c3[n], ldg[n] }' "$tmp/sass" | sort > "$tmp/kernels"
kernels=$(wc -l < "$tmp/kernels")
bad=$(awk '$2 == 0 || $3 != 0' "$tmp/kernels")
if [ "$kernels" -ne "$expected" ] || [ -n "$bad" ]; then
  echo "FAIL: $binary: $kernels kernels match '$pattern' (expected $expected); kernel, c[0x3] reads, plain LDGs:"
  sed 's/^/  /' "$tmp/kernels"
  exit 1
fi
echo "kernel, c[0x3] reads, plain LDGs:"
sed 's/^/  /' "$tmp/kernels"
echo "PASS: $kernels kernels of $(basename "$binary") read the device state from constant bank 3"
