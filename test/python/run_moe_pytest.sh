#!/usr/bin/env bash
# tshmem_moe's tests: run_moe_pytest.sh <build> <tests folder>, with the interpreter scripts/python-test.sh recorded.
set -euo pipefail
build=$1 tests=$2
cd "$build"  # not the source tree: the installed package must be the one imported
exec "$(cat "$build/python-interpreter")" -m pytest -q -p no:cacheprovider --color=no "$tests"
