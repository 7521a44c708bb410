"""tshmem.ep where programs written for DeepEP's normal mode read more than the results: Buffer.capture(),
Buffer.is_sm90_compiled(), topk_idx_t, the handle as DeepEP's tuple (element 0 the rank prefix matrix, element 3 each
received row's source token, element 4 is_token_in_rank), and fp8 scales of any strides (DeepGEMM's column-major
ones). The GPU tests need a GPU heap and CUDA torch; every PE builds every PE's routing from seeds."""
import pytest

torch = pytest.importorskip('torch')
import tshmem  # noqa: E402
from conftest import GPU  # noqa: E402
from tshmem import ep  # noqa: E402

HAVE_EXT = ep._C is not None
needs_gpu = pytest.mark.skipif(not (GPU and HAVE_EXT and torch.cuda.is_available()),
                               reason='needs a GPU heap (TSHMEM_MEM_BACKEND=vmm or ipc), CUDA torch and tshmem.ep\'s '
                               'extension')
FP8 = getattr(torch, 'float8_e4m3fn', None)


def test_deepep_names_without_a_gpu():
    assert ep.topk_idx_t is torch.int64
    assert ep.Buffer.is_sm90_compiled() is True


def routing(seed, pe, T, E, K):
    g = torch.Generator().manual_seed(seed * 1009 + pe)
    return torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)]) if T else torch.empty((0, K),
                                                                                                     dtype=torch.int64)


@pytest.fixture(scope='module')
def buf(pe):
    if not (GPU and HAVE_EXT and torch.cuda.is_available()):
        pytest.skip('needs a GPU heap, CUDA torch and tshmem.ep\'s extension')
    nvl, rdma = ep.buffer_size_hint(pe[1], 64, 512, torch.bfloat16, 8)
    b = ep.Buffer(None, nvl, rdma)
    b.set_timeout_ms(60000)
    yield b
    b.destroy()


@needs_gpu
def test_capture_gives_an_event_for_previous_event(buf):
    event = ep.Buffer.capture()
    assert isinstance(event, ep.EventOverlap) and event.event is not None
    idx = routing(1, tshmem.my_pe(), 8, 16, 2).cuda(tshmem.device())
    out = buf.get_dispatch_layout(idx, 16, previous_event=event, async_finish=True)
    out[-1].current_stream_wait()
    assert out[0].sum().item() >= 0


@needs_gpu
def test_handle_is_deepeps_tuple_and_scales_take_any_strides(buf):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    T, E, K, H = 40, 16 * n, 4, 256
    dev = torch.device('cuda', tshmem.device())
    idx_all = [routing(2, p, T, E, K) for p in range(n)]
    idx = idx_all[me].to(dev)
    # Tokens PE i sends to PE j, then summed over i = 0..row: DeepEP's rank_prefix_matrix.
    L = E // n
    per = torch.stack([torch.stack([((i // L) == j).any(1).sum().to(torch.int32) for j in range(n)])
                       for i in idx_all])
    want = per.cumsum(0).to(torch.int32)
    per_rank, per_rdma, per_expert, in_rank, _ = buf.get_dispatch_layout(idx, E)
    g = torch.Generator().manual_seed(me)
    x = (torch.rand((T, H), generator=g) * 8 - 4).to(FP8).to(dev)
    scales = (torch.rand((T, H // 128), generator=g) + 0.5).to(dev)
    column_major = torch.empty((H // 128, T), device=dev).t()
    column_major.copy_(scales)
    assert not column_major.is_contiguous()
    (rx, rs), _, _, _, handle, _ = buf.dispatch((x, scales), None, per_rank, per_rdma, in_rank, per_expert)
    (cx, cs), _, _, _, handle2, _ = buf.dispatch((x, column_major), None, per_rank, per_rdma, in_rank, per_expert)
    torch.cuda.synchronize()
    assert isinstance(handle, tuple) and len(handle) == 6
    assert handle[0].dtype == torch.int32 and torch.equal(handle[0].cpu(), want), (handle[0].cpu(), want)
    assert handle[4] is in_rank
    assert handle[3].shape == (handle.num_recv_tokens,) and handle[3].dtype == torch.int32
    # Each received row came from the token its source index names: its rows are by source PE, token index.
    rows = []
    for p in range(n):
        rows += [t for t in range(T) if ((idx_all[p][t] // L) == me).any()]
    assert handle[3].cpu().tolist() == rows
    assert torch.equal(rx.view(torch.uint8), cx.view(torch.uint8)) and torch.equal(rs, cs)
    # The tuple handle combines as before.
    y, _, _ = buf.combine(rx.float().to(torch.bfloat16), handle)
    torch.cuda.synchronize()
    assert y.shape == (T, H)
    del handle2
