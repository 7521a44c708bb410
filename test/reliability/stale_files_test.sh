#!/usr/bin/env bash
# tshmem-info --stale lists a socket directory that a killed job left in $TMPDIR (its creator's pid is gone) and
# --remove-stale removes it; a directory whose creator lives is neither listed nor removed.
# Usage: stale_files_test.sh <tshmem-info>
set -u
info=$1
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
export TMPDIR=$base
dead=$(sh -c 'echo $$')  # a pid that has ended
stale="$base/tshmem-$dead-AbCdEf" live="$base/tshmem-$$-GhIjKl"
mkdir -m 700 "$stale" "$live" && touch "$stale/0" "$stale/1" "$live/0"
fail() { echo "FAIL: $*"; exit 1; }
listed=$("$info" --stale)
echo "$listed" | grep -qxF "$stale" || fail "--stale does not list $stale: $listed"
echo "$listed" | grep -qF "$live" && fail "--stale lists the live process's $live"
[ -d "$stale" ] || fail "--stale removed $stale"
removed=$("$info" --remove-stale)
echo "$removed" | grep -qxF "$stale (removed)" || fail "--remove-stale says: $removed"
[ ! -e "$stale" ] || fail "$stale is still there"
[ -d "$live/0" ] || [ -e "$live/0" ] || fail "the live process's $live lost its socket"
[ "$("$info" --stale)" = "no stale files of tshmem on this host" ] || fail "still listed after removal"
echo "PASS: listed and removed $stale; kept $live"
