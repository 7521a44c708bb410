#!/bin/sh
# check_multimem_sass.sh <cuobjdump> <object>
# Proves, without running anything, that every multimem variant compiled to a multimem instruction:
#   - every kernel mm_* has a `multimem.` instruction in its embedded PTX (cuobjdump --dump-ptx);
#   - every kernel mm_ld_reduce_* has LDGMC (the sm_90 SASS of multimem.ld_reduce) in its SASS;
#   - every kernel mm_st_* / mm_red_* has a STG / REDG in its SASS: on sm_90, multimem.st and multimem.red
#     assemble to the ordinary store/reduction opcodes (the multicast address does the fan-out), so the
#     SASS cannot tell them apart from unicast and the PTX check is what proves them.
# Exit 77 (ctest SKIP_RETURN_CODE) when cuobjdump or its nvdisasm is missing, saying how to get them.
set -u
cuobjdump=$1
object=$2
# shellcheck source=../common/sass_tools.sh
. "$(dirname "$0")/../common/sass_tools.sh"
require_cuobjdump "$cuobjdump"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dump_sass "$cuobjdump" "$object" "$tmp/sass"
"$cuobjdump" --dump-ptx "$object" > "$tmp/ptx" || { echo "FAIL: cuobjdump --dump-ptx"; exit 1; }

# Per kernel: name <tab> whether its SASS / PTX holds the instruction.
awk '/Function : /{name=$3} name && /LDGMC/{ld[name]=1} name && /(STG|REDG)\./{st[name]=1}
     END{for (n in ld) print n "\tLDGMC"; for (n in st) print n "\tSTG"}' "$tmp/sass" > "$tmp/sass_hits"
awk '/\.entry /{name=$3; sub(/\(.*/, "", name)} name && /multimem\./{print name "\tmultimem"}' "$tmp/ptx" \
  | sort -u > "$tmp/ptx_hits"
kernels=$(awk '/Function : mm_/{print $3}' "$tmp/sass" | sort -u)
total=0
failed=0
for k in $kernels; do
  total=$((total + 1))
  if ! grep -q "^$k	multimem" "$tmp/ptx_hits"; then
    echo "FAIL: $k: no multimem instruction in its PTX"; failed=$((failed + 1)); continue
  fi
  case $k in
    mm_ld_reduce_*) want=LDGMC ;;
    *) want=STG ;;
  esac
  if ! grep -q "^$k	$want" "$tmp/sass_hits"; then
    echo "FAIL: $k: no $want in its SASS"; failed=$((failed + 1)); continue
  fi
  echo "ok: $k ($want in SASS, multimem in PTX)"
done
if [ "$total" -lt 76 ]; then
  echo "FAIL: expected at least 76 mm_* kernels in $object, found $total"
  exit 1
fi
echo "$((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
