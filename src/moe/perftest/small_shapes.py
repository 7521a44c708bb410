"""The small MoE kernels at TileKernels' smallest benchmark shapes, a few calls each: a driver for ncu (GPU host).

    PYTHONPATH=<tshmem_moe site>[:<tilelang site>:<TileKernels checkout>]:src/moe/perftest \
      ncu --cache-control all -k 'regex:histogram|normalize|mapping|group_count|aux_fi' --set full \
      -o moe-small python3 src/moe/perftest/small_shapes.py [--tk] [--spec] [--calls N]

Rows: group_count, aux_fi, normalize_weight and get_fused_mapping (align 128, P = 0) at T = 8131 K = 2 E = 9,
get_fused_mapping at T = 8881 K = 2 E = 32 (TileKernels' generator: 4001 tokens per rank, 8 ranks of 72 and
256 experts) and inplace_unique_group_indices at the table's T = 36007 K = 9 G = 8 (each call on a fresh copy of
the group ids), tshmem_moe's then, with --tk, TileKernels' (its torch.zeros fill shows as a kernel of its own);
--spec adds the spec's T = 34300 K = 9 E = 4 (tshmem_moe only: TileKernels' get_fused_mapping faults there).
Each call follows a 256 MiB zero_() (the table's L2 flush); ncu's own --cache-control all flushes too.
"""
import argparse

import torch


def topk_idx(send, k, e_local, ranks, seed=0):
    """TileKernels' generate_topk_idx, written out (no torch.compile): ids of the rank's E experts or -1."""
    g = torch.Generator(device='cuda').manual_seed(seed)
    scores = torch.rand((send * ranks, e_local * ranks), dtype=torch.float32, device='cuda', generator=g)
    idx = scores.to(torch.bfloat16).topk(k, dim=-1, sorted=False).indices
    idx[idx >= e_local] = -1
    return idx[~(idx == -1).all(dim=1)].contiguous()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tk', action='store_true', help="also TileKernels' functions (tile_kernels importable)")
    ap.add_argument('--spec', action='store_true', help="also the spec's T=34300 K=9 E=4 (tshmem_moe only)")
    ap.add_argument('--calls', type=int, default=3)
    a = ap.parse_args()
    import tshmem_moe
    impls = [('tshmem', tshmem_moe)]
    if a.tk:
        import tile_kernels
        impls.append(('tk', tile_kernels.moe))
    i9 = topk_idx(4001, 2, 9, 8)
    i32 = topk_idx(4001, 2, 32, 8)
    w = torch.rand(i9.shape, device='cuda')
    gen = torch.Generator(device='cuda').manual_seed(4)
    grp = torch.rand((36007, 256), device='cuda', generator=gen).topk(9, dim=1).indices // 32
    rows = [
        ('group_count', f'T={i9.shape[0]} K=2 E=9', lambda m: m.group_count(i9, 9), True),
        ('aux_fi', f'T={i9.shape[0]} K=2 E=9', lambda m: m.aux_fi(i9, 9, 2), True),
        ('normalize_weight', f'T={i9.shape[0]} K=2', lambda m: m.normalize_weight(w), True),
        ('get_fused_mapping', f'T={i9.shape[0]} K=2 E=9', lambda m: m.get_fused_mapping(i9, 9, 0, 128), True),
        ('get_fused_mapping', f'T={i32.shape[0]} K=2 E=32', lambda m: m.get_fused_mapping(i32, 32, 0, 128), True),
        ('inplace_unique_group_indices', f'T={grp.shape[0]} K=9 G=8',
         lambda m: m.inplace_unique_group_indices(grp.clone(), 8), True),
    ]
    if a.spec:
        i4 = topk_idx(4001, 9, 4, 64)
        w9 = torch.rand(i4.shape, device='cuda')
        s = f'T={i4.shape[0]} K=9 E=4'
        rows += [
            ('group_count', s, lambda m: m.group_count(i4, 4), False),
            ('aux_fi', s, lambda m: m.aux_fi(i4, 4, 9), False),
            ('normalize_weight', s, lambda m: m.normalize_weight(w9), False),
            ('get_fused_mapping', s, lambda m: m.get_fused_mapping(i4, 4, 0, 128), False),
        ]
    cache = torch.empty(256 << 20, dtype=torch.int8, device='cuda')
    for kernel, shape, call, tk_too in rows:
        for name, mod in impls:
            if name == 'tk' and not tk_too:
                continue
            call(mod)  # TileKernels compiles here
            torch.cuda.synchronize()
            for _ in range(a.calls):
                cache.zero_()
                call(mod)
            torch.cuda.synchronize()
            print(f'{kernel} {shape} {name}: {a.calls} calls', flush=True)


if __name__ == '__main__':
    main()
