#!/usr/bin/env bash
# The across-node perftest rows in one run: PE 1 on another "node" (TSHMEM_DEBUG_NODE_SIZE=1, 2 PEs), over each
# remote transport side by side: "vader" and "tcp" are the mpi transport over Open MPI's shared-memory and tcp
# transports (OMPI_MCA_btl), "ucx" the ucx transport (UCX_TLS as set, else UCX's choice; where the build has it).
# The limits of the staged path are measured in the same run. Then the host rows (put+quiet and get latency 8 B -
# 4 KiB, put/get bandwidth 4 KiB - 64 MiB: perftest/host/host_shmem.cc), in --rounds alternating rounds, on each
# transport and on Open MPI's OpenSHMEM (its twin, over UCX, where oshcc was found) twice: at its defaults (on one
# host UCX lets it map its peers' heaps: a put is a store) and over the transports the ucx column uses (--ucx-tls,
# the network between nodes). Two tables: every row with its target and bandwidth as % of the smallest limit; then
# the host rows side by side (each the median of the rounds) with the ratios of ucx to each of the others (each the
# median of the rounds' own ratios), then each round's figures of the 8-byte rows and the largest size.
#   scripts/offnode-perf.sh [--out DIR] [--btl "vader ucx"] [--build DIR] [--with-tests] [--ucx-prefix DIR]
#                           [--ucx-tls TLS] [--rounds N] [--host-max SIZE] [--host-only]
#   --btl         the transports compared (default: vader, and ucx where built)
#   --ucx-prefix  configure the build against the UCX under DIR (DIR/lib/pkgconfig/ucx.pc: a libucx wheel)
#   --with-tests  first build and run `ctest -L offnode` (the proxy's CPU tests, the device suites across
#                 nodes) in the same build: correctness and speed of the off-node path in one call
#   --ucx-tls     UCX_TLS of the host rows' ucx column and of the second OpenSHMEM column (default tcp,self: PEs of
#                 other nodes reach each other over a network; "default": UCX's choice, one OpenSHMEM column). Each
#                 log says which UCX transports the off-node endpoint took (UCX_LOG_LEVEL=info, ep_cfg).
#   --rounds      rounds of every row, the transports (and the host rows' columns) alternating within each
#                 (default 1; the tables take the median of the rounds, a ratio the median of each round's own)
#   --host-max    the host rows' largest size (default 64M; host_bw's too, where smaller)
#   --host-only   the host rows only (no limits, device-channel or bandwidth benchmarks, no first table)
# On a GPU host (the heap is vmm; 2 PEs share one GPU where there is one, TSHMEM_ALLOW_SHARED_GPU=1):
# tshmem_staged_limits, device put_bw / get_bw (1 .. 64 MiB), p ping-pong, putmem + quiet (8 B), the proxy's
# p request rate (tshmem_proxy_rate), host tshmem_putmem / getmem (1 .. 64 MiB) and host put + quiet.
# Without a GPU (the heap is shm): the same limits (memcpy instead of PCIe copies), host put/get, and the
# device-channel rows driven by CPU producers (tshmem_host_proxy: p rate, p ping-pong, put + quiet, put bandwidth).
# Builds the targets it needs in --build (default /tmp/tshmem-offnode-build) unless built there already.
# Targets of the off-node path: put/get bandwidth at >= 16 MiB >= 70 % of the smallest limit; p ping-pong and 8-byte
# put + quiet <= 15 us (half round trip) over shared memory; >= 0.5 M p/s through one proxy.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:+$OUT/offnode-perf}
out=${out:-$PWD/offnode-perf}
btls=""
ucx_prefix=""
build=${TSHMEM_OFFNODE_BUILD:-/tmp/tshmem-offnode-build}
with_tests=0
ucx_tls=tcp,self
rounds=1
host_max=64M
host_only=0
few_cores_yield=${OMPI_MCA_mpi_yield_when_idle:-0}
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --btl) btls=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --with-tests) with_tests=1; shift ;;
    --ucx-prefix) ucx_prefix=$2; shift 2 ;;
    --ucx-tls) ucx_tls=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --host-max) host_max=$2; shift 2 ;;
    --host-only) host_only=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "offnode-perf.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "offnode-perf.sh: --rounds must be a positive integer, got '$rounds'" >&2; exit 2 ;; esac
