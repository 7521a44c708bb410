#!/usr/bin/env bash
# A change must not make the on-node path slower (the off-node proxy was checked this way): builds the device
# perftest of two source trees and runs their on-node rows alternately (old, new, old, new, ...) in one job,
# then prints old / new per row with the ratio and the old tree's own spread between its runs (the noise floor).
#   scripts/offnode-ab.sh OLD [NEW] [--rounds N] [--out DIR]
#     OLD   a source tree of the commit to compare against: a folder, or a tarball of one (.tar, .tar.gz),
#           e.g. from  git archive -o ab-old.tar.gz <commit>
#     NEW   a source tree, default: this checkout
#     --rounds N   runs of each side per row (default 2); --out DIR  logs (default $OUT/offnode-ab, ./offnode-ab)
# Builds only the perftest targets it runs, both trees at once (half the cores each), in /tmp/tshmem-ab, both
# for the architectures the NEW tree's gpu preset decides (TSHMEM_CUDA_ARCH, else the GPUs here).
# Rows: put_bw, p_latency, atomic_latency at 1 PE (their local rows: the GPU's own memory through the peer
# table, the on-node code path) or at 2 PEs with 2+ GPUs; put_signal_ping_pong_latency and p_ping_pong_latency
# at 2 PEs (on a 1-GPU host sharing it, TSHMEM_ALLOW_SHARED_GPU=1: time-sliced, see the spread column).
# TSHMEM_AB_BUILD_ONLY=1 stops after the builds. Verdict per row: "same" when new is within 1 % of old (or within the spread), else "SLOWER" / "faster".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old="" new="" rounds=2 out=${OUT:+$OUT/offnode-ab}
out=${out:-$PWD/offnode-ab}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "offnode-ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) if [ -z "$old" ]; then old=$1; elif [ -z "$new" ]; then new=$1; else
         echo "offnode-ab.sh: one OLD and at most one NEW tree, got '$1' too" >&2; exit 2; fi; shift ;;
  esac
