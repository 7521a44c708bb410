"""tshmem.ep's low-latency mode (DeepEP's low_latency_dispatch / low_latency_combine) against a host reference written
here: per local expert, rows by source PE, then token, then top-k position; fp8 per 128 channels with DeepEP's
arithmetic (amax at least 1e-4, scale amax / 448, or its power of 2 at or above with round_scale, UE8M0 as the
exponent byte) in DeepEP's column-major scale layouts; combine as the fp32 sum over top-k of weight times row, one
rounding. Compared bit for bit, with and without the receive hook, with zero copy, captured in a CUDA graph, with a
masked PE; argument mistakes raise naming the call; the kernels found by name as DeepEP's bench_kineto finds them.
The GPU tests need a GPU heap and CUDA torch; every PE builds every PE's inputs from seeds."""
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
BF16 = torch.bfloat16
MAX_TOKENS, HIDDEN_MAX, EXPERTS_MAX = 32, 512, 288


# ---- the host reference -------------------------------------------------------------------------------------------

def make_inputs(seed, pe, n, T, E, K, H, minus=0.2):
    g = torch.Generator().manual_seed(seed * 7919 + pe * 104729 + 5)
    idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)]) if T else torch.empty((0, K),
                                                                                                     dtype=torch.int64)
    if minus and T:
        idx[torch.rand((T, K), generator=g) < minus] = -1
    w = torch.rand((T, K), generator=g, dtype=torch.float32) + 0.25
    x = ((torch.rand((T, H), generator=g) - 0.5) * torch.pow(2.0, torch.randint(0, 8, (T, 1), generator=g).float()))
    return idx, w, x.to(BF16)