# host_bw's sizes: 1 .. 64 MiB, none above --host-max (a small heap, as in the tests)
bytes_of() { numfmt --from=iec "${1%B}" 2>/dev/null || echo 0; }
host_max_bytes=$(bytes_of "$host_max")
[ "$host_max_bytes" -gt 0 ] || { echo "offnode-perf.sh: --host-max takes a size (64M, 1G, 4096), got '$host_max'" >&2; exit 2; }
bw_max=$((host_max_bytes < 64 << 20 ? host_max_bytes : 64 << 20))
bw_min=$((bw_max < 1 << 20 ? bw_max : 1 << 20))
mkdir -p "$out"
rm -f "$out"/*.log "$out"/*.jsonl

export TSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0  # never multicast on the shared host
export TSHMEM_DEBUG_NODE_SIZE=1 TSHMEM_ALLOW_SHARED_GPU=1
export PATH=/usr/local/cuda/bin:$PATH
[ -x /opt/gcc/bin/g++ ] && export CUDAHOSTCXX=/opt/gcc/bin/g++
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
gpus=${gpus:-0}
if [ "$gpus" -ge 1 ]; then
  export TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-1G}
  targets="tshmem_staged_limits tshmem_put_bw tshmem_get_bw tshmem_p_ping_pong_latency tshmem_put_latency
           tshmem_proxy_rate tshmem_host_bw tshmem_host_latency tshmem_host_shmem tshmem_get_latency tshmem_g_latency"
  cuda=ON
else
  export TSHMEM_MEM_BACKEND=shm TSHMEM_SYMMETRIC_SIZE=${TSHMEM_SYMMETRIC_SIZE:-512M}
  # Where cores are few (a development VM), two PEs, two proxies and MPI's polling in a waiting PE share
  # them: for the latency and rate rows MPI yields when it has nothing to do, or a waiting PE takes a core
  # from the path measured (not for the bandwidth rows and limits: yielding slows MPI's own copies there).
  [ "$(nproc)" -lt 8 ] && few_cores_yield=${OMPI_MCA_mpi_yield_when_idle:-1}
  targets="tshmem_host_bw tshmem_host_latency tshmem_host_proxy tshmem_host_shmem"
  cuda=ON
  # A build configured without CUDA (--build of a host-only tree) is used as it is: no staged limits then.
  if grep -qs "TSHMEM_ENABLE_CUDA:BOOL=OFF" "$build/CMakeCache.txt"; then
    cuda=OFF
  elif command -v nvcc > /dev/null; then
    targets="$targets tshmem_staged_limits"
  fi
fi

[ "$host_only" = 1 ] && targets="tshmem_host_shmem"
tests=OFF
[ "$with_tests" = 1 ] && tests=ON
start=$SECONDS
missing=""
for t in $targets; do [ -x "$build/perftest/device/$t" ] || [ -x "$build/perftest/host/$t" ] || missing="$missing $t"; done
[ "$with_tests" = 1 ] && missing=" (everything, tests on)"
if [ -n "$missing" ]; then
  echo "== build$missing in $build"
  ucx_env=()
  [ -n "$ucx_prefix" ] && ucx_env=(env PKG_CONFIG_PATH="$ucx_prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}")
  "${ucx_env[@]}" cmake -S "$root" --preset gpu -B "$build" -DTSHMEM_ENABLE_CUDA=$cuda -DTSHMEM_BUILD_TESTS=$tests \
    -DTSHMEM_BUILD_MOE=OFF > "$out/configure.log" 2>&1 \
    || { tail -20 "$out/configure.log"; exit 1; }
  # With the tests: everything (every test labelled offnode needs its binary); else the benchmarks only.
  read -r -a list <<< "--target $missing"
  [ "$with_tests" = 1 ] && list=()
  cmake --build "$build" -j "$(nproc)" "${list[@]}" > "$out/build.log" 2>&1 \
    || { grep -E "error|FAILED" -A5 "$out/build.log" | head -40; exit 1; }
  echo "built in $((SECONDS - start)) s"
fi
bin() { if [ -x "$build/perftest/device/$1" ]; then echo "$build/perftest/device/$1"; else echo "$build/perftest/host/$1"; fi; }
ucx_built=$(sed -n 's/^TSHMEM_UCX_BUILT:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -z "$btls" ]; then
  btls="vader"
  [ "$ucx_built" = ON ] && btls="vader ucx"
fi

status=0
if [ "$with_tests" = 1 ]; then
  echo "== ctest -L offnode (log: $out/ctest-offnode.log)"
  (cd "$build" && ctest -L offnode -j 4 --output-on-failure) > "$out/ctest-offnode.log" 2>&1 || status=1
  grep -E "tests passed|\*\*\*Failed|Timeout|Not Run" "$out/ctest-offnode.log" | sed 's/^/   /'
fi
# run <transport> <name> <binary> [args...]: 2 PEs, output kept; a hang is cut off after 90 s. "ucx" is the ucx
# transport (MPI only starts the job), "vader" and "tcp" the mpi transport over that Open MPI transport.
run() {
  local btl=$1 name=$2 program=$3; shift 3
  local log="$out/$btl.$name.log" t0=$SECONDS yield=${OMPI_MCA_mpi_yield_when_idle:-0}
  local transport=mpi mca=$btl
  [ "$btl" = ucx ] && transport=ucx mca=vader
  local limit=90
  case "$name" in host_proxy*|host_latency*|host_shmem*) yield=$few_cores_yield ;; esac
  case "$name" in host_shmem*) limit=300 ;; esac
  TSHMEM_REMOTE_TRANSPORT=$transport OMPI_MCA_mpi_yield_when_idle=$yield OMPI_MCA_btl=self,$mca \
    timeout -k 5 "$limit" "$root/scripts/tshmemrun" -np 2 -- "$(bin "$program")" "$@" < /dev/null > "$log" 2>&1
  local rc=$?
  printf '   %-6s %-26s rc=%s %4ss\n' "$btl" "$name" "$rc" "$((SECONDS - t0))"
  [ "$rc" = 0 ] || { tail -4 "$log" | sed 's/^/      /'; status=1; }
}

# The rows of each transport, in --rounds rounds, the transports alternating within each: two runs of one
# benchmark minutes apart on a shared host may differ by more than the transports do (a GPU both PEs share, another
# job), so a comparison takes each round's own ratio.
for r in $(seq "$rounds"); do
  [ "$host_only" = 1 ] && break
  for btl in $btls; do
    echo "== round $r: across nodes over $btl ($( [ "$gpus" -ge 1 ] && echo "vmm heap, $gpus GPU(s)" || echo "shm heap, no GPU"))"
    [ "$r" = 1 ] && [ "$btl" = ucx ] && TSHMEM_REMOTE_TRANSPORT=ucx "$build/tools/tshmem-info" 2>/dev/null \
      | grep -E "^  ucx " | sed 's/^ */   /'
    json="$out/$btl.r$r.jsonl"
    [ "$r" = 1 ] && [ -x "$(bin tshmem_staged_limits)" ] && run "$btl" staged_limits tshmem_staged_limits
    if [ "$gpus" -ge 1 ]; then
      # 50 transfers per timed launch: a launch has a fixed cost beside its transfers (the last QUIET's round
      # trip; on a GPU shared by both PEs, about one 2.2 ms time slice), which 10 left at a tenth of the time.
      run "$btl" "put_bw.r$r" tshmem_put_bw -b 1M -e 64M -f 4 -n 50 -w 5 -c 32 -t 1024 --json "$json"
      run "$btl" "get_bw.r$r" tshmem_get_bw -b 1M -e 64M -f 4 -n 50 -w 5 -c 32 -t 1024 --json "$json"
      run "$btl" "p_ping_pong.r$r" tshmem_p_ping_pong_latency -n 200 -w 20 --json "$json"
      run "$btl" "put_latency.r$r" tshmem_put_latency -b 8 -e 8 -n 200 -w 20 -s thread --json "$json"
      run "$btl" "get_latency.r$r" tshmem_get_latency -b 8 -e 8 -n 200 -w 20 -s thread --json "$json"
      run "$btl" "g_latency.r$r" tshmem_g_latency -n 200 -w 20 --json "$json"
      run "$btl" "proxy_rate.r$r" tshmem_proxy_rate -c 16 -t 256 -n 32 -w 2 --json "$json"
    else
      run "$btl" "host_proxy.r$r" tshmem_host_proxy -n 50000 -w 2000 -t 2 --json "$json"
    fi
    run "$btl" "host_bw.r$r" tshmem_host_bw -b "$bw_min" -e "$bw_max" -f 4 -n 10 -w 2 --json "$json"
    run "$btl" "host_latency.r$r" tshmem_host_latency -b 8 -e 8 -n 500 -w 50 --json "$json"
  done
