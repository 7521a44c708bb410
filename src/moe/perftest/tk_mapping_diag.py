"""Which inputs make TileKernels' get_fused_mapping fault at T=34300 K=9 E=4 (GPU host, TileKernels importable).

Each variant runs in its own process (an illegal memory access poisons the CUDA context), optionally under
compute-sanitizer memcheck with torch's caching allocator off, so that reads past a tensor's end are seen:
    python3 tk_mapping_diag.py [--sanitizer PATH] [--variants a,b]   # parent: each variant, a few lines each
    python3 tk_mapping_diag.py --variant NAME          # child
Variants (E=4 local experts of 256, K=9, alignment 128):
  tk_inputs_sync      TileKernels' own generate_topk_idx (rows with no local expert dropped), P=0: its tests' path
  tk_inputs_small     the same at K=2, 9 of 72 experts (about 7.5 k rows): is the fault tied to the shape?
  bench_inputs_P      draws over 256 experts masked to -1 unless < 4, all-(-1) rows kept (moe_bench's
                      T=34300), P = T*K + 127*E given
  bench_inputs_sync   the same, P=0
  no_sync_P0          force_no_sync=True with P=0: zero-length pos_to_* outputs (a caller's mistake)
  id_out_of_range     one id == E (outside [-1, E): the kernel only assumes the range)
"""
import argparse
import os
import subprocess
import sys

VARIANTS = ('tk_inputs_sync', 'tk_inputs_small', 'bench_inputs_P', 'bench_inputs_sync', 'no_sync_P0', 'id_out_of_range')


def inputs(name):
    import torch
    torch.manual_seed(0)
    if name.startswith('tk_inputs'):
        from tile_kernels.testing.generator import generate_topk_idx
        gen = getattr(generate_topk_idx, '_torchdynamo_orig_callable', generate_topk_idx)
        if name == 'tk_inputs_small':
            return gen({'num_send_tokens': 4001, 'num_topk': 2, 'num_experts': 9, 'num_ep_ranks': 8})
        return gen({'num_send_tokens': 4001, 'num_topk': 9, 'num_experts': 4, 'num_ep_ranks': 64})
    idx = torch.rand(34300, 256, device='cuda').topk(9, dim=1).indices
    idx = torch.where(idx < 4, idx, torch.full_like(idx, -1)).contiguous()
    if name == 'id_out_of_range':
        idx[100, 3] = 4
    return idx


def child(name):
    import torch
    import tile_kernels
    idx = inputs(name)
    t, k = idx.shape
    e = 9 if name == 'tk_inputs_small' else 4
    p = t * k + 127 * e if name == 'bench_inputs_P' else 0
    out = tile_kernels.moe.get_fused_mapping(idx, e, p, 128, force_no_sync=(name == 'no_sync_P0'))
    torch.cuda.synchronize()
    valid = int((idx >= 0).sum())
    print(f'T={t} valid={valid} all_minus1_rows={int((idx < 0).all(1).sum())} P={out[0].shape[0]} '
          f'counts={out[6].tolist()} mapped={int((out[0] >= 0).sum())}')
    return 0 if int((out[0] >= 0).sum()) == valid else 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--variant')
    ap.add_argument('--sanitizer', default='')
    ap.add_argument('--variants', default=','.join(VARIANTS), help='comma-separated subset')
    a = ap.parse_args()
    if a.variant:
        return child(a.variant)
    for v in a.variants.split(','):
        cmd = [sys.executable, os.path.abspath(__file__), '--variant', v]
        env = dict(os.environ)
        if a.sanitizer:
            cmd = [a.sanitizer, '--tool', 'memcheck', '--print-limit', '3'] + cmd
            env['PYTORCH_NO_CUDA_MEMORY_CACHING'] = '1'
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        text = (r.stdout + r.stderr).strip().splitlines()
        keep = [l for l in text if any(w in l for w in ('T=', 'Error', 'error', 'Invalid', 'illegal', 'bytes at',
                                                          'by thread', 'ERROR SUMMARY'))]
        print(f'== {v}{" (memcheck)" if a.sanitizer else ""}: rc={r.returncode}')
        for line in keep[:12]:
            print('   ' + line[:300])
    return 0


if __name__ == '__main__':
    sys.exit(main())
