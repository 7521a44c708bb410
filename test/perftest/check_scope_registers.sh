#!/usr/bin/env bash
# Kernels that call the device API at block scope fit a 1024-thread block: at most 64 registers a thread (65,536
# per SM / 1,024). A kernel's register count is the most any function it may call uses, so a register-hungry path
# inside a block-scope call (the off-node proxy's, say) makes every such kernel unlaunchable at 1,024 threads
# ("too many resources requested"), whichever path runs.
#   check_block_scope_registers.sh <cuobjdump> <kernel name pattern (grep -E, mangled)> <binary>...
# Exit 77 (ctest SKIP_RETURN_CODE) when cuobjdump is missing.
set -uo pipefail
cuobjdump=$1 pattern=$2
shift 2
# shellcheck source=../common/sass_tools.sh
. "$(dirname "$0")/../common/sass_tools.sh"
require_cuobjdump "$cuobjdump"
failed=0 checked=0
for binary in "$@"; do
  # "Function <mangled>:" then "REG:<n> ...": one kernel a pair of lines.
  while read -r name regs; do
    checked=$((checked + 1))
    if [ "$regs" -gt 64 ]; then
      echo "FAIL: $(basename "$binary"): $name uses $regs registers a thread (a 1024-thread block allows 64)"
      failed=1
    fi
  done < <("$cuobjdump" --dump-resource-usage "$binary" 2>/dev/null |
    awk '/Function / { sub(/:$/, "", $2); fn = $2 } /REG:/ { split($1, r, ":"); print fn, r[2] }' | grep -E "$pattern")
done
if [ "$checked" -eq 0 ]; then echo "FAIL: no kernel matched '$pattern'"; exit 1; fi
[ "$failed" -eq 0 ] && echo "PASS: $checked block-scope kernels fit 1024 threads (<= 64 registers)"
exit "$failed"
