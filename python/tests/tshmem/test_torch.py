"""torch tensors on a GPU heap (vmm, ipc): stream-ordered operations, collectives equal to the C API's on the same
inputs (called through ctypes on the library the package loaded) and to the documented reduction order, device
and type mistakes, user kernels over peer_ptrs (Triton) and a CUDA extension with the device API. Skips without
torch, a GPU or a GPU heap (CI runs the rest of the folder on numpy arrays)."""
import ctypes
import os

import pytest

torch = pytest.importorskip('torch')
import tshmem  # noqa: E402
from conftest import GPU  # noqa: E402

pytestmark = pytest.mark.skipif(not GPU or not torch.cuda.is_available(), reason='needs a GPU heap (vmm or ipc)')
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, '..', '..', 'examples')


def lib():
    """libtshmem as the package loaded it (same file, so the same instance)."""
    return ctypes.CDLL(os.path.join(tshmem.get_library_dir(), 'libtshmem.so.0'))


def dev():
    return torch.device('cuda', tshmem.device())


def stream():
    return torch.cuda.current_stream(dev())


def test_tensors_live_on_this_pes_gpu(pe):
    x = tshmem.zeros((4, 5), torch.bfloat16)
    assert x.is_cuda and x.device == dev() and x.dtype == torch.bfloat16 and not x.any()
    if torch.cuda.device_count() > 1:  # whatever the current device
        other = (tshmem.device() + 1) % torch.cuda.device_count()
        with torch.cuda.device(other):
            y = tshmem.empty(3)
        assert y.device == dev()
        tshmem.free(y)
    tshmem.free(x)


def test_stream_ordered_rma_signal_and_barrier(pe):
    me, n = pe
    nxt, prv = (me + 1) % n, (me - 1) % n
    data = tshmem.zeros(1 << 16, torch.float32)
    sig = tshmem.zeros(1, torch.int64)
    src = torch.arange(1 << 16, dtype=torch.float32, device=dev()) + 1000 * me
    side = torch.cuda.Stream(device=dev())
    side.wait_stream(stream())
    with torch.cuda.stream(side):  # torch's current stream is the side stream here
        tshmem.put_signal(data, src, sig, 1, tshmem.SIGNAL_ADD, nxt)
        tshmem.signal_wait_until(sig, tshmem.CMP_GE, 1)
        got = data.clone()  # after the wait, on the same stream
    side.synchronize()
    torch.testing.assert_close(got, torch.arange(1 << 16, dtype=torch.float32, device=dev()) + 1000 * prv)
    back = torch.empty_like(src)
    tshmem.barrier_all()  # on the current stream
    tshmem.get(back, data, nxt, stream=side)
    side.synchronize()
    torch.testing.assert_close(back, src)
    tshmem.quiet()
    tshmem.barrier_all(blocking=True)
    tshmem.free(sig)
    tshmem.free(data)


def test_device_and_type_mistakes_name_the_argument(pe):
    x = tshmem.zeros(8)
    with pytest.raises(ValueError, match=r'src is on the cpu; it must be on cuda:\d'):
        tshmem.put(x, torch.zeros(8), 0)  # a stream-ordered copy needs device memory
    tshmem.put(x, torch.zeros(8), 0, blocking=True)  # the host-blocking form takes host memory
    with pytest.raises(ValueError, match='dst is not contiguous'):
        tshmem.put(x.view(2, 4).t(), torch.zeros(4, 2, device=dev()), 0)
    with pytest.raises(TypeError, match='dtype bool has no reductions'):
        tshmem.all_reduce(tshmem.zeros(4, torch.bool))
    with pytest.raises(tshmem.ArgumentTypeError, match='stream = .* is neither'):
        tshmem.barrier_all(stream='s')
    with pytest.raises(tshmem.InvalidArgumentError, match='numpy'):
        tshmem.empty(4, array_type='numpy')
    tshmem.free(x)


# ---- collectives: equal to the C API's on the same inputs, and to the documented order --------------------------

REDUCE_DTYPES = (torch.int32, torch.int64, torch.float32, torch.float16, torch.bfloat16)
DTYPE_CODE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3, torch.int64: 4}
OPS = ('sum', 'min', 'max', 'prod')
OP_CODE = {'sum': 0, 'min': 1, 'max': 2, 'prod': 3}


def inputs(p, count, dtype):
    """PE p's input, the same on every PE that computes it."""
    g = torch.Generator().manual_seed(1000 + p)
    if dtype.is_floating_point:
        return (torch.rand(count, generator=g) * 2 + 0.5).to(dtype)  # prod stays finite
    return torch.randint(-3, 4, (count,), generator=g, dtype=torch.int64).to(dtype)


def reference(op, dtype, n, count):
    """Accumulated in PE order: floats in float32, rounded once; integers wrap."""
    acc = None
    for p in range(n):
        x = inputs(p, count, dtype)
        x = x.float() if dtype.is_floating_point else x
        if acc is None:
            acc = x.clone()
        elif op == 'sum':
            acc = acc + x
        elif op == 'prod':
            acc = acc * x
        elif op == 'min':
            acc = torch.minimum(acc, x)
        else:
            acc = torch.maximum(acc, x)
    return acc.to(dtype)


