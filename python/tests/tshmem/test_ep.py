"""tshmem.ep, DeepEP V1's Buffer over libtshmem_ep: results against a host reference written here (layout; dispatch:
rows by source PE then token index, top-k ids in local numbering, aligned per-expert counts; combine: fp32 sum over
PEs in ascending order, one rounding to bf16), compared bit for bit, and every argument mistake raising with its
message. The argument checks and the reference itself run with CPU torch (no GPU); the rest needs a GPU heap (vmm
or ipc) and skips elsewhere. Every PE builds every PE's inputs from seeds, so each checks what it receives."""
import dataclasses

import pytest

torch = pytest.importorskip('torch')
import tshmem  # noqa: E402
from conftest import GPU  # noqa: E402
from tshmem import ep  # noqa: E402

HAVE_EXT = ep._C is not None
needs_ext = pytest.mark.skipif(not HAVE_EXT, reason=f'tshmem.ep has no extension here ({ep._C_MISSING})')
needs_gpu = pytest.mark.skipif(not (GPU and HAVE_EXT and torch.cuda.is_available()),
                               reason='needs a GPU heap (TSHMEM_MEM_BACKEND=vmm or ipc), CUDA torch and tshmem.ep\'s '
                               'extension')
FP8 = getattr(torch, 'float8_e4m3fn', None)
BF16 = torch.bfloat16


# ---- the host reference -------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    name: str
    dtype: str      # 'bf16' or 'fp8'
    topk: int
    experts: int
    hidden: int
    tokens: int     # tokens of PE p: tokens + 13 * p, or 0 where `empty` says
    minus: float = 0.0   # share of top-k entries that are -1
    empty: str = ''      # 'odd': PEs 1, 3, ... have no tokens; 'first': PE 0 has none
    every: bool = False  # every token goes to every PE (needs topk >= n_pes)

    def num_tokens(self, pe):
        if (self.empty == 'odd' and pe % 2 == 1) or (self.empty == 'first' and pe == 0):
            return 0
        return self.tokens + 13 * pe


