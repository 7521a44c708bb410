#!/usr/bin/env bash
# Prepares, on a machine that reaches PyPI, what a GPU machine without registry access needs to run TileKernels
# beside tshmem_moe: CARRY/tilelang-site.tar.xz (tilelang 0.1.15 and the dependencies a CUDA 13 + torch image
# lacks, as unpacked cp312 manylinux x86_64 wheels, packed with xz) and CARRY/TileKernels (its tile_kernels/ and
# tests/ from a checkout). CARRY must be a folder git ignores (default tilekernels-deps/); nothing of TileKernels
# is committed.
#   scripts/tilekernels-prepare.sh TK_CHECKOUT_OR_GIT_DIR [CARRY]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?a TileKernels checkout or its git directory}
carry=${2:-$root/tilekernels-deps}
mkdir -p "$carry/whl"
# Missing from a CUDA 13 image with torch 2.11 (Ubuntu 24.04, Python 3.12): these; cloudpickle, ml-dtypes, numpy,
# psutil, torch, tqdm and typing-extensions are there.
plats=()
for n in 17 24 27 28 31 34 35; do plats+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${plats[@]}" --platform manylinux2014_x86_64 -d "$carry/whl" \
  tilelang==0.1.15 apache-tvm-ffi==0.1.12 torch-c-dlpack-ext==0.1.5 z3-solver==4.15.4.0
site=$(mktemp -d)
for w in "$carry"/whl/*.whl; do unzip -q -o "$w" -d "$site"; done
# Not needed to import: z3's command-line tool and headers (.data), a duplicate of libz3 (made a link), caches.
rm -rf "$site"/*.data "$site/build_backend.py"
find "$site" -name __pycache__ -prune -exec rm -rf {} +
if [ -f "$site/z3/lib/libz3.so.4.15" ] && cmp -s "$site/z3/lib/libz3.so" "$site/z3/lib/libz3.so.4.15"; then
  ln -sf libz3.so.4.15 "$site/z3/lib/libz3.so"
fi
tar -C "$site" -cf - . | xz -T0 -6 > "$carry/tilelang-site.tar.xz"
rm -rf "$site" "$carry/whl"
rm -rf "$carry/TileKernels" && mkdir -p "$carry/TileKernels"
if [ -d "$src/.git" ] || [ -f "$src/HEAD" ]; then
  gitdir=$src; [ -d "$src/.git" ] && gitdir=$src/.git
  git --git-dir="$gitdir" archive HEAD tile_kernels tests pyproject.toml | tar -x -C "$carry/TileKernels"
  git --git-dir="$gitdir" rev-parse HEAD > "$carry/TileKernels/COMMIT"
else
  cp -r "$src/tile_kernels" "$src/tests" "$carry/TileKernels/"
fi
du -sh "$carry"/*