done

# The host rows side by side: host_shmem on each transport and on the twin (the same program on Open MPI's
# OpenSHMEM, 2 PEs on this host), the columns alternating in each round. An OpenSHMEM program reads and writes its
# heap from the host, so it runs on the shm heap on every machine. UCX_LOG_LEVEL=info: each log names the UCX
# transports of the off-node endpoint (ep_cfg), which the summary below prints.
twin="$build/perftest/host/oshmem_host_shmem"
twin_cols=()
if [ -x "$twin" ]; then
  twin_cols=(oshmem)
  [ "$ucx_tls" != default ] && twin_cols+=(oshmem-tls)
else
  echo "== no OpenSHMEM twin: $(cat "$build/perftest/oshmem_twin.txt" 2>/dev/null || echo "not built")"
fi
# twin <column> <round>: the twin at its defaults (oshmem) or over --ucx-tls (oshmem-tls).
twin() {
  local col=$1 r=$2 t0=$SECONDS launch=(mpirun -np 2 --bind-to none) envs=()
  [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
  [ "$col" = oshmem-tls ] && envs=(-x UCX_TLS="$ucx_tls")
  local log="$out/$col.host_shmem.r$r.log"
  # osc/rdma crashes OSHMEM's MPI_Finalize here and is no part of the twin (scripts/oshmem-compare.sh says why).
  OMPI_MCA_mpi_yield_when_idle=$few_cores_yield timeout -k 5 300 "${launch[@]}" \
    -x SHMEM_SYMMETRIC_SIZE="${TSHMEM_SYMMETRIC_SIZE:-512M}" -x OMPI_MCA_osc=^rdma -x UCX_LOG_LEVEL=info \
    -x OMPI_MCA_mpi_yield_when_idle "${envs[@]}" "$twin" -e "$host_max" -n 50 -w 5 \
    --json "$out/$col.host_shmem.r$r.jsonl" < /dev/null > "$log" 2>&1
  local rc=$?
  printf '   %-10s %-22s rc=%s %4ss\n' "$col" "host_shmem, round $r" "$rc" "$((SECONDS - t0))"
  [ "$rc" = 0 ] || tail -4 "$log" | sed 's/^/      /'
}
echo "== host rows: $rounds round(s); ucx and oshmem-tls over UCX_TLS=$ucx_tls, oshmem at UCX's defaults"
for r in $(seq "$rounds"); do
  for btl in $btls; do
    (  # a subshell: the variables are this run's only
      status=0
      export TSHMEM_MEM_BACKEND=shm UCX_LOG_LEVEL=info
      [ "$btl" = ucx ] && [ "$ucx_tls" != default ] && export UCX_TLS="$ucx_tls"
      run "$btl" "host_shmem.r$r" tshmem_host_shmem -e "$host_max" -n 50 -w 5 --json "$out/$btl.host_shmem.r$r.jsonl"
      exit $status
    ) || status=1
  done
  for col in "${twin_cols[@]}"; do twin "$col" "$r"; done
done
# Which UCX transports each column's off-node endpoint used (round 1's log; the endpoint of a PE to itself, over
# self, is left out).
for col in ucx "${twin_cols[@]}"; do
  log="$out/$col.host_shmem.r1.log"
  [ -f "$log" ] || continue
  cfg=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$log" | sed 's/^ep_cfg\[[0-9]*\]: //' | grep -v '(self/memory0' | sort -u |
    head -2 | paste -sd';' -)
  printf '   %-10s off-node endpoint: %s\n' "$col" "${cfg:-(not logged)}"
