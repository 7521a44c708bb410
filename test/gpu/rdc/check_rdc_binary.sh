#!/usr/bin/env bash
# The -rdc test program as linked: exactly EXPECTED units (one launcher each), one device-state registration
# for the whole binary (inline, not one per unit) and one device state, libtshmem_device.a's.
# Usage: check_rdc_binary.sh BINARY EXPECTED
set -euo pipefail
binary=$1
expected=$2
units=$(nm -C "$binary" | grep -cE ' T rdc_unit_put_[0-9]+\(int\*\)$' || true)
registrations=$(nm -C "$binary" | grep -cE '^[0-9a-f]+ [A-Za-z] tshmemi::binary::state_registration$' || true)
states=$(nm -C "$binary" | grep -cE '^[0-9a-f]+ [A-Za-z] tshmemi::binary::state_in_libtshmem_device$' || true)
echo "units: $units (expected $expected), device-state registrations: $registrations (expected 1)," \
  "device states from libtshmem_device.a: $states (expected 1)"
if [[ $units -ne $expected || $registrations -ne 1 || $states -ne 1 ]]; then
  echo "FAIL: $binary"
  exit 1
fi
echo "PASS: $binary"
