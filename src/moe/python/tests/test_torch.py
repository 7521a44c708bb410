"""tshmem_moe on torch tensors (GPU host): every entry point on CUDA equals the library's CPU reference (the
same call on CPU tensors), outputs land on the inputs' device, work follows torch's current stream, value
errors surface in both check modes, and inputs on a second GPU work while another is current. Skips without
torch (CUDA parts: without a GPU)."""
import time

import pytest

torch = pytest.importorskip('torch')
import tshmem_moe as tm  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert torch.equal(a.cpu().view(torch.uint8) if a.element_size() == 1 else a.cpu(), b.cpu().view(torch.uint8)
                       if b.element_size() == 1 else b.cpu())


def topk_idx(t, k, e, gen):
    idx = torch.stack([torch.randperm(e, generator=gen)[:k] for _ in range(t)])
    idx[torch.rand(t, k, generator=gen) < 0.2] = -1
    return idx.to(torch.int64)


def run_all(dev, gen):
    """Every entry point at small shapes on `dev`; returns the outputs in a flat list (CPU tensors)."""
    outs = []
    scores = torch.rand(300, 256, generator=gen).to(dev)
    outs.append(tm.topk_gate(scores, 8))
    outs.append(tm.topk_sum_and_topk_group_idx(scores.view(300, 8, 32), 2, 4))
    logits = torch.randn(300, 256, generator=gen).to(dev)
    bias = torch.randn(256, generator=gen).to(dev)
    i, w = tm.top2_sum_gate(logits, bias, 8, 4, 8, False, 0, 2.5, 0, 1, 0, 1, 'sigmoid')
    outs += [i, w]
    idx = topk_idx(500, 6, 32, gen).to(dev)
    outs.append(tm.group_count(idx, 32))
    outs.append(tm.aux_fi(idx, 32, 6))
    outs += list(tm.normalize_weight(torch.rand(500, 6, generator=gen).to(dev)))
    outs.append(tm.mask_indices_by_tp(idx, 32, 4, 1, 2))
    g = (idx // 4).clone()
    tm.inplace_unique_group_indices(g, 8)
    outs.append(g)
    m = tm.get_fused_mapping(idx, 32, 0, 64)
    outs += list(m[:7])
    x = torch.randn(500, 512, generator=gen).to(torch.bfloat16).to(dev)
    xf = tm.expand_to_fused(x, m[3], m[0])
    outs.append(xf)
    sf = torch.rand(500, 4, generator=gen).to(dev)
    outs += list(tm.expand_to_fused_with_sf((x, sf), 128, m[3], m[0], True))
    wk = torch.rand(500, 6, generator=gen).to(dev)
    outs.append(tm.reduce_fused(xf, wk, m[3]))
    outs.append(tm.reduce_fused(xf.float(), wk, m[3], 'e4m3', torch.tensor([0.5]).to(dev)))
    return outs, m[7]


def test_torch_cpu_tensors_run_the_reference():
    outs, counts = run_all('cpu', torch.Generator().manual_seed(0))
    assert all(o.device.type == 'cpu' for o in outs)
    assert outs[-1].dtype == torch.float8_e4m3fn and outs[0].dtype == torch.int64
    assert sum(counts) == outs[10].shape[0]


@cuda
def test_cuda_equals_cpu_reference_bitwise():
    dev = torch.device('cuda', torch.cuda.current_device())
    ref, ref_counts = run_all('cpu', torch.Generator().manual_seed(1))
    for num_sms in (1, tm.get_device_num_sms() - 20, tm.get_device_num_sms()):
        tm.set_num_sms(num_sms)
        got, counts = run_all(dev, torch.Generator().manual_seed(1))
        assert counts == ref_counts
        for n, (a, b) in enumerate(zip(got, ref)):
            assert a.device == dev, n
            if n == 3:  # top2_sum_gate weights: rtol 1e-5 (the spec's)
                torch.testing.assert_close(a.cpu(), b, rtol=1e-5, atol=0)
            else:
                same(a, b)
    tm.set_num_sms(tm.get_device_num_sms())


@cuda
def test_work_follows_torchs_current_stream():
    s = torch.cuda.Stream()
    x = torch.randn(8001, 7168, device='cuda', dtype=torch.bfloat16)
    idx = topk_idx(8001, 6, 16, torch.Generator().manual_seed(2)).cuda()
    with torch.cuda.stream(s):
        m = tm.get_fused_mapping(idx, 16, 0, 128)
        xf = tm.expand_to_fused(x, m[3], m[0])
        y = tm.reduce_fused(xf, None, m[3])
    # Nothing was queued on the default stream: it is idle while s may still run.
    torch.cuda.current_stream().synchronize()
    s.synchronize()
    ref = x.float() * (idx >= 0).sum(1, keepdim=True)
    torch.testing.assert_close(y.float(), ref.to(torch.bfloat16).float(), rtol=1e-2, atol=1e-2)


@cuda
def test_value_errors_in_both_modes():
    bad = torch.tensor([[0, 7]], device='cuda')
    tm.check_device_errors()  # nothing pending
    tm.group_count(bad, 4)  # deferred (the default): no raise here
    with pytest.raises(tm.ValueRuleError, match=r"'group_idx' holds 7"):
        tm.check_device_errors()
    tm.check_device_errors()  # cleared
    tm.set_check_mode('sync')
    try:
        with pytest.raises(tm.ValueRuleError, match=r"'group_idx' holds 7"):
            tm.group_count(bad, 4)
    finally:
        tm.set_check_mode('deferred')


@cuda
def test_argument_errors_name_tensor_and_devices():
    x = torch.zeros(4, 256, device='cuda')
    with pytest.raises(tm.DeviceMismatchError, match=r'token_topk_to_pos.*cuda:0.*CPU|token_topk_to_pos'):
        tm.expand_to_fused(x, torch.zeros(4, 1, dtype=torch.int32), torch.zeros(4, dtype=torch.int32, device='cuda'))
    with pytest.raises(tm.ArgumentError, match=r'num_sms = 100000'):
        tm.set_num_sms(100000)


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason='needs 2 CUDA devices')
def test_inputs_on_another_device_than_the_current_one():
    torch.cuda.set_device(0)
    gen = torch.Generator().manual_seed(3)
    ref, _ = run_all(torch.device('cuda', 0), gen)
    got, _ = run_all(torch.device('cuda', 1), torch.Generator().manual_seed(3))
    assert torch.cuda.current_device() == 0
    for a, b in zip(got, ref):
        assert a.device.index == 1
        same(a, b)


@cuda
def test_host_time_per_call_is_reported():
    """Back-to-back host time of a few calls (printed with -s; the limits are loose: speed lives in perftest)."""
    scores = torch.rand(8001, 256, device='cuda')
    idx = tm.topk_gate(scores, 8)
    x = torch.randn(8001, 7168, device='cuda', dtype=torch.bfloat16)
    m = tm.get_fused_mapping(idx % 16, 16, 8001 * 8 + 16 * 127, 128)
    xf = tm.expand_to_fused(x, m[3], m[0])
    calls = {'topk_gate': lambda: tm.topk_gate(scores, 8), 'group_count': lambda: tm.group_count(idx, 256),
             'get_fused_mapping(P>0)': lambda: tm.get_fused_mapping(idx % 16, 16, 8001 * 8 + 16 * 127, 128),
             'reduce_fused': lambda: tm.reduce_fused(xf, None, m[3])}
    for name, fn in calls.items():
        fn()
        torch.cuda.synchronize()
        n = 200
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host = (time.perf_counter() - t0) / n * 1e6
        torch.cuda.synchronize()
        print(f'host time per call {name}: {host:.1f} us')
        assert host < 1000