done

[ "$host_only" = 0 ] && echo "== across-node table (each row the median of $rounds round(s); limits at 16 MiB from tshmem_staged_limits in the same run; % of the smallest)"
[ "$host_only" = 0 ] && python3 - "$out" "$btls" <<'PY'
import glob, json, os, re, statistics, sys
out, btls = sys.argv[1], sys.argv[2].split()

MEASURED = {"metric", "value", "iters"}  # a row is what it measures at, not what it measured


def key_of(r):
    return tuple(sorted((k, str(v)) for k, v in r.items() if k not in MEASURED and k != r.get("metric")))

def rounds_of(btl):
    """{key: [value per round]} in the order rows first appear, and each key's first row."""
    values, first = {}, {}
    paths = sorted(glob.glob(os.path.join(out, f"{btl}.r*.jsonl")), key=lambda p: int(re.search(r"\.r(\d+)\.jsonl$", p)[1]))
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            values.setdefault(key_of(r), []).append(float(r.get("value", 0)))
            first.setdefault(key_of(r), r)
    return values, first

def size_text_of(r):
    size = r.get("size(B)")
    if size is None:
        if "gets in flight" in r:  # producers/gets in flight
            return f"{r.get('producers')}/{r['gets in flight']}"
        return str(r.get("blocks x threads", r.get("producers", r.get("threads", ""))))
    return f"{int(size) >> 20} MiB" if int(size) >= 1 << 20 else f"{size} B"

