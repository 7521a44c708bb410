"""What the Python package adds per call: tshmem's Python API beside the same C calls, in the same run (one process
per PE, one job, one heap; the C side is loops.c, compiled here against the package).

    mpirun -np 2 python perftest/python/bench.py [--iters N] [--json]

Rows: empty+free (8 bytes), put 8 B, barrier_all, all_reduce 8 B (2 x float32); on a GPU heap each in its
stream-ordered form (calls issued, then one stream synchronisation, over N) and its host-blocking form. The shm
backend has no collectives (they run on the GPU). Prints PE 0's microseconds per call, C and Python, and what
Python adds; --json prints one JSON line per row as well.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

import tshmem

HERE = os.path.dirname(os.path.abspath(__file__))


def compile_loops():
    out = os.path.join(tempfile.mkdtemp(prefix='tshmem-bench-'), 'loops.so')
    lib = tshmem.get_library_dir()
    subprocess.run([os.environ.get('CC', 'cc'), '-O2', '-shared', '-fPIC', f'-I{tshmem.get_include()}',
                    os.path.join(HERE, 'loops.c'), f'-L{lib}', '-ltshmem', f'-Wl,-rpath,{lib}', '-o', out], check=True)
    c = ctypes.CDLL(out)
    for name in ('c_empty_free', 'c_put8', 'c_barrier_all', 'c_allreduce8', 'c_put8_on_stream',
                 'c_barrier_all_on_stream', 'c_allreduce8_on_stream'):
        getattr(c, name).restype = ctypes.c_double
    return c


def per_call(fn, iters, sync=None):
    """Microseconds per call of fn() over iters calls (then sync(), once)."""
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    if sync:
        sync()
    return (time.perf_counter() - t0) * 1e6 / iters


def c_per_call(fn, sync=None):
    t0 = time.perf_counter()
    us = fn()
    if us < 0:
        raise tshmem.Error(f'the C loop failed: {tshmem._C.last_error()}')
    if sync:
        sync()
    return (time.perf_counter() - t0) * 1e6 / ITERS


def main():
    global ITERS
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--iters', type=int, default=2000)
    ap.add_argument('--warmup', type=int, default=200)
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args()
    ITERS = args.iters
    tshmem.init()
    me, n = tshmem.my_pe(), tshmem.n_pes()
    c = compile_loops()
    gpu = tshmem.device() >= 0
    nxt = (me + 1) % n
    vp = lambda a: ctypes.c_void_p(a.data_ptr() if gpu else a.__array_interface__['data'][0])  # noqa: E731
    if gpu:
        import torch
        stream = torch.cuda.current_stream(tshmem.device())
        sync, raw = stream.synchronize, ctypes.c_void_p(stream.cuda_stream)
        src = torch.ones(2, dtype=torch.float32, device=f'cuda:{tshmem.device()}')
    else:
        import numpy
        sync, raw = None, None
        src = numpy.ones(2, dtype=numpy.float32)
    dst = tshmem.zeros(2, 'float32')
    red_src = tshmem.zeros(2, 'float32')
    it = ctypes.c_long(ITERS)

    rows = []  # (name, C callable, Python callable, sync)
    rows.append(('empty+free 8 B', lambda: c.c_empty_free(it), lambda: tshmem.free(tshmem.empty(2)), None))
    if gpu:
        rows.append(('put 8 B (stream)', lambda: c.c_put8_on_stream(vp(dst), vp(src), nxt, raw, it),
                     lambda: tshmem.put(dst, src, nxt), sync))
        rows.append(('put 8 B (blocking)', lambda: c.c_put8(vp(dst), vp(src), nxt, it),
                     lambda: tshmem.put(dst, src, nxt, blocking=True), None))
        rows.append(('barrier_all (stream)', lambda: c.c_barrier_all_on_stream(raw, it),
                     lambda: tshmem.barrier_all(), sync))
        rows.append(('barrier_all (blocking)', lambda: c.c_barrier_all(it),
                     lambda: tshmem.barrier_all(blocking=True), None))
        rows.append(('all_reduce 8 B (stream)', lambda: c.c_allreduce8_on_stream(vp(dst), vp(red_src), raw, it),
                     lambda: tshmem.all_reduce(dst, red_src), sync))
        rows.append(('all_reduce 8 B (blocking)', lambda: c.c_allreduce8(vp(dst), vp(red_src), it),
                     lambda: tshmem.all_reduce(dst, red_src, blocking=True), None))
    else:
        rows.append(('put 8 B', lambda: c.c_put8(vp(dst), vp(src), nxt, it), lambda: tshmem.put(dst, src, nxt), None))
        rows.append(('barrier_all', lambda: c.c_barrier_all(it), lambda: tshmem.barrier_all(), None))
        rows.append(('all_reduce 8 B', None, None, None))

    results = []
    for name, c_fn, py_fn, s in rows:
        if c_fn is None:
            results.append((name, None, None))
            continue
        per_call(py_fn, args.warmup, s)  # warm both paths, in the same order on every PE
        tshmem.barrier_all(blocking=True)
        c_us = c_per_call(c_fn, s)
        tshmem.barrier_all(blocking=True)
        py_us = per_call(py_fn, ITERS, s)
        tshmem.barrier_all(blocking=True)
        results.append((name, c_us, py_us))

    if me == 0:
        print(f'# tshmem Python overhead: {n} PE(s), backend {tshmem.backend()}, {ITERS} calls per row '
              f'(us per call, PE 0)')
        print(f'{"call":<28}{"C":>10}{"Python":>10}{"added":>10}')
        for name, c_us, py_us in results:
            if c_us is None:
                print(f'{name:<28}{"n/a: collectives run on the GPU (shm heap)":>30}')
                continue
            print(f'{name:<28}{c_us:>10.2f}{py_us:>10.2f}{py_us - c_us:>10.2f}')
            if args.json:
                print(json.dumps({'bench': 'python_overhead', 'call': name, 'pes': n, 'backend': tshmem.backend(),
                                  'c_us': round(c_us, 3), 'python_us': round(py_us, 3),
                                  'added_us': round(py_us - c_us, 3)}))
        sys.stdout.flush()
    tshmem.free(red_src)
    tshmem.free(dst)
    tshmem.finalize()


if __name__ == '__main__':
    main()