done
[ -n "$old" ] || { echo "offnode-ab.sh: no OLD tree given (see --help)" >&2; exit 2; }
new=${new:-$root}
case "$rounds" in ''|*[!0-9]*|0) echo "offnode-ab.sh: --rounds takes a positive count, got '$rounds'" >&2; exit 2 ;; esac
work=${TSHMEM_AB_DIR:-/tmp/tshmem-ab}
mkdir -p "$out" "$work"
rm -f "$out"/*.log "$out"/*.jsonl

# A tree from a folder or a tarball (unpacked once into $work/src-<side>).
tree() {
  local side=$1 from=$2
  if [ -d "$from" ]; then (cd "$from" && pwd); return; fi
  [ -f "$from" ] || { echo "offnode-ab.sh: $side tree '$from' is neither a folder nor a file" >&2; return 1; }
  rm -rf "$work/src-$side" && mkdir -p "$work/src-$side"
  tar -xf "$from" -C "$work/src-$side" || { echo "offnode-ab.sh: cannot unpack $from" >&2; return 1; }
  # git archive --prefix=... leaves one folder: use it
  local top
  top=$(find "$work/src-$side" -mindepth 1 -maxdepth 1)
  if [ "$(echo "$top" | wc -l)" = 1 ] && [ -d "$top" ] && [ -f "$top/CMakeLists.txt" ]; then echo "$top"; else echo "$work/src-$side"; fi
}
old_src=$(tree old "$old") || exit 2
new_src=$(tree new "$new") || exit 2
for t in "$old_src" "$new_src"; do
  if [ ! -f "$t/CMakeLists.txt" ] || [ ! -d "$t/perftest/device" ]; then
    echo "offnode-ab.sh: $t is not a tshmem source tree" >&2; exit 2
  fi
done

export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on the shared host
export TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-1G}
unset TSHMEM_DEBUG_NODE_SIZE  # on-node rows
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
gpus=${gpus:-0}
build_only=${TSHMEM_AB_BUILD_ONLY:-0}  # 1: stop after the builds (a check of the script where there is no GPU)
[ "$gpus" -ge 1 ] || [ "$build_only" = 1 ] || { echo "offnode-ab.sh: no GPU here: the on-node rows need one" >&2; exit 2; }
cores=$(nproc)
half=$(( cores / 2 > 1 ? cores / 2 : 1 ))

# Row sets: "bench PEs options".
one=1
[ "$gpus" -ge 2 ] && one=2
rows=(
  "put_bw $one -b 64K -e 64M -f 4 -n 50 -w 5 -t 1024"
  "p_latency $one -b 4 -e 64 -f 4 -n 1000 -w 100 -t 1024 -d int"
  "atomic_latency $one -n 1000 -w 100 -d long"
  "put_signal_ping_pong_latency 2 -b 8 -e 512 -f 8 -n 200 -w 20 -t 1024"
  "p_ping_pong_latency 2 -n 300 -w 30"
)
targets=""
for r in "${rows[@]}"; do targets="$targets tshmem_${r%% *}"; done

echo "== build the perftest of both trees ($half cores each): old $old_src, new $new_src"
start=$SECONDS
# configure_side <side> <tree> [architectures]: the gpu preset where the tree has CMakePresets.json, else (a tree
# from before the presets) the same options by hand.
configure_side() {
  local side=$1 src=$2 arch=${3:-} dir="$work/build-$1"
  if [ -f "$src/CMakePresets.json" ]; then
    cmake -S "$src" --preset gpu -B "$dir" ${arch:+"-DTSHMEM_CUDA_ARCH=$arch"} -DTSHMEM_BUILD_TESTS=OFF \
      -DTSHMEM_BUILD_MOE=OFF > "$out/configure-$side.log" 2>&1
  else
    cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTSHMEM_ENABLE_CUDA=ON \
      ${arch:+"-DCMAKE_CUDA_ARCHITECTURES=$arch"} -DTSHMEM_BUILD_TESTS=OFF -DTSHMEM_BUILD_MOE=OFF \
      > "$out/configure-$side.log" 2>&1
  fi
}
build_side() {
  # shellcheck disable=SC2086  # a list of targets
  cmake --build "$work/build-$1" -j "$half" --target $targets > "$out/build-$1.log" 2>&1
}
# The new tree decides the architectures; the old one is built for the same.
configure_side new "$new_src" || { echo "new tree: configure failed:"; tail -n 20 "$out/configure-new.log"; exit 1; }
cache="$work/build-new/CMakeCache.txt"
arch=$(sed -n 's/^TSHMEM_CUDA_ARCHITECTURES:INTERNAL=//p' "$cache")
[ -n "$arch" ] || arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$cache")
echo "CUDA architectures: ${arch:-as each tree decides}"
configure_side old "$old_src" "$arch" || { echo "old tree: configure failed:"; tail -n 20 "$out/configure-old.log"; exit 1; }
build_side old & old_pid=$!
build_side new & new_pid=$!
ok=1
wait $old_pid || { echo "old tree: build failed:"; tail -n 20 "$out/configure-old.log" "$out/build-old.log"; ok=0; }
wait $new_pid || { echo "new tree: build failed:"; tail -n 20 "$out/configure-new.log" "$out/build-new.log"; ok=0; }
[ "$ok" = 1 ] || exit 1
echo "built in $((SECONDS - start)) s"
[ "$build_only" = 1 ] && exit 0

shared=""
[ "$gpus" -lt 2 ] && shared="TSHMEM_ALLOW_SHARED_GPU=1"
echo "== runs: $rounds per side, alternating old/new ($gpus GPU(s)${shared:+; 2-PE rows share GPU 0})"
status=0
for r in "${rows[@]}"; do
  read -r bench np args <<< "$r"
  for ((i = 1; i <= rounds; i++)); do
    for side in old new; do
      bin="$work/build-$side/perftest/device/tshmem_$bench"
      log="$out/$bench.$side.$i.log"
      # shellcheck disable=SC2086  # args are the row's words
      env ${shared:+$shared} timeout -k 10 120 "$root/scripts/tshmemrun" -np "$np" -- "$bin" $args \
        --json "$out/$side.$i.jsonl" < /dev/null > "$log" 2>&1
      rc=$?
      [ "$rc" = 0 ] || { echo "   $bench ($side, run $i): rc=$rc"; tail -3 "$log" | sed 's/^/      /'; status=1; }
    done
  done
done

echo "== on-node rows, old vs new (best of $rounds runs each; spread: the old runs' own difference)"
python3 - "$out" "$rounds" <<'PY'
import json, sys, glob, os
out, rounds = sys.argv[1], int(sys.argv[2])
best, runs = {}, {}
order = []
for side in ("old", "new"):
    for i in range(1, rounds + 1):
        path = os.path.join(out, f"{side}.{i}.jsonl")
        if not os.path.exists(path):
            continue
        for line in open(path):
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("lib") != "tshmem" or row.get("build") != "default":
                continue
            skip = {"bench", "lib", "build", "table", "metric", "value", "ctas", "threads", "iters", "bidir", row.get("metric")}
            key = (row["bench"], row["table"], " ".join(str(v) for k, v in row.items() if k not in skip), row["metric"])
            if key not in order:
                order.append(key)
            runs.setdefault((key, side), []).append(float(row["value"]))
print(f"{'bench':30} {'row':24} {'metric':16} {'old':>10} {'new':>10} {'new/old':>8} {'spread':>7}  verdict")
worse = 0
for key in order:
    o, n = runs.get((key, "old"), []), runs.get((key, "new"), [])
    if not o or not n:
        continue
    higher_better = "GB/s" in key[3] or "BW" in key[3] or "rate" in key[3]
    pick = max if higher_better else min
    bo, bn = pick(o), pick(n)
    ratio = bn / bo if bo else float("nan")
    spread = (max(o) - min(o)) / bo if bo and len(o) > 1 else 0.0
    slack = max(0.01, spread)
    loss = (1 - ratio) if higher_better else (ratio - 1)
    verdict = "same" if abs(loss) <= slack else ("SLOWER" if loss > 0 else "faster")
    worse += verdict == "SLOWER"
    print(f"{key[0]:30} {key[2][:24]:24} {key[3][:16]:16} {bo:10.3f} {bn:10.3f} {ratio:8.3f} {100*spread:6.1f}%  {verdict}")
print(f"rows slower by more than 1 % (and than the spread): {worse}")
PY
exit $status
