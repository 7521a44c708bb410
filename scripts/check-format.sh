#!/usr/bin/env bash
# Fails when a C/C++/CUDA source differs from .clang-format (Google, 120 columns).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v clang-format >/dev/null || { echo "clang-format not found: format check skipped"; exit 0; }
bad=()
while IFS= read -r file; do
  if ! clang-format --dry-run --Werror "$file" >/dev/null 2>&1; then bad+=("$file"); fi
done < <(git ls-files '*.h' '*.cc' '*.cu' '*.cuh' 2>/dev/null)
if [ ${#bad[@]} -gt 0 ]; then
  echo "format check: ${#bad[@]} file(s) differ from .clang-format (run: clang-format -i <file>):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format check: clean"
