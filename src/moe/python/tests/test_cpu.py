"""tshmem_moe on numpy arrays: the library's CPU reference behind TileKernels' signatures. Runs without a GPU
and without torch (CI): signatures, defaults, return types, output allocation, and the argument, dtype, shape,
value and device errors with the library's messages."""
import numpy as np
import pytest

import tshmem_moe as tm


def rng(seed=0):
    return np.random.default_rng(seed)


def test_topk_gate_is_a_stable_descending_topk():
    scores = rng().random((7, 40), dtype=np.float32)
    scores[3, 5] = scores[3, 9] = 2.0  # a tie goes to the smaller index
    out = tm.topk_gate(scores, 6)
    assert out.dtype == np.int64 and out.shape == (7, 6)
    ref = np.argsort(-scores, axis=1, kind='stable')[:, :6]
    np.testing.assert_array_equal(out, ref)
    assert list(out[3, :2]) == [5, 9]


def test_topk_gate_errors_carry_the_library_message():
    scores = np.zeros((4, 16), np.float32)
    with pytest.raises(tm.ArgumentError, match=r'tshmem_moe_topk_gate: num_topk = 17 with E = 16'):
        tm.topk_gate(scores, 17)
    with pytest.raises(TypeError, match=r'topk_gate: scores has dtype float64'):
        tm.topk_gate(scores.astype(np.float64), 2)
    with pytest.raises(tm.ArgumentError, match=r'scores has 1 dimensions'):
        tm.topk_gate(scores[0], 2)
    with pytest.raises(tm.ArgumentError, match=r'scores.*contiguous'):
        tm.topk_gate(np.zeros((16, 4), np.float32).T, 2)
    with pytest.raises(TypeError, match=r'scores is a list; it must be a torch.Tensor or a numpy array'):
        tm._C.topk_gate([[1.0]], 1, np.zeros((1, 1), np.int64), 0)


def test_error_classes():
    assert issubclass(tm.ArgumentError, ValueError) and issubclass(tm.ArgumentError, tm.Error)
    assert issubclass(tm.ValueRuleError, tm.ArgumentError)
    assert issubclass(tm.UnsupportedError, NotImplementedError)
    assert issubclass(tm.Error, RuntimeError)


def test_topk_sum_and_topk_group_idx_ranks_groups_by_top2_sum():
    scores = rng(1).random((9, 8, 16), dtype=np.float32)
    out = tm.topk_sum_and_topk_group_idx(scores, 2, 3)
    assert out.dtype == np.int64 and out.shape == (9, 3)
    top2 = np.sort(scores, axis=2)[:, :, -2:]
    group_score = top2[:, :, 1] + top2[:, :, 0]
    ref = np.argsort(-group_score, axis=1, kind='stable')[:, :3]
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(tm.ArgumentError, match=r'num_topk_sum'):
        tm.topk_sum_and_topk_group_idx(scores, 3, 3)


def test_top2_sum_gate_signature_and_shapes():
    t, r = 6, 64
    logits = rng(2).standard_normal((t, r), dtype=np.float32)
    bias = np.zeros(r, np.float32)
    idx, w = tm.top2_sum_gate(logits, bias, 6, 2, 4, False, 1, 2.5, 0, 1, 0, 1, 'sigmoid')
    assert idx.dtype == np.int64 and w.dtype == np.float32 and idx.shape == (t, 6) and w.shape == (t, 6)
    assert (idx >= 0).all() and (idx < r).all()
    np.testing.assert_allclose(w.sum(1), 2.5, rtol=1e-5)
    # shared experts as routed: K + S columns, and the physical map is then required (S <= extra experts)
    with pytest.raises(tm.ArgumentError, match=r'num_shared_experts = 1 exceeds num_extra_experts = 0'):
        tm.top2_sum_gate(logits, bias, 4, 2, 4, True, 1, 1.0, 0, 1, 0, 1, 'softmax')
    m = np.stack([np.arange(r + 1), np.arange(r + 1)], 1).astype(np.int32)  # one replica each, plus a spare
    idx_s, w_s = tm.top2_sum_gate(logits, bias, 4, 2, 4, True, 1, 1.0, 0, 1, 0, 1, 'softmax',
                                  to_physical_map=m, logical_count=np.ones(r + 1, np.int32))
    assert idx_s.shape == (t, 5) and w_s.shape == (t, 5)
    assert (w_s[:, 4] == 1.0).all()
    with pytest.raises(tm.ArgumentError, match=r'bogus'):
        tm.top2_sum_gate(logits, bias, 6, 2, 4, False, 0, 1.0, 0, 1, 0, 1, 'bogus')
    with pytest.raises(tm.ArgumentError, match=r'mask'):
        tm.top2_sum_gate(logits, bias, 6, 2, 4, False, 0, 1.0, 0, 1, 0, 1, 'sigmoid', mask=np.ones(t + 1, bool))
    masked_idx, _ = tm.top2_sum_gate(logits, bias, 6, 2, 4, False, 0, 1.0, 0, 1, 0, 1, 'sigmoid',
                                     mask=np.array([True, False] * 3))
    np.testing.assert_array_equal(masked_idx[0], idx[0])


