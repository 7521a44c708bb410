"""TileKernels and tshmem_moe on the same tensors with the same timing, one table with ratios (GPU host).

    PYTHONPATH=<tilelang site>:<tshmem_moe site>:<TileKernels checkout>:src/moe/perftest python3 side_by_side.py
    (scripts/tilekernels-gpu.sh sets this up.)  Options: --rep N (default 30), --iters N (back-to-back calls,
    default 100), --only SUBSTRING[,SUBSTRING...] (the rows whose kernel name holds one), --no-tk-shapes,
    --json FILE, --budget-s S (start no row after S seconds), --isolate KERNELS (default get_fused_mapping).

Per row and implementation:
* kernel_us: TileKernels' own benchmark timer, tilelang's do_bench(fn, backend='cupti', warmup=0, rep=30): the
  GPU time of everything fn launches, summed per call by CUPTI (through torch.profiler), each call after an L2
  flush (a 256 MiB zero_(), excluded). If CUPTI fails, CUDA events around each call after the same flush
  (column `timer` says which).
* host_us: host time per call of `iters` calls queued back to back (time.perf_counter, GPU synchronised
  before and after), i.e. the Python-side cost a caller pays per call.
* b2b_us: CUDA-event time per call of the same back-to-back calls (L2 warm).
ratio = tshmem_moe / TileKernels (< 1: tshmem_moe is faster). Inputs are built once per row with torch and
TileKernels' own generator (generate_topk_idx) and passed to both; in-place inplace_unique_group_indices is
given a fresh copy each call (the copy is inside both timings).

Rows of the --isolate kernels (TileKernels' get_fused_mapping faults at some shapes and loses its process's CUDA
context): tshmem_moe's side is measured here, TileKernels' side right after it in a worker process
(row_workers.py) on the same tensors (saved with torch.save), so a fault costs only TileKernels' cell of that
row ('TK faults (illegal memory access)') and the next worker (started in advance) measures the next row.
"""
import argparse
import json
import math
import os
import re
import sys
import tempfile
import time

import torch

import row_workers
import tilekernels_compat as compat


def cupti_or_events(fn, rep):
    """Kernel time per call in us, and the method."""
    try:
        from tilelang.profiler.bench import do_bench
        t = do_bench(fn, backend='cupti', warmup=0, rep=rep) * 1e3
        if t > 0 and math.isfinite(t):
            return t, 'cupti'
    except Exception as e:  # noqa: BLE001 - any profiler failure falls back to events
        print(f'# cupti timing failed ({type(e).__name__}: {e}); CUDA events instead', file=sys.stderr)
    cache = torch.empty(256 << 20, dtype=torch.int8, device='cuda')
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(rep)]
    fn()
    for s, e in ev:
        cache.zero_()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sum(s.elapsed_time(e) for s, e in ev) / rep * 1e3, 'events'


def measure(fn, a):
    """(kernel_us, host_us, b2b_us, timer) of fn; its first call compiles (TileKernels) outside the timing."""
    fn()
    torch.cuda.synchronize()
    k_us, how = cupti_or_events(fn, a.rep)
    host, b2b = back_to_back(fn, a.iters)
    return k_us, host, b2b, how


def back_to_back(fn, iters):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    s.record()
    for _ in range(iters):
        fn()
    host = (time.perf_counter() - t0) / iters * 1e6
    e.record()
    torch.cuda.synchronize()
    return host, s.elapsed_time(e) / iters * 1e3


# ---- rows: (kernel, shape, make[, args]) where make(impl) returns a zero-argument callable ----------------


def call_row(kernel, shape, *args):
    """A row that calls impl.kernel(*args): its arguments can be saved for a worker process (--isolate)."""
    return kernel, shape, lambda m: lambda: getattr(m, kernel)(*args), args

