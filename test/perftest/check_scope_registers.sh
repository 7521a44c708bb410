#!/usr/bin/env bash
# Kernels that call the device API fit a 1024-thread block: at most 64 registers a thread (65,536 per SM / 1,024).
# A kernel's register count is the most any function it may call uses, so a register-hungry path inside a call (the
# off-node proxy's, say, or a copy loop unrolled for one thread) makes every such kernel unlaunchable at 1,024 threads
# ("too many resources requested"), whichever path runs. The block scope is the obvious case; a kernel in which every
# thread calls a thread-scope operation (getmem, p, g...) is launched with 1,024 threads as often.
#   check_scope_registers.sh <cuobjdump> <what the kernels are, for the messages> <kernel name pattern (grep -E,
#                            mangled)> <binary>...
# Exit 77 (ctest SKIP_RETURN_CODE) when cuobjdump is missing.
set -uo pipefail
cuobjdump=$1 what=$2 pattern=$3
shift 3
# shellcheck source=../common/sass_tools.sh
. "$(dirname "$0")/../common/sass_tools.sh"
require_cuobjdump "$cuobjdump"
failed=0 checked=0
for binary in "$@"; do
  # "Function <mangled>:" then "REG:<n> ...": one kernel a pair of lines.
  while read -r name regs; do
    checked=$((checked + 1))
    if [ "$regs" -gt 64 ]; then
      echo "FAIL: $(basename "$binary"): $what kernel $name uses $regs registers a thread (a 1024-thread block allows 64)"
      failed=1
    fi
  done < <("$cuobjdump" --dump-resource-usage "$binary" 2>/dev/null |
    awk '/Function / { sub(/:$/, "", $2); fn = $2 } /REG:/ { split($1, r, ":"); print fn, r[2] }' | grep -E "$pattern")
done
if [ "$checked" -eq 0 ]; then echo "FAIL: no kernel matched '$pattern'"; exit 1; fi
[ "$failed" -eq 0 ] && echo "PASS: $checked $what kernels fit 1024 threads (<= 64 registers)"
exit "$failed"