def test_top2_sum_gate_value_error_on_nan_logits():
    logits = np.zeros((2, 32), np.float32)
    logits[1, 3] = np.nan
    with pytest.raises(tm.ValueRuleError, match=r'finite'):
        tm.top2_sum_gate(logits, np.zeros(32, np.float32), 2, 0, 0, False, 0, 1.0, 0, 1, 0, 1, 'sigmoid')


def test_counts_and_aux_fi():
    idx = np.array([[0, 2], [1, -1], [2, 0]], np.int64)
    counts = tm.group_count(idx, 3)
    assert counts.dtype == np.int32
    np.testing.assert_array_equal(counts, [2, 1, 2])
    fi = tm.aux_fi(idx, 3, 2)
    assert fi.dtype == np.float32
    np.testing.assert_array_equal(fi, np.array([2, 1, 2], np.float32) * 3 / np.float32(6))
    with pytest.raises(tm.ValueRuleError, match=r"'group_idx' holds 3 at flat position 1"):
        tm.group_count(np.array([[0, 3]], np.int64), 3)
    with pytest.raises(tm.ArgumentError, match=r'group_idx.*int64'):
        tm.group_count(idx.astype(np.int32), 3)


def test_normalize_weight_is_bitwise_sequential():
    w = rng(3).random((5, 7), dtype=np.float32)
    den, out = tm.normalize_weight(w)
    ref = np.full(5, 1e-20, np.float32)
    for k in range(7):
        ref = (ref + w[:, k]).astype(np.float32)
    np.testing.assert_array_equal(den, ref)
    np.testing.assert_array_equal(out, w / ref[:, None])


@pytest.mark.parametrize('dtype', [np.int32, np.int64])
def test_mask_indices_by_tp_keeps_dtype(dtype):
    idx = np.array([[0, 5, 9, 15], [-1, 4, 12, 7]], dtype)
    out = tm.mask_indices_by_tp(idx, 16, 4, 1, 2)  # 4 experts per rank; TP pairs ranks (0,1), (2,3)
    assert out.dtype == idx.dtype and out.shape == idx.shape
    np.testing.assert_array_equal(out, [[-1, 1, -1, 7], [-1, 0, 4, 3]])


def test_inplace_unique_group_indices():
    g = np.array([[1, 1, 0, 1], [2, -1, 2, 3]], np.int64)
    assert tm.inplace_unique_group_indices(g, 4) is None
    np.testing.assert_array_equal(g, [[1, -1, 0, -1], [2, -1, -1, 3]])


def test_get_fused_mapping_sync_path_trims_and_lists():
    idx = np.array([[0, 2], [1, -1], [2, 0]], np.int64)
    res = tm.get_fused_mapping(idx, 3, 0, 4)
    assert isinstance(res, tuple) and len(res) == 8
    pte, ptt, pttk, ttp, start, end, ntpe, lst = res
    assert lst == [4, 4, 4] and isinstance(lst, list)
    assert pte.shape == (12,) and all(a.dtype == np.int32 for a in res[:7])
    np.testing.assert_array_equal(pte[[0, 1, 4, 8, 9]], [0, 0, 1, 2, 2])
    np.testing.assert_array_equal(ttp, [[0, 8], [4, -1], [9, 1]])
    np.testing.assert_array_equal(start, [0, 4, 8])
    np.testing.assert_array_equal(end, [4, 8, 12])
    np.testing.assert_array_equal(ptt[:2], [0, 2])
    np.testing.assert_array_equal(pttk[:2], [0, 5])


def test_get_fused_mapping_given_length_and_no_sync():
    idx = np.array([[0, 2], [1, -1], [2, 0]], np.int64)
    res = tm.get_fused_mapping(idx, 3, 16, 4)
    assert res[0].shape == (16,) and res[7] == []
    assert (res[0][12:] == -1).all()
    res = tm.get_fused_mapping(np.full((3, 2), -1, np.int64), 3, 0, 4, force_no_sync=True)
    assert res[0].shape == (0,) and res[3].shape == (3, 2) and res[7] == []
    with pytest.raises(tm.ValueRuleError, match=r'num_expanded_tokens = 0 but the aligned per-expert counts sum'):
        tm.get_fused_mapping(idx, 3, 0, 4, force_no_sync=True)  # no room: the library's rule, not a wild write
    with pytest.raises(tm.ValueRuleError, match=r'num_expanded_tokens'):
        tm.get_fused_mapping(idx, 3, 8, 4)
    with pytest.raises(tm.ValueRuleError, match=r"'topk_idx' holds 5"):
        tm.get_fused_mapping(np.array([[5]], np.int64), 3, 0, 1)
    with pytest.raises(tm.ArgumentError, match=r'alignment = 0'):
        tm.get_fused_mapping(idx, 3, 0, 0)