def topk_idx_tk(send, k, e_local, ranks):
    from tile_kernels.testing.generator import generate_topk_idx
    gen = getattr(generate_topk_idx, '_torchdynamo_orig_callable', generate_topk_idx)  # same math, no compile
    torch.manual_seed(0)
    return gen({'num_send_tokens': send, 'num_topk': k, 'num_experts': e_local, 'num_ep_ranks': ranks})


def distinct_topk(t, k, e, seed):
    g = torch.Generator(device='cuda').manual_seed(seed)
    return torch.rand(t, e, device='cuda', generator=g).topk(k, dim=1).indices


def spec_rows():
    rows = []
    t = 8001
    for e, k in ((256, 8), (72, 6)):
        s = torch.randn(t, e, device='cuda')
        rows.append(('topk_gate', f'T={t} E={e} K={k}', lambda m, s=s, k=k: lambda: m.topk_gate(s, k)))
    s3 = torch.randn(t, 8, 32, device='cuda')
    rows.append(('topk_sum_and_topk_group_idx', f'T={t} G=8 Epg=32 sum2 top4',
                 lambda m: lambda: m.topk_sum_and_topk_group_idx(s3, 2, 4)))
    bias = torch.randn(256, device='cuda')
    for rows_t in (t, 36):
        logits = torch.randn(rows_t, 256, device='cuda')
        mask = torch.ones(rows_t, dtype=torch.bool, device='cuda')
        if rows_t == 36:
            mask[32:] = False
        pmap = torch.arange(258, dtype=torch.int32, device='cuda')[:, None].repeat(1, 33).contiguous()
        cnt = torch.ones(258, dtype=torch.int32, device='cuda')
        rows.append(('top2_sum_gate', f'T={rows_t} R=256 G=8/4 K=8 S=2 sigmoid',
                     lambda m, lg=logits, mk=mask, pm=pmap, c=cnt: lambda: m.top2_sum_gate(
                         lg, bias, 8, 4, 8, True, 2, 1.5, 0, 4, 1, 2, 'sigmoid', mask=mk, to_physical_map=pm,
                         logical_count=c)))
    idx = topk_idx_tk(4001, 9, 4, 64)  # the spec's largest moe-params case: about 34.3 k rows
    shape = f'T={idx.shape[0]} K=9 E=4'
    w = torch.rand(idx.shape, device='cuda')
    rows += [
        ('group_count', shape, lambda m: lambda: m.group_count(idx, 4)),
        ('aux_fi', shape, lambda m: lambda: m.aux_fi(idx, 4, 9)),
        ('normalize_weight', shape, lambda m: lambda: m.normalize_weight(w)),
        ('mask_indices_by_tp', shape + ' n=256 ep=64 tp=2', lambda m: lambda: m.mask_indices_by_tp(idx, 256, 64, 1, 2)),
    ]
    g = distinct_topk(idx.shape[0], 9, 256, 4) // 32
    rows.append(('inplace_unique_group_indices', f'T={idx.shape[0]} K=9 G=8 (+copy)',
                 lambda m: lambda: m.inplace_unique_group_indices(g.clone(), 8)))
    p = idx.shape[0] * 9 + 127 * 4
    rows.append(call_row('get_fused_mapping', shape + f' align=128 P={p}', idx, 4, p, 128))
    rows.append(call_row('get_fused_mapping', shape + ' align=128 P=0 (sync)', idx, 4, 0, 128))
    k, e, h = 6, 32, 7168
    idx6 = distinct_topk(t, k, e, 5)
    import tshmem_moe
    mp = tshmem_moe.get_fused_mapping(idx6, e, 0, 128)
    x = torch.randn(t, h, device='cuda').to(torch.bfloat16)
    x8 = torch.randn(t, h, device='cuda').to(torch.float8_e4m3fn)
    sf = torch.rand(t, h // 128, device='cuda')
    xf = torch.randn(mp[0].shape[0], h, device='cuda').to(torch.bfloat16)
    wk = torch.full((t, k), 0.25, device='cuda')
    shape = f'T={t} H={h} K={k} P={mp[0].shape[0]}'
    rows += [
        ('expand_to_fused', shape + ' bf16', lambda m: lambda: m.expand_to_fused(x, mp[3], mp[0])),
        ('expand_to_fused_with_sf', shape + ' fp8 npc=128',
         lambda m: lambda: m.expand_to_fused_with_sf((x8, sf), 128, mp[3], mp[0])),
        ('reduce_fused', shape + ' bf16 weights', lambda m: lambda: m.reduce_fused(xf, wk, mp[3])),
    ]
    return rows


def tk_benchmark_rows():
    """A subset of TileKernels' own benchmark parameters (tests/moe/*: is_benchmark=True)."""
    from tile_kernels.testing.generator import generate_moe_params
    rows = []
    for e, k in ((72, 6), (32, 6), (128, 6)):
        s = torch.randn(8001, e, device='cuda')
        rows.append(('topk_gate', f'TK T=8001 E={e} K={k}', lambda m, s=s, k=k: lambda: m.topk_gate(s, k)))
    for prm in generate_moe_params(is_benchmark=True):
        idx = topk_idx_tk(prm['num_send_tokens'], prm['num_topk'], prm['num_experts'], prm['num_ep_ranks'])
        e = prm['num_experts']
        shape = f'TK T={idx.shape[0]} K={prm["num_topk"]} E={e}'
        rows.append(call_row('get_fused_mapping', shape + ' align=128 P=0', idx, e, 0, 128))
        if prm['num_topk'] == 2 and e == 9:  # the smallest of TileKernels' shapes for the small kernels
            k, n, ranks = prm['num_topk'], e * prm['num_ep_ranks'], prm['num_ep_ranks']
            w = torch.rand(idx.shape, device='cuda')
            rows += [
                ('group_count', shape, lambda m, idx=idx, e=e: lambda: m.group_count(idx, e)),
                ('aux_fi', shape, lambda m, idx=idx, e=e, k=k: lambda: m.aux_fi(idx, e, k)),
                ('normalize_weight', shape, lambda m, w=w: lambda: m.normalize_weight(w)),
                ('mask_indices_by_tp', shape + f' n={n} ep={ranks} tp=2',
                 lambda m, idx=idx, n=n, ranks=ranks: lambda: m.mask_indices_by_tp(idx, n, ranks, 1, 2)),
            ]
        if prm['num_topk'] == 6:
            mp = compat_mapping(idx, e)
            x = torch.randn(idx.shape[0], 7168, device='cuda').to(torch.bfloat16)
            xr = torch.randn(idx.shape[0] * 6, 7168, device='cuda').to(torch.bfloat16)
            ttp1 = compat_mapping(idx, e, alignment=1)[3]
            w = torch.rand(idx.shape, device='cuda')
            rows.append(('expand_to_fused', shape + ' H=7168 bf16 align=16',
                         lambda m, x=x, mp=mp: lambda: m.expand_to_fused(x, mp[3], mp[0])))
            rows.append(('reduce_fused', shape + ' H=7168 bf16 weights P=T*K',
                         lambda m, xr=xr, w=w, ttp=ttp1: lambda: m.reduce_fused(xr, w, ttp)))
    return rows


def compat_mapping(idx, e, alignment=16):
    import tshmem_moe
    return tshmem_moe.get_fused_mapping(idx, e, 0, alignment)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--rep', type=int, default=30)
    ap.add_argument('--iters', type=int, default=100)
    ap.add_argument('--only', default='')
    ap.add_argument('--no-tk-shapes', action='store_true')
    ap.add_argument('--json', default='')
    ap.add_argument('--budget-s', type=float, default=0, help='start no row after this many seconds')
    ap.add_argument('--isolate', default='get_fused_mapping',
                    help="comma-separated kernels whose TileKernels side runs in worker processes ('' none)")
    ap.add_argument('--row-timeout-s', type=float, default=90,
                    help='an isolated TileKernels cell that takes longer is reported as a fault')
    ap.add_argument('--warm-only', action='store_true',
                    help="call TileKernels' function of each row once, untimed: fills tilelang's JIT cache "
                         '(TILELANG_CACHE_DIR) for a later table run')
    ap.add_argument('--tk-worker', default='', metavar='ROWS_FILE', help=argparse.SUPPRESS)
    a = ap.parse_args()
    t_start = time.time()
    if a.tk_worker:
        return tk_worker(a)

    tk = compat.import_tile_kernels()
    import tshmem_moe
    impls = {'tshmem': tshmem_moe, 'tk': tk.moe}
    if a.warm_only:
        return warm(tk, a, t_start)
    print(f'# device {torch.cuda.get_device_name()}; torch {torch.__version__}; tshmem_moe check mode '
          f'{tshmem_moe.get_check_mode()}; kernel_us: do_bench cupti rep={a.rep} (L2 flushed); host_us/b2b_us: '
          f'{a.iters} calls back to back')
    rows = all_rows(a)
    isolate = {k for k in a.isolate.split(',') if k}
    isolated = [r for r in rows if r[0] in isolate and r[3] is not None]
    worker_row = {id(r): j for j, r in enumerate(isolated)}  # rows hold tensors: compared by identity
    pool, rows_file = start_workers(a, isolated)
    hdr = ('| kernel | shape | tshmem kernel_us | TK kernel_us | ratio | tshmem host_us | TK host_us | ratio | '
           'tshmem b2b_us | TK b2b_us | ratio | timer |')
    print(hdr)
    print('|' + ' --- |' * 2 + ' ---: |' * 9 + ' --- |')
    out = []
    rc = 0
    try:
        for row in rows:
            kernel, shape, make = row[:3]
            if a.budget_s and time.time() - t_start > a.budget_s:
                print(f'# --budget-s {a.budget_s:.0f} spent: rows from {kernel} {shape} on not run')
                break
            res = {}
            for name, mod in impls.items():
                if name == 'tk' and id(row) in worker_row:
                    continue
                try:
                    res[name] = measure(make(mod), a)
                except Exception as e:  # noqa: BLE001 - a failing row is reported, the table goes on
                    msg = f'{type(e).__name__}: {str(e).splitlines()[0][:200]}'
                    res[name] = None
                    print(f'# {kernel} {shape} {name}: {msg}')
                    if row_workers.context_lost(msg):
                        print('# the CUDA context is lost: stopping the table here')
                        rc = 1
                        break
            if rc:
                break
            if id(row) in worker_row:  # TileKernels' side in a worker process: a fault ends only that worker
                reply = pool.run(worker_row[id(row)])
                if 'res' in reply:
                    res['tk'] = tuple(reply['res'])
                else:
                    res['tk_cell'] = row_workers.fault_cell(reply['error'])
                    print(f'# {kernel} {shape} tk (worker process): {reply["error"][:200]}')
            out.append(print_row(kernel, shape, res))
    finally:
        if pool:
            pool.close()
            os.unlink(rows_file)
            print(f'# isolated rows ({",".join(sorted(isolate))}): TileKernels side in {pool.spawned} worker '
                  'process(es)')
    if rc:
        print_rows(out)
        return rc
    if a.json:
        with open(a.json, 'w') as f:
            for r in out:
                f.write(json.dumps(r) + '\n')
    return 0


def print_row(kernel, shape, res):
    """Prints one table line; returns its JSON record. res: name -> (kernel_us, host_us, b2b_us, timer) or
    None; 'tk_cell': the text of TileKernels' cells when it has no figures (a fault)."""
    t, k = res.get('tshmem'), res.get('tk')
    tk_cell = res.get('tk_cell')

    def col(i):
        ts = f'{t[i]:.2f}' if t else 'fail'
        ks = f'{k[i]:.2f}' if k else (('TK ' + tk_cell) if tk_cell and i == 0 else '-' if tk_cell else 'fail')
        r = f'{t[i] / k[i]:.2f}' if t and k and k[i] > 0 else '-'
        return [ts, ks, r]
    how = '/'.join(sorted({v[3] for n, v in res.items() if n in ('tshmem', 'tk') and v}))
    print(f'| {kernel} | {shape} | ' + ' | '.join(col(0) + col(1) + col(2)) + f' | {how} |', flush=True)
    rec = {'kernel': kernel, 'shape': shape}
    for n in ('tshmem', 'tk'):
        if n in res or (n == 'tk' and tk_cell):
            v = res.get(n)
            rec.update({f'{n}_{f}': (v[i] if v else None) for i, f in enumerate(('kernel_us', 'host_us', 'b2b_us'))})
    if tk_cell:
        rec['tk_note'] = tk_cell
    return rec


def start_workers(a, isolated):
    """Saves the isolated rows' arguments and starts the first worker (it imports while the table runs)."""
    if not isolated:
        return None, None
    fd, rows_file = tempfile.mkstemp(prefix='tk-rows-', suffix='.pt')
    os.close(fd)
    torch.save([(r[0], r[1], r[3]) for r in isolated], rows_file)
    argv = [sys.executable, os.path.abspath(__file__), '--tk-worker', rows_file, '--rep', str(a.rep),
            '--iters', str(a.iters)]
    return row_workers.WorkerPool(argv, a.row_timeout_s), rows_file


def tk_worker(a):
    """Worker process: TileKernels' side of isolated rows (row_workers.serve's protocol on the real stdout;
    anything a library prints goes to stderr)."""
    proto = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    tk = compat.import_tile_kernels()
    rows = torch.load(a.tk_worker, map_location='cpu')

    def handle(i):
        kernel, shape, args = rows[i]
        try:
            args = tuple(x.cuda() if torch.is_tensor(x) else x for x in args)
            k_us, host, b2b, how = measure(lambda: getattr(tk.moe, kernel)(*args), a)
            return {'i': i, 'res': [k_us, host, b2b, how]}
        except Exception as e:  # noqa: BLE001 - reported in the row's cell
            msg = f'{type(e).__name__}: {str(e).splitlines()[0][:200]}'
            return {'i': i, 'error': msg, 'fatal': row_workers.context_lost(msg)}
    return row_workers.serve(handle, sys.stdin, proto)


def all_rows(a):
    rows = spec_rows() + ([] if a.no_tk_shapes else tk_benchmark_rows())
    rows = [r if len(r) == 4 else (*r, None) for r in rows]
    # TileKernels' get_fused_mapping faults at T=10003 K=2 E=4 and T=34300 K=9 E=4 (tk_mapping_diag.py: its
    # shared table overflows): its rows go last, by token count (their TileKernels side runs in workers).
    def tokens(shape):
        m = re.search(r'T=(\d+)', shape)
        return int(m.group(1)) if m else 0
    rows.sort(key=lambda r: (r[0] == 'get_fused_mapping', tokens(r[1]) if r[0] == 'get_fused_mapping' else 0))
    only = [o for o in a.only.split(',') if o]
    return [r for r in rows if not only or any(o in r[0] for o in only)]


def warm(tk, a, t_start):
    n = 0
    for kernel, shape, make, _ in all_rows(a):
        if kernel in a.isolate.split(','):
            continue  # it faults at some shapes; the table's workers compile it (into the same cache)
        try:
            make(tk.moe)()
            torch.cuda.synchronize()
            n += 1
        except Exception as e:  # noqa: BLE001 - the table run reports it
            print(f'# warm {kernel} {shape}: {type(e).__name__}: {str(e).splitlines()[0][:200]}')
            if 'illegal memory access' in str(e) or 'CUDA error' in str(e):
                break
    print(f'# warmed {n} TileKernels rows in {time.time() - t_start:.0f} s')
    return 0


def print_rows(out):
    for r in out:
        print(json.dumps(r))


if __name__ == '__main__':
    sys.exit(main())