def make_inputs(case, seed, pe, n):
    """PE pe's inputs (CPU): topk_idx [T, K] int64 (distinct experts, some -1), topk_weights fp32, x (bf16, or fp8
    with fp32 scales)."""
    g = torch.Generator().manual_seed(seed * 7919 + pe * 104729 + 17)
    T, K, E, H = case.num_tokens(pe), case.topk, case.experts, case.hidden
    L = E // n
    idx = torch.empty((T, K), dtype=torch.int64)
    for t in range(T):
        perm = torch.randperm(E, generator=g)
        if case.every and K >= n:  # one expert of each PE first, then any others
            first = torch.tensor([p * L + int(torch.randint(L, (1,), generator=g)) for p in range(n)])
            rest = perm[~torch.isin(perm, first)]
            perm = torch.cat([first, rest])
        idx[t] = perm[:K]
    if case.minus and not case.every:
        idx[torch.rand((T, K), generator=g) < case.minus] = -1
    w = torch.rand((T, K), generator=g, dtype=torch.float32) + 0.25
    if case.dtype == 'fp8':
        x = (torch.randn((T, H), generator=g) * 4).to(FP8)
        scales = torch.rand((T, H // 128), generator=g, dtype=torch.float32) + 0.5
        return idx, w, x, scales
    return idx, w, torch.randn((T, H), generator=g).to(BF16), None


def ref_layout(idx, E, n, pes_per_node):
    L = E // n
    T = idx.shape[0]
    pe_of = torch.where(idx >= 0, torch.div(idx, L, rounding_mode='floor'), torch.full_like(idx, -1))
    in_rank = torch.zeros((T, n), dtype=torch.bool)
    for p in range(n):
        in_rank[:, p] = (pe_of == p).any(1)
    per_rank = in_rank.sum(0).to(torch.int32)
    per_expert = torch.bincount(idx[idx >= 0], minlength=E).to(torch.int32)
    nodes = n // pes_per_node
    per_rdma = torch.stack([in_rank[:, k * pes_per_node:(k + 1) * pes_per_node].any(1).sum()
                            for k in range(nodes)]).to(torch.int32) if nodes > 1 else None
    return per_rank, per_rdma, per_expert, in_rank


def ref_dispatch(me, inputs, E, n, align):
    """What PE me receives: x rows (and scales), top-k ids in local numbering, weights (0 where not local), the
    aligned per-local-expert counts, and per row its (source PE, token)."""
    L = E // n
    xs, ss, ids, ws, src = [], [], [], [], []
    for s, (idx, w, x, scales) in enumerate(inputs):
        in_rank = ref_layout(idx, E, n, n)[3]
        sel = in_rank[:, me].nonzero().flatten()
        xs.append(x[sel])
        if scales is not None:
            ss.append(scales[sel])
        local = idx[sel]
        mine = (local >= me * L) & (local < (me + 1) * L)
        ids.append(torch.where(mine, local - me * L, torch.full_like(local, -1)))
        ws.append(torch.where(mine, w[sel], torch.zeros_like(w[sel])))
        src += [(s, int(t)) for t in sel]
    recv_idx = torch.cat(ids)
    counts = [int((recv_idx == j).sum()) for j in range(L)]
    counts = [(c + align - 1) // align * align for c in counts]
    return torch.cat(xs), (torch.cat(ss) if ss else None), recv_idx, torch.cat(ws), counts, src


def expert_output(recv_x, recv_scales, pe):
    """What PE pe's experts return for its received rows (the same ops on the CPU and the GPU, so the same bits)."""
    v = recv_x.float()
    if recv_scales is not None:
        v = v * recv_scales.repeat_interleave(128, dim=1)
    return (v * float(pe + 1)).to(BF16)


def ref_combine(me, inputs, E, n, bias):
    """combined_x of PE me: sum over PEs p ascending (those its token went to) of float(expert_output on p), then
    + bias0, + bias1, in fp32, one rounding; combined weights alike."""
    idx, w, x, scales = inputs[me]
    in_rank = ref_layout(idx, E, n, n)[3]
    T, H = x.shape
    out = torch.zeros((T, H), dtype=torch.float32)
    out_w = torch.zeros(w.shape, dtype=torch.float32)
    L = E // n
    for p in range(n):
        y = expert_output(x, scales, p).float()
        m = in_rank[:, p:p + 1]
        out = torch.where(m, out + y, out)
        on_p = (idx >= p * L) & (idx < (p + 1) * L)
        out_w = torch.where(m, out_w + torch.where(on_p, w, torch.zeros_like(w)), out_w)
    for b in bias:
        if b is not None:
            out = out + b.float()
    return out.to(BF16), out_w


def same_bits(a, b):
    """Equal shape, dtype and bits."""
    if a is None or b is None:
        return a is None and b is None
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def make_bias(kind, T, H, seed, pe):
    g = torch.Generator().manual_seed(seed * 31 + pe)
    b0 = torch.randn((T, H), generator=g).to(BF16)
    b1 = torch.randn((T, H), generator=g).to(BF16)
    return {'none': [None, None], 'one': [b0, None], 'two': [b0, b1]}[kind]


# ---- without a GPU: the reference, the arguments, the configuration -----------------------------------------------

def test_buffer_before_init_says_what_to_do():
    if tshmem.is_initialized():
        pytest.skip('tshmem is initialised already in this process')
    with pytest.raises(tshmem.NotInitializedError, match=r'tshmem\.ep\.Buffer: .*tshmem'):
        ep.Buffer(None, 1 << 20)


def test_reference_on_a_hand_example():
    # 2 PEs, 4 experts (2 each), 3 tokens on PE 0: to PE 0 only, to both, to none.
    idx = torch.tensor([[0, 1], [1, 3], [-1, -1]])
    per_rank, per_rdma, per_expert, in_rank = ref_layout(idx, 4, 2, 1)
    assert per_rank.tolist() == [2, 1] and per_rdma.tolist() == [2, 1] and per_expert.tolist() == [1, 2, 0, 1]
    assert in_rank.tolist() == [[True, False], [True, True], [False, False]]
    w = torch.tensor([[0.5, 0.25], [1.0, 2.0], [3.0, 4.0]])
    x = torch.tensor([[1.0], [2.0], [3.0]]).to(BF16)
    empty = (torch.empty((0, 2), dtype=torch.int64), torch.empty((0, 2)), torch.empty((0, 1), dtype=BF16), None)
    inputs = [(idx, w, x, None), empty]
    rx, _, ri, rw, counts, src = ref_dispatch(1, inputs, 4, 2, 4)
    assert rx.float().tolist() == [[2.0]] and ri.tolist() == [[-1, 1]] and rw.tolist() == [[0.0, 2.0]]
    assert counts == [0, 4] and src == [(0, 1)]
    out, out_w = ref_combine(0, inputs, 4, 2, [None, None])
    assert out.float().flatten().tolist() == [1.0, 2.0 * 1 + 2.0 * 2, 0.0]
    assert out_w.tolist() == [[0.5, 0.25], [1.0, 2.0], [0.0, 0.0]]


def test_config_events_and_sms():
    c = ep.Config(24, 6, 256, 6, 128)
    assert c.num_sms == 24 and 'num_sms=24' in repr(c)
    old = ep.Buffer.num_sms
    try:
        ep.Buffer.set_num_sms(16)
        assert ep.Buffer.get_dispatch_config(8).num_sms == 16 and ep.Buffer.get_combine_config(2).num_sms == 16
    finally:
        ep.Buffer.set_num_sms(old)
    with pytest.raises(TypeError, match='new_num_sms'):
        ep.Buffer.set_num_sms('24')
    e = ep.EventOverlap()
    e.current_stream_wait()  # nothing to wait for
    with e:
        pass


@needs_ext
def test_size_hints():
    nvl, rdma = ep.buffer_size_hint(8, 4096, 7168)
    assert nvl >= 8 * 4096 * 7168 * 2 and rdma > 0
    assert ep.Config().get_nvl_buffer_size_hint(7168 * 2, 8) == nvl
    assert ep.Config().get_rdma_buffer_size_hint(7168 * 2, 8) == rdma
    assert ep.Buffer.get_buffer_size_hint(2, 128, 512, FP8, 2)[0] <= ep.buffer_size_hint(2, 128, 512, BF16, 2)[0]
    with pytest.raises(TypeError, match=r'dtype = torch.float64'):
        ep.buffer_size_hint(8, 4096, 7168, torch.float64)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'tshmem_ep_buffer_size_hint: hidden = 100'):
        ep.buffer_size_hint(8, 4096, 100)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'n_pes = 0'):
        ep.buffer_size_hint(0, 4096, 128)


def _x(T=4, H=256, dtype=BF16, device='cpu'):
    return torch.zeros((T, H), dtype=dtype, device=device)


def _layout_args(T=4, n=2, E=8):
    return dict(num_tokens_per_rank=torch.zeros(n, dtype=torch.int32),
                is_token_in_rank=torch.zeros((T, n), dtype=torch.bool),
                num_tokens_per_expert=torch.zeros(E, dtype=torch.int32))


# (method, args, kwargs, exception, message): every mistake Python alone can see, on a buffer without memory.
_IDX = torch.zeros((4, 2), dtype=torch.int64)
_W = torch.zeros((4, 2), dtype=torch.float32)
MISTAKES = [
    ('get_dispatch_layout', (_IDX.int(), 8), {}, TypeError, r'topk_idx has dtype torch.int32; it must be torch.int64'),
    ('get_dispatch_layout', (_IDX[:, 0], 8), {}, ValueError, r'topk_idx has shape \(4,\); it must have 2 dimensions'),
    ('get_dispatch_layout', (_IDX.t(), 8), {}, ValueError, r'topk_idx is not contiguous'),
    ('get_dispatch_layout', (_IDX, 8.0), {}, TypeError, r'num_experts = 8.0 is not an int'),
    ('get_dispatch_layout', (_IDX, 8), dict(async_finish=1), TypeError, r'async_finish = 1 is not a bool'),
    ('get_dispatch_layout', (_IDX, 8), dict(previous_event='e'), TypeError, r'previous_event is a str'),
    ('get_dispatch_layout', (_IDX, 8), dict(allocate_on_comm_stream=True), ValueError,
     r'allocate_on_comm_stream = True needs previous_event and async_finish'),
    ('dispatch', (_x(dtype=torch.float64),), _layout_args(), TypeError, r'x has dtype torch.float64'),
    ('dispatch', ([_x(), _x()],), _layout_args(), TypeError, r'x\[1\] \(scales\) has dtype torch.bfloat16; it must '
     r'be torch.float32'),
    ('dispatch', ((_x(dtype=FP8), torch.zeros((4, 3))),), _layout_args(), ValueError,
     r'x\[1\] \(scales\) has shape \(4, 3\); it must be \(4, 2\) \(one fp32 scale per 128 channels'),
    ('dispatch', ((_x(), _x(), _x()),), _layout_args(), TypeError, r'x is a sequence of 3'),
    ('dispatch', (_x().t(),), _layout_args(), ValueError, r'x is not contiguous'),
    ('dispatch', (_x()[0],), _layout_args(), ValueError, r'x has shape \(256,\); it must have 2 dimensions'),
    ('dispatch', ('x',), _layout_args(), TypeError, r'x is a str; it must be a torch.Tensor'),
    ('dispatch', (_x(),), dict(_layout_args(), topk_idx=_IDX.int(), topk_weights=_W), TypeError,
     r'topk_idx has dtype torch.int32; it must be torch.int64'),
    ('dispatch', (_x(),), dict(_layout_args(), topk_idx=_IDX[:3], topk_weights=_W), ValueError,
     r'topk_idx has shape \(3, 2\); it must be \(4, 2\) \(one row per token of x\)'),
    ('dispatch', (_x(),), dict(_layout_args(), topk_idx=_IDX, topk_weights=_W.half()), TypeError,
     r'topk_weights has dtype torch.float16; it must be torch.float32'),
    ('dispatch', (_x(),), dict(_layout_args(), topk_idx=_IDX, topk_weights=_W[:, :1].contiguous()), ValueError,
     r'topk_weights has shape \(4, 1\); it must be \(4, 2\)'),
    ('dispatch', (_x(),), dict(_layout_args(), is_token_in_rank=torch.zeros((4, 2), dtype=torch.int32)), TypeError,
     r'is_token_in_rank has dtype torch.int32; it must be torch.bool'),
    ('dispatch', (_x(),), dict(_layout_args(), is_token_in_rank=torch.zeros((4, 3), dtype=torch.bool)), ValueError,
     r'is_token_in_rank has shape \(4, 3\); it must be \(4, 2\)'),
    ('dispatch', (_x(),), dict(_layout_args(), num_tokens_per_expert=None), TypeError,
     r'num_tokens_per_expert is None; it must be a torch.Tensor \(from get_dispatch_layout\)'),
    ('dispatch', (_x(),), dict(_layout_args(), num_tokens_per_expert=torch.zeros(8, dtype=torch.int64)), TypeError,
     r'num_tokens_per_expert has dtype torch.int64; it must be torch.int32'),
    ('dispatch', (_x(),), dict(_layout_args(), expert_alignment=1.5), TypeError, r'expert_alignment = 1.5 is not'),
    ('dispatch', (_x(),), dict(_layout_args(), config=8), TypeError, r'config is a int; it must be a tshmem.ep.Config'),
    ('dispatch', (_x(),), dict(handle=('h',)), TypeError, r'handle is a tuple; it must be the handle a dispatch'),
    ('combine', (_x(), None), {}, TypeError, r'handle is None'),
    ('combine', (_x(dtype=torch.float64), None), {}, TypeError, r'x has dtype torch.float64'),
    ('combine', (_x(), 'h'), {}, TypeError, r'handle is a str'),
]


@pytest.mark.parametrize('method,args,kwargs,exc,message', MISTAKES,
                         ids=[f'{m[0]}-{i}' for i, m in enumerate(MISTAKES)])
def test_argument_mistakes_name_call_argument_and_rule(method, args, kwargs, exc, message):
    b = ep.Buffer._without_memory(n_pes=2)
    with pytest.raises(exc, match=rf'tshmem\.ep\.Buffer\.{method}: {message}') as info:
        getattr(b, method)(*args, **kwargs)
    assert isinstance(info.value, tshmem.Error)


def test_wrong_device_and_foreign_handle():
    b = ep.Buffer._without_memory(n_pes=2, device='cuda:0')  # its GPU; the tensors are on the CPU
    with pytest.raises(ValueError, match=r'dispatch: x is on cpu; it must be on cuda:0, this PE\'s GPU'):
        b.dispatch(_x(), **_layout_args())
    with pytest.raises(ValueError, match=r'get_dispatch_layout: topk_idx is on cpu; it must be on cuda:0'):
        b.get_dispatch_layout(_IDX, 8)
    cpu, other = ep.Buffer._without_memory(n_pes=2), ep.Buffer._without_memory(n_pes=2)
    foreign = ep.Handle(other._state, (128, 8, 0))
    foreign.num_tokens = 4
    with pytest.raises(ValueError, match=r'combine: handle was made by another tshmem.ep.Buffer'):
        cpu.combine(_x(), foreign)
    with pytest.raises(ValueError, match=r'dispatch: handle was made by another tshmem.ep.Buffer'):
        cpu.dispatch(_x(), foreign)
    mine = ep.Handle(cpu._state, (128, 8, 0))
    mine.num_tokens = 4
    with pytest.raises(TypeError, match=r'combine: bias\[1\] has dtype torch.float32; it must be torch.bfloat16'):
        cpu.combine(_x(), mine, bias=(_x(), _x(dtype=torch.float32)))
    with pytest.raises(ValueError, match=r'combine: bias has shape \(3, 256\); it must be \(4, 256\)'):
        cpu.combine(_x(), mine, bias=_x(T=3))
    with pytest.raises(TypeError, match=r'combine: bias is a sequence of 3'):
        cpu.combine(_x(), mine, bias=[None, None, None])
    with pytest.raises(ValueError, match=r'combine: topk_weights has shape \(3, 2\); it must be \(4, 2\)'):
        cpu.combine(_x(), mine, topk_weights=_W[:3])


def test_set_timeout_ms_takes_an_int():
    with pytest.raises(tshmem.ArgumentTypeError, match=r'set_timeout_ms: timeout_ms = 1.5 is not an int'):
        ep.Buffer._without_memory().set_timeout_ms(1.5)


def test_correct_arguments_reach_the_buffer():
    """Arguments that pass every check get as far as the buffer (which here has no memory)."""
    b = ep.Buffer._without_memory(n_pes=2)
    for call in (lambda: b.get_dispatch_layout(_IDX, 8),
                 lambda: b.dispatch(_x(), topk_idx=_IDX, topk_weights=_W, **_layout_args()),
                 lambda: b.dispatch((_x(dtype=FP8), torch.zeros((4, 2))), **_layout_args()),
                 lambda: b.combine(_x(), ep.Handle(b._state, (128, 8, 0)), _W, None, ep.Config(8)),
                 lambda: b.set_timeout_ms(1000)):
        with pytest.raises(tshmem.NotInitializedError, match='has no memory'):
            call()


@needs_ext
def test_host_heap_is_refused(pe):
    if GPU:
        pytest.skip('the heap is GPU memory here')
    with pytest.raises(tshmem.NotInitializedError, match=r'tshmem.ep.Buffer: tshmem_ep_buffer_create: .*GPU heap'):
        ep.Buffer(None, 1 << 20)


def test_group_mismatch_is_refused(pe):
    if not HAVE_EXT:
        pytest.skip('no extension')

    class Group:  # neither a team nor a process group
        pass
    with pytest.raises(TypeError, match='group_or_team = .* is neither None, tshmem.TEAM_WORLD nor'):
        ep.Buffer(Group(), 1 << 20)
    with pytest.raises(ep.UnsupportedError, match='TEAM_WORLD'):
        ep.Buffer(tshmem.TEAM_NODE, 1 << 20)


# ---- on the GPU heap ----------------------------------------------------------------------------------------------

CASES = [
    Case('bf16-k1-e8', 'bf16', 1, 8, 256, 96),
    Case('bf16-k2-e64-odd-empty', 'bf16', 2, 64, 256, 80, minus=0.2, empty='odd'),
    Case('bf16-k8-e256', 'bf16', 8, 256, 512, 120, minus=0.15),
    Case('fp8-k8-e64', 'fp8', 8, 64, 512, 100, minus=0.2),
    Case('bf16-k8-e8-every', 'bf16', 8, 8, 256, 64, every=True),
    Case('fp8-k2-e256-first-empty', 'fp8', 2, 256, 256, 70, minus=0.1, empty='first'),
]
MAX_TOKENS = 200  # per PE, above every case's
SIGNAL_TIMEOUT_MS = 60000  # the buffer's bound of a wait for another PE (see buf)


def dev():
    return torch.device('cuda', tshmem.device())


@pytest.fixture(scope='module')
def buf(pe):
    if not (GPU and HAVE_EXT and torch.cuda.is_available()):
        pytest.skip('needs a GPU heap, CUDA torch and tshmem.ep\'s extension')
    nvl, rdma = ep.buffer_size_hint(pe[1], MAX_TOKENS, 512, BF16, 8)
    b = ep.Buffer(None, nvl, rdma)
    # A PE that fails (or skips) between two collective calls leaves the others waiting for its signal: bounded
    # here, so that a divergence is an error naming the PE, not a hang.
    b.set_timeout_ms(SIGNAL_TIMEOUT_MS)
    yield b
    b.destroy()


def to_dev(t):
    return None if t is None else t.to(dev())


def call_kw(stream_kw):
    """The stream arguments of one call. A previous_event in stream_kw stands for 'what the current stream has done
    so far', so it is recorded afresh before each call: the communication stream waits for that event alone, and
    an event recorded before the inputs were made (the expert output computed between dispatch and combine) would
    let the call read them before they are written."""
    kw = dict(stream_kw)
    if kw.get('previous_event') is not None:
        kw['previous_event'] = ep.EventOverlap(torch.cuda.current_stream().record_event())
    return kw


def run_layer(b, case, seed, align=1, bias_kind='none', num_worst_tokens=0, **stream_kw):
    """layout, dispatch, the experts, combine on this PE; checks each against the reference. Returns the outputs.
    Every PE makes every collective call whatever it finds: mismatches are collected and asserted at the end, so
    that a wrong result on one PE fails the test there instead of leaving the others waiting in the combine."""
    me, n = tshmem.my_pe(), tshmem.n_pes()
    problems = []

    def check(ok, what):
        if not ok:
            problems.append(what)

    inputs = [make_inputs(case, seed, p, n) for p in range(n)]
    idx, w, x, scales = (to_dev(t) for t in inputs[me])
    E = case.experts
    layout = b.get_dispatch_layout(idx, E)
    want = ref_layout(inputs[me][0], E, n, b._info['pes_per_node'])
    for got, exp, name in zip(layout[:4], want, ('per_rank', 'per_rdma', 'per_expert', 'in_rank')):
        check(same_bits(got, exp), f'{case.name}: {name}')
    per_rank, per_rdma, per_expert, in_rank, _ = layout
    xin = (x, scales) if scales is not None else x
    recv, recv_idx, recv_w, counts, handle, event = b.dispatch(
        xin, None, per_rank, per_rdma, in_rank, per_expert, idx, w, expert_alignment=align,
        num_worst_tokens=num_worst_tokens, **call_kw(stream_kw))
    if stream_kw.get('async_finish'):
        event.current_stream_wait()
    rx, rs, ri, rw, rcounts, _ = ref_dispatch(me, inputs, E, n, align)
    rows = rx.shape[0]
    recv_x, recv_s = recv if scales is not None else (recv, None)
    if num_worst_tokens:
        check(recv_x.shape[0] == num_worst_tokens and counts == [], f'{case.name}: worst-case outputs')
        check(handle.num_recv_tokens is None, f'{case.name}: num_recv_tokens after a worst-case dispatch')
        dc = handle.device_counts().cpu().tolist()
        check(dc == [rows] + rcounts, f'{case.name}: device counts {dc}, expected {[rows] + rcounts}')
        check(bool((recv_idx[rows:] == -1).all()) and bool((recv_w[rows:] == 0).all()), f'{case.name}: padding rows')
    else:
        check(counts == rcounts, f'{case.name}: num_recv_tokens_per_expert_list {counts}, expected {rcounts}')
        check(handle.num_recv_tokens == rows, f'{case.name}: num_recv_tokens {handle.num_recv_tokens}, expected {rows}')
    check(same_bits(recv_x[:rows], rx), f'{case.name}: recv_x')
    if scales is not None:
        check(same_bits(recv_s[:rows], rs), f'{case.name}: recv_x_scales')
    check(same_bits(recv_idx[:rows], ri) and same_bits(recv_w[:rows], rw), f'{case.name}: recv top-k')
    y = expert_output(recv_x, recv_s, me)
    bias = [to_dev(t) for t in make_bias(bias_kind, x.shape[0], x.shape[1], seed, me)]
    bias_arg = None if bias_kind == 'none' else (bias[0] if bias_kind == 'one' else tuple(bias))
    combined, combined_w, event = b.combine(y, handle, recv_w, bias_arg, **call_kw(stream_kw))
    if stream_kw.get('async_finish'):
        with event:
            pass
    exp, exp_w = ref_combine(me, inputs, E, n, make_bias(bias_kind, x.shape[0], x.shape[1], seed, me))
    check(same_bits(combined, exp), f'{case.name}: combined_x')
    check(same_bits(combined_w, exp_w), f'{case.name}: combined_topk_weights')
    assert not problems, f'PE {me} of {n}: ' + '; '.join(problems)
    return handle, combined


@needs_gpu
@pytest.mark.parametrize('align', [1, 128])
@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_layout_dispatch_combine_bits(buf, case, align):
    if case.dtype == 'fp8' and FP8 is None:
        pytest.skip('this torch has no float8_e4m3fn')
    kind = ('none', 'one', 'two')[CASES.index(case) % 3]
    run_layer(buf, case, seed=1 + CASES.index(case), align=align, bias_kind=kind)


@needs_gpu
def test_cached_dispatch_reuses_the_routes(buf):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    case = CASES[2]
    handle, _ = run_layer(buf, case, seed=5)
    other = Case(**{**dataclasses.asdict(case)})
    inputs = [make_inputs(other, 5, p, n) for p in range(n)]
    x2 = [(i, w, (x.float() * 3).to(BF16), s) for (i, w, x, s) in inputs]  # same routes, other rows
    recv, recv_idx, recv_w, counts, h2, _ = buf.dispatch(to_dev(x2[me][2]), handle)
    assert h2 is handle and recv_idx is None and recv_w is None and counts is None
    assert same_bits(recv, ref_dispatch(me, x2, case.experts, n, 1)[0])


@needs_gpu
def test_async_finish_and_previous_event(buf):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    case = CASES[3]
    idx = to_dev(make_inputs(case, 9, me, n)[0])
    *layout, event = buf.get_dispatch_layout(idx, case.experts, async_finish=True)
    assert isinstance(event, ep.EventOverlap) and event.event is not None
    *layout2, event2 = buf.get_dispatch_layout(idx, case.experts, previous_event=event, async_finish=True,
                                               allocate_on_comm_stream=True)
    event2.current_stream_wait()
    assert all(same_bits(a, b) for a, b in zip(layout, layout2))
    run_layer(buf, case, seed=9, async_finish=True, previous_event=event2, allocate_on_comm_stream=True)
    run_layer(buf, case, seed=9, async_finish=True)


@needs_gpu
def test_num_worst_tokens_under_cuda_graph(buf):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    case = Case('graph', 'bf16', 4, 64, 256, 64, minus=0.1)
    worst = sum(case.num_tokens(p) for p in range(n))
    run_layer(buf, case, seed=20, num_worst_tokens=worst)  # eager, and the warm-up: its handle returns to the pool
    T = case.num_tokens(me)
    s_idx = torch.empty((T, case.topk), dtype=torch.int64, device=dev())
    s_w = torch.empty((T, case.topk), dtype=torch.float32, device=dev())
    s_x = torch.empty((T, case.hidden), dtype=BF16, device=dev())

    def layer():
        per_rank, per_rdma, per_expert, in_rank, _ = buf.get_dispatch_layout(s_idx, case.experts)
        recv_x, recv_idx, recv_w, _, handle, _ = buf.dispatch(s_x, None, per_rank, per_rdma, in_rank, per_expert,
                                                              s_idx, s_w, num_worst_tokens=worst)
        combined, combined_w, _ = buf.combine(expert_output(recv_x, None, me), handle, recv_w)
        return recv_x, recv_idx, recv_w, combined, combined_w

    def load(seed):
        i, w, x, _ = make_inputs(case, seed, me, n)
        s_idx.copy_(i)
        s_w.copy_(w)
        s_x.copy_(x)

    load(20)
    side = torch.cuda.Stream(device=dev())
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # torch's warm-up before capture, with the captured tensors
        layer()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = layer()
    for seed in (21, 22, 21):
        load(seed)
        graph.replay()
        torch.cuda.synchronize()
        inputs = [make_inputs(case, seed, p, n) for p in range(n)]
        rx, _, ri, rw, _, _ = ref_dispatch(me, inputs, case.experts, n, 1)
        rows = rx.shape[0]
        recv_x, recv_idx, recv_w, combined, combined_w = outs
        assert same_bits(recv_x[:rows], rx) and same_bits(recv_idx[:rows], ri) and same_bits(recv_w[:rows], rw)
        assert (recv_idx[rows:] == -1).all() and (recv_w[rows:] == 0).all()
        exp, exp_w = ref_combine(me, inputs, case.experts, n, [None, None])
        assert same_bits(combined, exp) and same_bits(combined_w, exp_w), f'replay of seed {seed}'
    buf.check_device_errors()
    del graph
    run_layer(buf, case, seed=23)  # eager again after the graph


@needs_gpu
def test_hundred_rounds_same_bits(buf):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    case = CASES[2]
    inputs = [make_inputs(case, 40, p, n) for p in range(n)]
    idx, w, x, _ = (to_dev(t) for t in inputs[me])
    first = None
    for _ in range(100):
        per_rank, per_rdma, per_expert, in_rank, _ = buf.get_dispatch_layout(idx, case.experts)
        recv_x, _, recv_w, _, handle, _ = buf.dispatch(x, None, per_rank, per_rdma, in_rank, per_expert, idx, w)
        combined, _, _ = buf.combine(expert_output(recv_x, None, me), handle, None, None)
        if first is None:
            first = combined
            assert same_bits(first, ref_combine(me, inputs, case.experts, n, [None, None])[0])
        else:
            assert torch.equal(combined.view(torch.int16), first.view(torch.int16))


@needs_gpu
def test_mistakes_the_c_api_finds(buf):
    me, n = tshmem.my_pe(), tshmem.n_pes()
    case = CASES[0]
    handle, _ = run_layer(buf, case, seed=60)
    rows = handle.num_recv_rows
    with pytest.raises(tshmem.ArgumentTypeError, match=r'combine: tshmem_ep_combine: x_dtype = 2; .*torch.float32'):
        buf.combine(torch.zeros((rows, case.hidden), device=dev()), handle)
    if rows > 0:
        with pytest.raises(tshmem.InvalidArgumentError, match=rf'combine: tshmem_ep_combine: num_rows = {rows - 1}; '):
            buf.combine(torch.zeros((rows - 1, case.hidden), dtype=BF16, device=dev()), handle)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'dispatch: tshmem_ep_dispatch: hidden = 100;'):
        buf.dispatch(torch.zeros((handle.num_tokens, 100), dtype=BF16, device=dev()), handle)
    if FP8 is not None:
        with pytest.raises(tshmem.InvalidArgumentError, match=r'hidden = 200; fp8 rows .* multiple of 128'):
            buf.dispatch((torch.zeros((handle.num_tokens, 200), dtype=FP8, device=dev()),
                          torch.zeros((handle.num_tokens, 1), device=dev())), handle)
    with pytest.raises(tshmem.ArgumentTypeError, match=r'dispatch: tshmem_ep_dispatch: x_dtype = 3; .*float16'):
        buf.dispatch(torch.zeros((handle.num_tokens, 256), dtype=torch.float16, device=dev()), handle)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'dispatch: tshmem_ep_dispatch: num_tokens = '):
        buf.dispatch(torch.zeros((handle.num_tokens + 1, 256), dtype=BF16, device=dev()), handle)
    if n > 1:
        e = 6 if n == 4 else 7
        with pytest.raises(tshmem.InvalidArgumentError, match=rf'get_dispatch_layout: .*num_experts = {e}; must be a '
                           'multiple of the PE count'):
            buf.get_dispatch_layout(torch.zeros((4, 1), dtype=torch.int64, device=dev()), e)
    # A buffer too small for the rows: every PE decides alike (the sizes of every PE are known after the notify).
    small = ep.Buffer(None, 4096, 4096)
    try:
        i, w, x, _ = (to_dev(t) for t in make_inputs(case, 61, me, n))
        per_rank, per_rdma, per_expert, in_rank, _ = small.get_dispatch_layout(i, case.experts)
        with pytest.raises(ep.BufferTooSmallError, match=r'dispatch: tshmem_ep_dispatch: .*num_nvl_bytes'):
            small.dispatch(x, None, per_rank, per_rdma, in_rank, per_expert, i, w)
        with pytest.raises(ValueError, match=r'combine: handle was made by another tshmem.ep.Buffer'):
            small.combine(torch.zeros((rows, case.hidden), dtype=BF16, device=dev()), handle)
    finally:
        small.destroy()
    with pytest.raises(tshmem.InvalidArgumentError, match='the buffer was destroyed'):
        small.get_dispatch_layout(torch.zeros((4, 1), dtype=torch.int64, device=dev()), 8)
    # An expert id out of range, on every PE: found on the device, reported by the layout call.
    bad = torch.full((4, 2), case.experts, dtype=torch.int64, device=dev())
    with pytest.raises(ep.InvalidValueError, match=r'get_dispatch_layout: tshmem_ep_get_dispatch_layout: .*'):
        buf.get_dispatch_layout(bad, case.experts)
    try:
        buf.check_device_errors()
    except ep.InvalidValueError:
        pass
    run_layer(buf, case, seed=62)  # the buffer still works


@needs_gpu
def test_buffers_left_alive_are_destroyed_by_finalize(pe):
    """What tshmem.finalize runs first: every buffer not destroyed, in creation order, with an UnfreedWarning."""
    nvl, rdma = ep.buffer_size_hint(pe[1], 16, 256, BF16, 2)
    left = ep.Buffer(None, nvl, rdma)
    others = [b for b in ep._live_buffers if b is not left]
    ep._live_buffers[:] = [left]
    try:
        with pytest.warns(tshmem.UnfreedWarning, match=r'1 tshmem.ep.Buffer\(s\) never destroyed, destroyed now: '
                          r'tshmem.ep.Buffer\(num_nvl_bytes=\d+, num_rdma_bytes=\d+\) from test_ep.py'):
            ep._destroy_leftovers()
    finally:
        ep._live_buffers[:] = others
    assert not left._state.live
    left.destroy()  # a second destroy does nothing