def quantize(x, round_scale):
    """DeepEP's per-128-channel fp8 cast: (fp8 rows, scale_inv [T, H / 128] fp32)."""
    T, H = x.shape
    v = x.float().view(T, H // 128, 128)
    amax = v.abs().amax(-1).clamp(min=1e-4)
    if round_scale:
        bits = (amax * torch.tensor(1.0 / 448.0, dtype=torch.float32)).view(torch.int32)
        e = ((bits >> 23) & 0xff) - 127 + ((bits & 0x7fffff) != 0).int()
        scale = ((127 - e) << 23).int().view(torch.float32)
        scale_inv = ((127 + e) << 23).int().view(torch.float32)
    else:
        scale_inv = amax * torch.tensor(1.0 / 448.0, dtype=torch.float32)
        scale = torch.tensor(448.0, dtype=torch.float32) / amax
    q = (v * scale.unsqueeze(-1)).clamp(-448, 448).view(T, H).to(FP8)
    return q, scale_inv


def cut_off(p, q, masked):
    """Whether PEs p and q do not exchange rows: one of them is the masked PE (which masks every PE)."""
    return masked is not None and masked in (p, q)


def ref_dispatch(me, inputs, E, n, M, H, fp8, round_scale, masked=None):
    """Per local expert of PE me: (source tokens, rows, scales, layout_range): by source PE, token, top-k position."""
    L = E // n
    out = []
    for le in range(L):
        ex = me * L + le
        rows, data, scales, ranges, begin = [], [], [], [], 0
        for r in range(n):
            idx, _, x = inputs[r]
            count = 0
            q, s = quantize(x, round_scale) if fp8 and x.shape[0] else (x, None)
            for t in range(idx.shape[0] if not cut_off(me, r, masked) else 0):
                for k in range(idx.shape[1]):
                    if int(idx[t, k]) == ex:
                        rows.append(t)
                        data.append(q[t])
                        if fp8:
                            scales.append(s[t])
                        count += 1
            ranges.append(count | (begin << 32))
            begin += count
        out.append((rows, data, scales, ranges))
    return out


def expert_outputs(pe, L, rows, H):
    g = torch.Generator().manual_seed(pe * 31 + 7)
    return ((torch.rand((L, rows, H), generator=g) - 0.5) * 4).to(BF16)


def ref_combine(me, inputs, E, n, M, H, ys, dispatched, masked=None):
    """combined_x of PE me: for each token the fp32 sum over top-k of weight * row, rounded once."""
    idx, w, _ = inputs[me]
    L = E // n
    out = torch.zeros((idx.shape[0], H), dtype=torch.float32)
    for t in range(idx.shape[0]):
        acc = torch.zeros(H, dtype=torch.float32)
        for k in range(idx.shape[1]):
            ex = int(idx[t, k])
            if ex < 0 or cut_off(me, ex // L, masked):
                continue
            r, le = ex // L, ex % L
            rows, _, _, ranges = dispatched[r][le]
            begin, count = ranges[me] >> 32, ranges[me] & 0xffffffff
            j = next(begin + i for i in range(count) if rows[begin + i] == t)
            acc = acc + ys[r][le, j].float() * w[t, k]
        out[t] = acc
    return out.to(BF16)


def same_bits(a, b):
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


# ---- without a GPU ----------------------------------------------------------------------------------------------

def test_reference_quantizes_like_deepep():
    x = torch.zeros((1, 256), dtype=BF16)
    x[0, 3], x[0, 130] = -3.5, 100.0
    q, s = quantize(x, False)
    assert s[0, 0].item() == pytest.approx(3.5 / 448, rel=1e-7)
    assert q[0, 3].float().item() == -448.0 and q[0, 130].float().item() == 448.0
    q, s = quantize(x, True)
    assert s[0].tolist() == [2.0 ** -7, 0.25]  # 3.5 / 448 = 2^-7 exactly; 100 / 448 rounds up to 2^-2


@pytest.mark.skipif(not HAVE_EXT, reason='tshmem.ep has no extension here')
def test_rdma_size_hint_and_its_mistakes():
    assert ep.Buffer.get_low_latency_rdma_size_hint(128, 7168, 8, 256) > 2 * 256 * 128 * 7168 * 2
    with pytest.raises(tshmem.InvalidArgumentError, match='get_low_latency_rdma_size_hint: .*num_experts = 257'):
        ep.Buffer.get_low_latency_rdma_size_hint(128, 7168, 8, 257)
    with pytest.raises(tshmem.ArgumentTypeError, match='hidden'):
        ep.Buffer.get_low_latency_rdma_size_hint(128, 'x', 8, 256)


# ---- on the GPU ----------------------------------------------------------------------------------------------------

def dev():
    return torch.device('cuda', tshmem.device())


@pytest.fixture(scope='module')
def buf(pe):
    if not (GPU and HAVE_EXT and torch.cuda.is_available()):
        pytest.skip('needs a GPU heap, CUDA torch and tshmem.ep\'s extension')
    n = pe[1]
    nvl, rdma = ep.buffer_size_hint(n, 64, 512, BF16, 8)
    ll = ep.Buffer.get_low_latency_rdma_size_hint(MAX_TOKENS, HIDDEN_MAX, n, EXPERTS_MAX)
    b = ep.Buffer(None, nvl, max(rdma, ll), low_latency_mode=True)
    b.set_timeout_ms(60000)
    yield b
    b.destroy()


def run_ll(b, seed, E, K, H, fp8=False, round_scale=False, ue8m0=False, hook=False, zero_copy=False, rounds=1,
           masked=None, tokens=None):
    """Every PE: low_latency_dispatch and low_latency_combine, checked against the reference; mismatches are
    collected and asserted at the end (every PE makes every collective call whatever it finds)."""
    me, n = tshmem.my_pe(), tshmem.n_pes()
    M, L = MAX_TOKENS, E // n
    problems = []
    T = [tokens if tokens is not None else (0 if p == 1 else (seed * 5 + p * 7) % (M + 1)) for p in range(n)]
    inputs = [make_inputs(seed, p, n, T[p], E, K, H) for p in range(n)]
    cut = set()
    if masked is not None:  # the masked PE masks every PE, every other PE masks it
        cut = set(range(n)) if me == masked else {masked}
        for q in cut:
            b.low_latency_update_mask_buffer(q, True)
    b.clean_low_latency_buffer(M, H, E)
    idx, w, x = (t.to(dev()) for t in inputs[me])
    want = ref_dispatch(me, inputs, E, n, M, H, fp8, round_scale, masked)
    ys = [expert_outputs(p, L, n * M, H) for p in range(n)]
    dispatched = [ref_dispatch(p, inputs, E, n, M, H, False, False, masked) for p in range(n)]
    want_out = ref_combine(me, inputs, E, n, M, H, ys, dispatched, masked)
    cum = torch.zeros(L, dtype=torch.int32, device=dev())
    wait = torch.zeros(n, dtype=torch.int64, device=dev())
    for r in range(rounds):
        recv, count, handle, event, recv_hook = b.low_latency_dispatch(
            x, idx, M, E, cumulative_local_expert_recv_stats=cum, dispatch_wait_recv_cost_stats=wait, use_fp8=fp8,
            round_scale=round_scale, use_ue8m0=ue8m0, return_recv_hook=hook)
        if recv_hook:
            recv_hook()
        torch.cuda.synchronize()
        data, scales = recv if fp8 else (recv, None)
        if fp8:
            S = H // 512 if ue8m0 else H // 128
            if tuple(scales.shape) != (L, n * M, S) or scales.stride()[1:] != (1, n * M):
                problems.append(f'scales shape {tuple(scales.shape)} stride {scales.stride()}')
        counts = count.cpu().tolist()
        for le in range(L):
            rows, rdata, rscales, ranges = want[le]
            c = len(rows)
            if counts[le] != c:
                problems.append(f'round {r}: expert {le}: count {counts[le]}, expected {c}')
                continue
            if handle[1][le].cpu().tolist() != ranges:
                problems.append(f'expert {le}: layout_range')
            if c == 0:
                continue
            if handle[0][le, :c].cpu().tolist() != rows:
                problems.append(f'expert {le}: src_info')
            if not same_bits(data[le, :c], torch.stack(rdata)):
                problems.append(f'round {r}: expert {le}: rows')
            if fp8:
                s = torch.stack(rscales)
                if ue8m0:
                    s = (s.view(torch.int32) >> 23).to(torch.uint8).view(c, -1, 4).view(torch.int32).view(c, -1)
                    if not torch.equal(scales[le, :c].cpu(), s):
                        problems.append(f'expert {le}: ue8m0 scales')
                elif not same_bits(scales[le, :c], s):
                    problems.append(f'expert {le}: scales')
        y = ys[me].to(dev())
        if zero_copy:
            b.get_next_low_latency_combine_buffer(handle).copy_(y)
        out = torch.empty((T[me], H), dtype=BF16, device=dev())
        combined, event, combine_hook = b.low_latency_combine(y, idx, w, handle, zero_copy=zero_copy,
                                                              return_recv_hook=hook, out=out)
        if combine_hook:
            combine_hook()
        torch.cuda.synchronize()
        if combined.data_ptr() != out.data_ptr() and T[me]:
            problems.append('out= was not used')
        if not same_bits(combined, want_out):
            problems.append(f'round {r}: combined_x')
    if cum.cpu().tolist() != [rounds * len(want[le][0]) for le in range(L)]:
        problems.append('cumulative_local_expert_recv_stats')
    if masked is not None:
        status = torch.zeros(n, dtype=torch.int32, device=dev())
        b.low_latency_query_mask_buffer(status)
        if status.cpu().tolist() != [1 if q in cut else 0 for q in range(n)]:
            problems.append(f'mask {status.cpu().tolist()}')
        b.low_latency_clean_mask_buffer()
        b.low_latency_query_mask_buffer(status)
        if status.cpu().tolist() != [0] * n:
            problems.append('mask after clean')
    torch.cuda.synchronize()
    assert not problems, problems


@needs_gpu
@pytest.mark.parametrize('kw', [
    dict(E=64, K=8, H=256),
    dict(E=8, K=1, H=512, hook=True),
    dict(E=EXPERTS_MAX, K=9, H=512, fp8=True),
    dict(E=32, K=8, H=512, fp8=True, round_scale=True, ue8m0=True, hook=True),
    dict(E=64, K=8, H=256, fp8=True, round_scale=True, zero_copy=True, rounds=3),
], ids=['bf16-k8', 'bf16-k1-hook', 'fp8-k9-e288', 'fp8-ue8m0-hook', 'fp8-zero-copy'])
def test_low_latency_bits(buf, kw):
    run_ll(buf, 3, **kw)


@needs_gpu
def test_low_latency_one_and_max_tokens(buf):
    run_ll(buf, 4, 16, 8, 256, tokens=1)
    run_ll(buf, 5, 16, 8, 256, fp8=True, tokens=MAX_TOKENS)


@needs_gpu
def test_low_latency_masked_pe(buf):
    n = tshmem.n_pes()
    if n < 2:
        pytest.skip('masking needs 2 PEs or more')
    run_ll(buf, 6, 64, 8, 256, fp8=True, masked=n - 1)
    run_ll(buf, 7, 64, 8, 256)  # unmasked again


@needs_gpu
def test_low_latency_cuda_graph(buf):
    """Dispatch and combine captured in one graph on the current stream, replayed: the reference's bits each time."""
    me, n = tshmem.my_pe(), tshmem.n_pes()
    E, K, H, M = 64, 8, 256, MAX_TOKENS
    L = E // n
    T = [20 + p for p in range(n)]
    inputs = [make_inputs(8, p, n, T[p], E, K, H) for p in range(n)]
    idx, w, x = (t.to(dev()) for t in inputs[me])
    ys = [expert_outputs(p, L, n * M, H) for p in range(n)]
    dispatched = [ref_dispatch(p, inputs, E, n, M, H, False, False) for p in range(n)]
    want = ref_combine(me, inputs, E, n, M, H, ys, dispatched)
    y = ys[me].to(dev())
    buf.clean_low_latency_buffer(M, H, E)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            recv, count, handle, _, hook = buf.low_latency_dispatch(x, idx, M, E, use_fp8=False,
                                                                    return_recv_hook=True)
            hook()  # the receive half, captured too
            out, _, _ = buf.low_latency_combine(y, idx, w, handle)
    problems = []
    for r in range(3):
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        if not same_bits(out, want):
            problems.append(f'replay {r}')
        if count.sum().item() != sum(len(d[0]) for d in dispatched[me]):
            problems.append(f'replay {r}: counts')
    assert not problems, problems


@needs_gpu
def test_low_latency_mistakes_name_the_call(buf):
    n = tshmem.n_pes()
    x = torch.zeros((4, 256), dtype=BF16, device=dev())
    idx = torch.zeros((4, 8), dtype=torch.int64, device=dev())
    with pytest.raises(tshmem.ArgumentTypeError, match=r'low_latency_dispatch: x has dtype torch.float32'):
        buf.low_latency_dispatch(x.float(), idx, 16, 8 * n)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'low_latency_dispatch: .*num_tokens = 4; must be in '
                                                          r'\[0, num_max_dispatch_tokens_per_rank = 2\]'):
        buf.low_latency_dispatch(x, idx, 2, 8 * n)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'hidden = 256; with use_ue8m0 must be a multiple of 512'):
        buf.low_latency_dispatch(x, idx, 16, 8 * n, use_fp8=True, round_scale=True, use_ue8m0=True)
    with pytest.raises(ep.BufferTooSmallError, match='num_rdma_bytes'):
        buf.low_latency_dispatch(x, idx, 20000, 8 * n)
    with pytest.raises(ep.UnsupportedError, match='use_logfmt'):
        buf.low_latency_combine(x, idx, idx.float(), (None, None, 16, 256, 8 * n), use_logfmt=True)
    with pytest.raises(tshmem.ArgumentTypeError, match='handle'):
        buf.low_latency_combine(x, idx, idx.float(), None)
    # Nothing was launched by the refusals: a correct pair runs on every PE.
    run_ll(buf, 9, 8 * n, 8, 256, tokens=4)