def test_expand_then_reduce():
    t, k, e, h = 5, 3, 4, 256
    gen = rng(4)
    idx = np.stack([gen.permutation(e)[:k] for _ in range(t)]).astype(np.int64)
    idx[2, 1] = -1
    m = tm.get_fused_mapping(idx, e, 0, 8)
    x = gen.standard_normal((t, h), dtype=np.float32)
    xf = tm.expand_to_fused(x, m[3], m[0])
    assert xf.shape == (m[0].shape[0], h) and xf.dtype == np.float32
    assert (xf[m[0] < 0] == 0).all()
    w = gen.random((t, k), dtype=np.float32)
    y = tm.reduce_fused(xf, w, m[3])
    ref = np.zeros((t, h), np.float32)
    for i in range(t):
        for j in range(k):
            if idx[i, j] >= 0:
                ref[i] += x[i] * w[i, j]
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    y_no_w = tm.reduce_fused(xf, None, m[3])  # defaults: fp8_format='', sf=None, out=None
    np.testing.assert_allclose(y_no_w, x * (idx >= 0).sum(1, keepdims=True), rtol=1e-6)
    out = np.empty((t, h), np.float32)
    assert tm.reduce_fused((xf, np.ones(xf.shape[0], np.float32)), w, m[3], '', None, out) is out
    np.testing.assert_array_equal(out, y)
    with pytest.raises(tm.ArgumentError, match=r"fp8_format = 'e5m2'"):
        tm.reduce_fused(xf, w, m[3], 'e5m2')
    with pytest.raises(tm.ArgumentError, match=r'sf is given but fp8_format'):
        tm.reduce_fused(xf, w, m[3], '', np.ones(1, np.float32))
    with pytest.raises(tm.ArgumentError, match=r'256'):
        tm.reduce_fused(xf[:, :128].copy(), w, m[3])


@pytest.mark.parametrize('col_major', [False, True])
def test_expand_to_fused_with_sf_layout(col_major):
    t, k, e, h = 4, 2, 3, 256
    idx = np.array([[0, 1], [2, -1], [1, 2], [0, 2]], np.int64)
    m = tm.get_fused_mapping(idx, e, 0, 4)
    p = m[0].shape[0]
    x = rng(5).standard_normal((t, h), dtype=np.float32)
    sf = rng(6).random((t, h // 128), dtype=np.float32)
    out, out_sf = tm.expand_to_fused_with_sf((x, sf), 128, m[3], m[0], col_major)
    assert out.shape == (p, h) and out_sf.shape == (p, h // 128)
    item = out_sf.itemsize
    assert out_sf.strides == ((item, ((p + 3) // 4 * 4) * item) if col_major else (h // 128 * item, item))
    for i in range(t):
        for j in range(k):
            pos = m[3][i, j]
            if pos >= 0:
                np.testing.assert_array_equal(out_sf[pos], sf[i])
                np.testing.assert_array_equal(out[pos], x[i])
    with pytest.raises(tm.ArgumentError, match=r'num_per_channels = 64'):
        tm.expand_to_fused_with_sf((x, sf), 64, m[3], m[0], col_major)


def _gpu_present():
    try:
        tm.get_device_num_sms(0)
        return True
    except tm.CudaError:
        return False


def test_num_sms_and_check_mode():
    with pytest.raises(tm.ArgumentError, match=r'num_sms = 0'):
        tm.set_num_sms(0)
    if _gpu_present():
        assert tm.get_device_num_sms(0) > 0
    else:  # without a GPU the query names the device it could not read
        with pytest.raises(tm.CudaError, match=r'cuda:0'):
            tm.get_device_num_sms(0)
    assert tm.get_check_mode() == 'deferred'
    tm.set_check_mode('sync')
    assert tm.get_check_mode() == 'sync'
    tm.set_check_mode('deferred')
    with pytest.raises(tm.ArgumentError, match=r"mode = 'later'"):
        tm.set_check_mode('later')


def test_view_reads_numpy_layout():
    a = np.zeros((6, 4), np.float32)[:, 1:3]
    ptr, dtype, shape, strides, device = tm._C._view(a)
    assert ptr == a.__array_interface__['data'][0] and dtype == 3 and device == -1
    assert shape == (6, 2) and strides == (4, 1)