print(f"{'btl':6} {'row':34} {'size':>9} {'value':>10} {'unit':8} {'% limit':>8}  {'target':22} rounds")
unmet = 0
data = {}
for btl in btls:
    limits = {}
    log = os.path.join(out, f"{btl}.staged_limits.log")
    if os.path.exists(log):
        for line in open(log):
            m = re.match(r"limits_16MiB copy_out=(\S+) copy_in=(\S+) mpi=(\S+) smallest=(\S+)", line)
            if m:
                limits = dict(zip(("copy_out", "copy_in", "mpi", "smallest"), map(float, m.groups())))
    for name in ("copy_out", "copy_in", "mpi"):
        if name in limits:
            label = {"copy_out": "limit: heap->staging copy", "copy_in": "limit: staging->heap copy",
                     "mpi": "limit: MPI host->host"}[name]
            print(f"{btl:6} {label:34} {'16 MiB':>9} {limits[name]:10.2f} {'GB/s':8} {100 * limits[name] / limits['smallest']:7.0f}%")
    smallest = limits.get("smallest")
    values, first = rounds_of(btl)
    data[btl] = values, first
    rate_tables = {}
    for key in values:
        if "rate" in first[key].get("metric", ""):
            rate_tables[first[key].get("table")] = key  # the last row of a rate table: the most blocks
    for key, vals in values.items():
        r = first[key]
        metric, value = r.get("metric", ""), statistics.median(vals)
        size = r.get("size(B)")
        label = f"{r['bench']}: {r.get('table', '')}"[:34]
        target, pct = "", ""
        if "GB/sec" in metric:
            if smallest:
                pct = f"{100 * value / smallest:7.0f}%"
            if size is not None and int(size) >= 16 << 20 and smallest:
                ok = value >= 0.7 * smallest
                target = ">= 70 %: " + ("met" if ok else "NOT met")
                unmet += not ok
            unit = "GB/s"
        elif "latency" in metric:
            unit = "us"
            if btl == "vader" and (size is None or int(size) <= 8) and ("ping-pong" in label or "quiet" in label):
                ok = value <= 15
                target = "<= 15 us: " + ("met" if ok else "NOT met")
                unmet += not ok
        elif "rate" in metric:
            unit = metric[metric.find("(") + 1:metric.rfind(")")] if "(" in metric else metric
            if metric == "rate (M p/s)" and rate_tables.get(r.get("table")) == key:
                ok = value >= 0.5
                target = ">= 0.5 M/s: " + ("met" if ok else "NOT met")
                unmet += not ok
        else:
            unit = metric
        each = "/".join(f"{v:.3g}" for v in vals)
        print(f"{btl:6} {label:34} {size_text_of(r):>9} {value:10.3f} {unit:8} {pct:>8}  {target:22} {each}")
print(f"targets not met: {unmet}")

