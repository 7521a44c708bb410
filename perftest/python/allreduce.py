"""All-reduce from Python, three ways in one run: tshmem.all_reduce on a symmetric tensor, torch.distributed's
all_reduce (NCCL) and PyTorch symmetric memory's one_shot_all_reduce, bf16 sum, 8 KiB to 256 MiB.

    torchrun --nproc-per-node 2 perftest/python/allreduce.py [--min 8K] [--max 256M] [--iters 50] [--json]

One process per GPU (NCCL refuses two ranks on one GPU: the script then says so and stops). tshmem starts over
torch.distributed's group (tshmem.init(group=...)). Each size: warm-up, then `iters` back-to-back calls on the
current stream between two CUDA events; rank 0 prints microseconds per call and bus bandwidth (2 (n-1)/n x bytes
per call, NCCL's convention), and every result is checked against the others (the same bits for tshmem and NCCL
where both add in rank order is not promised; the check is to 1e-2 relative). Multicast stays off
(TSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 unless set).
"""
import argparse
import json
import os
import sys

for name, value in (('TSHMEM_DISABLE_NVLS', '1'), ('NCCL_NVLS_ENABLE', '0'), ('TORCH_SYMM_MEM_DISABLE_MULTICAST', '1')):
    os.environ.setdefault(name, value)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import tshmem  # noqa: E402


def size_arg(text):
    units = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def timed(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3 / iters  # microseconds per call


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--min', type=size_arg, default=8 << 10)
    ap.add_argument('--max', type=size_arg, default=256 << 20)
    ap.add_argument('--iters', type=int, default=50)
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args()

    local = int(os.environ.get('LOCAL_RANK', '0'))
    torch.cuda.set_device(local)
    dist.init_process_group('nccl', device_id=torch.device('cuda', local))
    rank, n = dist.get_rank(), dist.get_world_size()
    names = [None] * n
    dist.all_gather_object(names, torch.cuda.get_device_properties(local).uuid)
    if len(set(names)) < n:
        if rank == 0:
            print(f'skipped: {n} ranks on {len(set(names))} GPU(s); NCCL needs one GPU per rank')
        dist.destroy_process_group()
        return 0
    tshmem.init(group=dist.group.WORLD)

    symm = None
    try:
        import torch.distributed._symmetric_memory as symm_mem
        symm = symm_mem
    except ImportError:
        pass

    def bus(us, size):  # NCCL's bus bandwidth of an all-reduce, GB/s
        return 2 * (n - 1) / n * size / (us * 1e-6) / 1e9 if us and n > 1 else float('nan')

    rows = []
    size = args.min
    while size <= args.max:
        count = size // 2
        x = tshmem.empty(count, torch.bfloat16)  # symmetric: tshmem's operand
        x.copy_(torch.randn(count, device='cuda', generator=torch.Generator('cuda').manual_seed(rank)).to(torch.bfloat16))
        ref = x.clone()
        y = torch.empty_like(ref)
        y_sym = tshmem.empty(count, torch.bfloat16)
        t_tshmem = timed(lambda: tshmem.all_reduce(y_sym, x), args.iters)
        t_nccl = timed(lambda: (y.copy_(ref), dist.all_reduce(y)), args.iters)
        t_copy = timed(lambda: y.copy_(ref), args.iters)  # NCCL reduces in place: its row pays this copy, less it
        t_nccl -= t_copy
        tshmem.all_reduce(y_sym, x)
        y.copy_(ref)
        dist.all_reduce(y)
        torch.cuda.synchronize()
        ok = torch.allclose(y_sym.float(), y.float(), rtol=1e-2, atol=1e-2)
        t_symm = None
        if symm is not None and hasattr(torch.ops.symm_mem, 'one_shot_all_reduce'):
            try:
                buf = symm.empty(count, dtype=torch.bfloat16, device='cuda')
                symm.rendezvous(buf, dist.group.WORLD.group_name)
                buf.copy_(ref)
                t_symm = timed(lambda: torch.ops.symm_mem.one_shot_all_reduce(buf, 'sum',
                                                                               dist.group.WORLD.group_name), args.iters)
            except RuntimeError as e:  # e.g. no P2P between the GPUs
                if rank == 0:
                    print(f'# symmetric memory unavailable at {size} B: {e}'.split('\n')[0])
                symm = None
        rows.append((size, t_tshmem, t_nccl, t_symm, ok))
        tshmem.free(y_sym)
        tshmem.free(x)
        size *= 2

    if rank == 0:
        print(f'# all_reduce bf16 sum, {n} GPUs, {args.iters} calls per size on the current stream (us per call, '
              f'bus GB/s); ratio = tshmem / NCCL time')
        print(f'{"bytes":>12}{"tshmem us":>12}{"GB/s":>8}{"NCCL us":>12}{"GB/s":>8}{"symm us":>12}{"ratio":>8}  check')
        for size, a, b, c, ok in rows:
            cs = f'{c:12.2f}' if c is not None else f'{"n/a":>12}'
            print(f'{size:>12}{a:12.2f}{bus(a, size):8.1f}{b:12.2f}{bus(b, size):8.1f}{cs}{a / b:8.3f}  {"ok" if ok else "DIFFERS"}')
            if args.json:
                print(json.dumps({'bench': 'python_all_reduce', 'bytes': size, 'gpus': n, 'tshmem_us': round(a, 3),
                                  'nccl_us': round(b, 3), 'symm_mem_us': None if c is None else round(c, 3),
                                  'agree': ok}))
        sys.stdout.flush()
    tshmem.finalize()
    dist.destroy_process_group()
    return 0 if all(r[4] for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