def same_bits(a, b):
    a, b = a.cpu(), b.cpu()
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.element_size() == 2:
        a, b = a.view(torch.int16), b.view(torch.int16)
    assert torch.equal(a, b), (a[:8], b[:8])


@pytest.mark.parametrize('dtype', REDUCE_DTYPES, ids=str)
def test_all_reduce_equals_the_c_api_and_the_documented_order(pe, dtype):
    me, n = pe
    c = lib()
    for count in (1, 1000, 70000):  # one-shot and two-shot sizes
        src = tshmem.empty(count, dtype)
        src.copy_(inputs(me, count, dtype))
        for op in OPS:
            stream_out, blocking_out, c_out = (tshmem.empty(count, dtype) for _ in range(3))
            tshmem.all_reduce(stream_out, src, op)
            tshmem.all_reduce(blocking_out, src, op, blocking=True)
            rc = c.tshmemx_allreduce_on_stream(0, ctypes.c_void_p(c_out.data_ptr()), ctypes.c_void_p(src.data_ptr()),
                                               ctypes.c_size_t(count), DTYPE_CODE[dtype], OP_CODE[op],
                                               ctypes.c_void_p(stream().cuda_stream))
            assert rc == 0
            stream().synchronize()
            same_bits(stream_out, c_out)
            same_bits(blocking_out, c_out)
            same_bits(c_out, reference(op, dtype, n, count))
            for t in (stream_out, blocking_out, c_out):
                tshmem.free(t)
        inplace = tshmem.empty(count, dtype)
        inplace.copy_(inputs(me, count, dtype))
        tshmem.all_reduce(inplace)  # in place, sum
        stream().synchronize()
        same_bits(inplace, reference('sum', dtype, n, count))
        tshmem.free(inplace)
        tshmem.free(src)


def test_moving_collectives_equal_the_c_api(pe):
    me, n = pe
    c = lib()
    s = ctypes.c_void_p(stream().cuda_stream)
    per = 4099  # elements per PE (odd: no alignment luck)
    src = tshmem.empty(per * n, torch.float32)
    src.copy_(torch.arange(per * n, dtype=torch.float32, device=dev()) + 1e6 * me)
    vp = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731

    gathered, c_gathered = tshmem.empty(per * n * n), tshmem.empty(per * n * n)
    tshmem.all_gather(gathered, src)
    assert c.tshmemx_allgather_on_stream(0, vp(c_gathered), vp(src), ctypes.c_size_t(src.nbytes), s) == 0
    a2a, c_a2a = tshmem.empty(per * n), tshmem.empty(per * n)
    tshmem.all_to_all(a2a, src)
    assert c.tshmemx_alltoall_on_stream(0, vp(c_a2a), vp(src), ctypes.c_size_t(per * 4), s) == 0
    bc, c_bc = tshmem.empty(per * n), tshmem.empty(per * n)
    tshmem.broadcast(bc, src, root=n - 1)
    assert c.tshmemx_broadcast_on_stream(0, vp(c_bc), vp(src), ctypes.c_size_t(src.nbytes), n - 1, s) == 0
    rs, c_rs = tshmem.empty(per), tshmem.empty(per)
    tshmem.reduce_scatter(rs, src)
    assert c.tshmemx_reduce_scatter_on_stream(0, vp(c_rs), vp(src), ctypes.c_size_t(per), 0, 0, s) == 0
    stream().synchronize()
    for mine, theirs in ((gathered, c_gathered), (a2a, c_a2a), (bc, c_bc), (rs, c_rs)):
        same_bits(mine, theirs)
    every = [torch.arange(per * n, dtype=torch.float32) + 1e6 * p for p in range(n)]
    same_bits(gathered, torch.cat(every))
    same_bits(a2a, torch.cat([every[p][me * per:(me + 1) * per] for p in range(n)]))
    same_bits(bc, every[n - 1])
    acc = every[0][me * per:(me + 1) * per].clone()
    for p in range(1, n):
        acc += every[p][me * per:(me + 1) * per]
    same_bits(rs, acc)
    blocking = tshmem.empty(per * n * n)
    tshmem.all_gather(blocking, src, blocking=True)
    same_bits(blocking, gathered)
    for t in (blocking, rs, c_rs, bc, c_bc, a2a, c_a2a, gathered, c_gathered, src):
        tshmem.free(t)


# ---- user kernels --------------------------------------------------------------------------------------------

def run_example(name):
    import runpy
    return runpy.run_path(os.path.join(EXAMPLES, name), run_name='tshmem_example')


def test_triton_kernel_over_peer_ptrs(pe):
    pytest.importorskip('triton')
    run_example('ring_triton.py')['ring'](tshmem)


def test_cuda_extension_with_the_device_api(pe):
    run_example('ring_extension.py')['ring'](tshmem)