# ucx against the mpi transport, row by row: each round's own ratio of times (bandwidth and rates inverted; below 1
# ucx is faster), the median of the rounds.
mpi = next((b for b in btls if b != "ucx"), None)
if "ucx" in data and mpi in data:
    print(f"== ucx / {mpi}, ratio of times (below 1 ucx is faster), the median of each round's own ratio")
    print(f"{'row':40} {'size':>9} {'ucx/' + mpi:>10}  rounds")
    values, first = data["ucx"]
    for key, ucx_vals in values.items():
        mpi_vals = data[mpi][0].get(key)
        if not mpi_vals:
            continue
        slower = "latency" in first[key].get("metric", "")
        ratios = [(u / m if slower else m / u) for u, m in zip(ucx_vals, mpi_vals) if u and m]
        if not ratios:
            continue
        label = f"{first[key]['bench']}: {first[key].get('table', '')}"[:40]
        print(f"{label:40} {size_text_of(first[key]):>9} {statistics.median(ratios):10.2f}  " +
              "/".join(f"{x:.2f}" for x in ratios))
PY
echo "== host rows side by side (each the median of $rounds round(s) of the slowest PE's best batch; latency in us,"
echo "   bandwidth in GB/s; ratios of times, below 1 ucx is faster, each the median of the rounds' own ratios;"
echo "   oshmem-tls: OpenSHMEM over UCX_TLS=$ucx_tls)"
python3 - "$out" "$btls" <<'PY'
import glob, json, os, statistics, sys
out, btls = sys.argv[1], sys.argv[2].split()
cols = [c for c in btls + ["oshmem", "oshmem-tls"] if glob.glob(os.path.join(out, f"{c}.host_shmem.r*.jsonl"))]
values, keys = {}, []
for c in cols:
    for path in sorted(glob.glob(os.path.join(out, f"{c}.host_shmem.r*.jsonl"))):
        for line in open(path):
            r = json.loads(line)
            if r.get("table") not in ("latency", "bandwidth"):
                continue
            key = (r["table"], r["op"], int(r["size(B)"]))
            if key not in keys:
                keys.append(key)
            values.setdefault((c, key), []).append(float(r["value"]))
data = {k: statistics.median(v) for k, v in values.items()}
# A ratio is the median of each round's ratio: the columns of one round ran minutes apart, those of two rounds may
# not. On a few shared cores one run of either library may be 2-5x slower in every row than the next (where the
# scheduler put its threads): a ratio of medians taken from different rounds swings with that, a round's own does
# less. The figures of each round are printed below the table for the 8-byte rows and the largest size.
def ratio(a, b, key, table):
    pairs = [(x, y) for x, y in zip(values.get((a, key), []), values.get((b, key), [])) if x and y]
    if not pairs:
        return None
    return statistics.median([(x / y if table == "latency" else y / x) for x, y in pairs])
mpi = next((c for c in btls if c != "ucx"), None)
ratios = [(f"ucx/{b}", "ucx", b) for b in ("oshmem", "oshmem-tls", mpi) if "ucx" in cols and b in cols]
print(f"{'row':10} {'size':>9} " + " ".join(f"{c:>10}" for c in cols) + " " + " ".join(f"{r[0]:>14}" for r in ratios))
for key in keys:
    table, op, size = key
    size_text = f"{size >> 20} MiB" if size >= 1 << 20 else (f"{size >> 10} KiB" if size >= 1024 else f"{size} B")
    vals = [data.get((c, key)) for c in cols]
    line = f"{op:10} {size_text:>9} " + " ".join(f"{v:10.3f}" if v is not None else f"{'-':>10}" for v in vals)
    for _, a, b in ratios:
        r = ratio(a, b, key, table)  # a ratio of times: latency as is, bandwidth inverted
        line += f" {r:14.2f}" if r is not None else f" {'-':>14}"
    print(line)
largest = max((k[2] for k in keys), default=0)
print("   each round's figures (round 1, 2, ...):")
for key in keys:
    table, op, size = key
    if size != 8 and size != largest:
        continue
    size_text = f"{size >> 20} MiB" if size >= 1 << 20 else (f"{size >> 10} KiB" if size >= 1024 else f"{size} B")
    cells = "; ".join(f"{c} " + "/".join(f"{v:.3g}" for v in values.get((c, key), [])) for c in cols)
    print(f"   {op} {size_text}: {cells}")
PY
echo "offnode-perf.sh: $((SECONDS - start)) s, logs in $out"
exit $status
