"""TileKernels and tshmem_moe on the same tensors with the same timing, one table with ratios (GPU host).

    PYTHONPATH=<tilelang site>:<tshmem_moe site>:<TileKernels checkout>:perftest/moe python3 side_by_side.py
    (scripts/tilekernels-gpu.sh sets this up.)  Options: --rep N (default 30), --iters N (back-to-back calls,
    default 100), --only SUBSTRING, --no-tk-shapes, --json FILE, --budget-s S (start no row after S seconds).

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
"""
import argparse
import json
import math
import re
import sys
import time

import torch

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


# ---- rows: (kernel, shape, make) where make(impl) returns a zero-argument callable ----------------------

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
    rows.append(('get_fused_mapping', shape + f' align=128 P={p}',
                 lambda m: lambda: m.get_fused_mapping(idx, 4, p, 128)))
    rows.append(('get_fused_mapping', shape + ' align=128 P=0 (sync)',
                 lambda m: lambda: m.get_fused_mapping(idx, 4, 0, 128)))
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
        rows.append(('get_fused_mapping', shape + ' align=128 P=0',
                     lambda m, idx=idx, e=e: lambda: m.get_fused_mapping(idx, e, 0, 128)))
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
    ap.add_argument('--budget-s', type=float, default=0, help='stop starting rows after this many seconds')
    ap.add_argument('--warm-only', action='store_true',
                    help="call TileKernels' function of each row once, untimed: fills tilelang's JIT cache "
                         '(TILELANG_CACHE_DIR) for a later table run')
    a = ap.parse_args()
    t_start = time.time()

    tk = compat.import_tile_kernels()
    import tshmem_moe
    impls = {'tshmem': tshmem_moe, 'tk': tk.moe}
    if a.warm_only:
        return warm(tk, a, t_start)
    print(f'# device {torch.cuda.get_device_name()}; torch {torch.__version__}; tshmem_moe check mode '
          f'{tshmem_moe.get_check_mode()}; kernel_us: do_bench cupti rep={a.rep} (L2 flushed); host_us/b2b_us: '
          f'{a.iters} calls back to back')
    rows = all_rows(a)
    hdr = ('| kernel | shape | tshmem kernel_us | TK kernel_us | ratio | tshmem host_us | TK host_us | ratio | '
           'tshmem b2b_us | TK b2b_us | ratio | timer |')
    print(hdr)
    print('|' + ' --- |' * 2 + ' ---: |' * 9 + ' --- |')
    out = []
    for kernel, shape, make in rows:
        if a.budget_s and time.time() - t_start > a.budget_s:
            print(f'# --budget-s {a.budget_s:.0f} spent: rows from {kernel} {shape} on not run')
            break
        res = {}
        for name, mod in impls.items():
            try:
                fn = make(mod)
                fn()  # TileKernels compiles here
                torch.cuda.synchronize()
                k_us, how = cupti_or_events(fn, a.rep)
                host, b2b = back_to_back(fn, a.iters)
                res[name] = (k_us, host, b2b, how)
            except Exception as e:  # noqa: BLE001 - a failing row is reported, the table goes on
                res[name] = None
                print(f'# {kernel} {shape} {name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}')
                if 'illegal memory access' in str(e) or 'CUDA error' in str(e):
                    print('# the CUDA context is lost: stopping the table here')
                    print_rows(out)
                    return 1

        def col(i):
            t, k = res.get('tshmem'), res.get('tk')
            ts = f'{t[i]:.2f}' if t else 'fail'
            ks = f'{k[i]:.2f}' if k else 'fail'
            r = f'{t[i] / k[i]:.2f}' if t and k and k[i] > 0 else '-'
            return [ts, ks, r]
        how = '/'.join(sorted({v[3] for v in res.values() if v}))
        line = f'| {kernel} | {shape} | ' + ' | '.join(col(0) + col(1) + col(2)) + f' | {how} |'
        print(line, flush=True)
        out.append({'kernel': kernel, 'shape': shape,
                    **{f'{n}_{f}': (v[i] if v else None) for n, v in res.items()
                       for i, f in enumerate(('kernel_us', 'host_us', 'b2b_us'))}})
    if a.json:
        with open(a.json, 'w') as f:
            for r in out:
                f.write(json.dumps(r) + '\n')
    return 0


def all_rows(a):
    rows = spec_rows() + ([] if a.no_tk_shapes else tk_benchmark_rows())
    # TileKernels' get_fused_mapping faults at T=34300 K=9 E=4 and above (tk_mapping_diag.py: its shared table
    # overflows): its rows go last, by token count, so that a lost CUDA context costs no other row.
    def tokens(shape):
        m = re.search(r'T=(\d+)', shape)
        return int(m.group(1)) if m else 0
    rows.sort(key=lambda r: (r[0] == 'get_fused_mapping', tokens(r[1]) if r[0] == 'get_fused_mapping' else 0))
    return [r for r in rows if not a.only or a.only in r[0]]


def warm(tk, a, t_start):
    n = 0
    for kernel, shape, make in all_rows(a):
        if kernel == 'get_fused_mapping':
            continue  # it faults at the spec's shape; the table run compiles its two variants itself
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