@needs_gpu
@pytest.mark.parametrize('hook', [False, True], ids=['one-launch', 'hook'])
def test_low_latency_kernels_as_bench_kineto_finds_them(buf, hook, tmp_path):
    """DeepEP's tests/test_low_latency.py profiles with its bench_kineto(kernel_names=('dispatch', 'combine')): in
    the profiler's table at most one row may contain each name, and in the trace the events whose name contains
    '::dispatch' (or '::combine') come num_kernels_per_period (1, or 2 with the hook) per call."""
    import json
    n = tshmem.n_pes()
    E, K, H, M, calls = 8 * n, 8, 256, MAX_TOKENS, 4
    idx, w, x = (t.to(dev()) for t in make_inputs(10, tshmem.my_pe(), n, 16, E, K, H))
    y = torch.zeros((E // n, n * M, H), dtype=BF16, device=dev())
    buf.clean_low_latency_buffer(M, H, E)

    def call():
        _, _, handle, _, dispatch_hook = buf.low_latency_dispatch(x, idx, M, E, use_fp8=True, return_recv_hook=hook)
        if dispatch_hook:
            dispatch_hook()
        _, _, combine_hook = buf.low_latency_combine(y, idx, w, handle, return_recv_hook=hook)
        if combine_hook:
            combine_hook()

    call()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    lines = prof.key_averages().table(sort_by='cuda_time_total', max_name_column_width=100).split('\n')
    trace = tmp_path / 'trace.json'
    prof.export_chrome_trace(str(trace))
    names = [e.get('name', '') for e in json.loads(trace.read_text())['traceEvents']]
    for name in ('dispatch', 'combine'):
        rows = [line for line in lines if name in line]
        assert len(rows) <= 1, rows
        launches = [k for k in names if f'::{name}' in k]
        assert len(launches) == calls * (2 if hook else 1), (name, launches)
