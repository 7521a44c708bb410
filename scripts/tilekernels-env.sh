#!/usr/bin/env bash
# Unpacks the carried tilelang (CARRY/tilelang-site.tar.xz) once into /tmp/tilekernels-site, adds the shim
# module tilelang/utils/target.py (TileKernels' April 2026 head imports determine_target from there; tilelang
# 0.1.15 has it in tilelang.backend.target) and prints the folder to put on PYTHONPATH.
#   site=$(bash scripts/tilekernels-env.sh CARRY)
carry=${1:?carry folder}
site=${TK_SITE:-/tmp/tilekernels-site}
if [ ! -f "$site/.unpacked" ]; then
  mkdir -p "$site" && tar -C "$site" -xJf "$carry/tilelang-site.tar.xz" && touch "$site/.unpacked" \
    || { echo "tilekernels-env: cannot unpack $carry/tilelang-site.tar.xz" >&2; exit 1; }
fi
shim="$site/tilelang/utils/target.py"
if [ ! -f "$shim" ]; then
  echo 'from tilelang.backend.target import determine_target  # noqa: F401  (moved in tilelang 0.1.15)' > "$shim"
fi
echo "$site"
