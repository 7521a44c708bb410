"""tshmem_moe: the MoE routing kernels of tshmem with DeepSeek TileKernels' Python API.

The 12 entry points of ``tile_kernels.moe`` with its names, argument order, defaults and return types, over
libtshmem_moe (semantics: docs/moe.md). Tensors are torch tensors: CUDA tensors run the CUDA kernels on
torch's current stream of their device, and outputs are allocated on that device; CPU tensors (and numpy
arrays) run the library's CPU reference. The extension reads tensors through their Python attributes and
never links libtorch, so one build serves every torch version.

Errors are raised as :class:`Error` subclasses carrying the library's message (the call, the tensor, the
value and the rule). Index values the GPU finds out of range (an expert id outside ``[-1, E)``, ...) are
never undefined behaviour: the entry is skipped and recorded per device. By default (``"deferred"``) calls
stay asynchronous like TileKernels' and :func:`check_device_errors` raises the first recorded violation;
``set_check_mode("sync")`` makes every call that reads indices synchronise and raise it at once.
"""

from . import _C

try:  # torch is optional: without it numpy arrays run the CPU reference (that is how CI tests the package)
    import torch as _torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    _torch = None
try:
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None

__all__ = [
    'topk_gate', 'top2_sum_gate', 'topk_sum_and_topk_group_idx', 'group_count', 'aux_fi', 'normalize_weight',
    'mask_indices_by_tp', 'inplace_unique_group_indices', 'get_fused_mapping', 'expand_to_fused',
    'expand_to_fused_with_sf', 'reduce_fused', 'set_num_sms', 'get_num_sms', 'get_device_num_sms',
    'set_check_mode', 'get_check_mode', 'check_device_errors', 'Error', 'ArgumentError', 'DeviceMismatchError',
    'ValueRuleError', 'UnsupportedError', 'CudaError',
]


class Error(RuntimeError):
    """A failed tshmem_moe call; the message is the library's."""


class ArgumentError(Error, ValueError):
    """A shape, dtype, stride or scalar rule is broken (TSHMEM_MOE_ERR_INVALID_ARGUMENT)."""


class DeviceMismatchError(ArgumentError):
    """A tensor lives on another device than the primary input (TSHMEM_MOE_ERR_DEVICE_MISMATCH)."""


class ValueRuleError(ArgumentError):
    """A value inside a tensor breaks a rule, e.g. an index out of range (TSHMEM_MOE_ERR_INVALID_VALUE)."""


class UnsupportedError(Error, NotImplementedError):
    """Valid per the spec but beyond this port's kernel limits (TSHMEM_MOE_ERR_UNSUPPORTED)."""


class CudaError(Error):
    """No device, out of memory, a CUDA runtime failure or an internal error."""


# Index = tshmem_moe_status_t.
_ERRORS = (Error, ArgumentError, DeviceMismatchError, ValueRuleError, UnsupportedError, CudaError, CudaError,
           CudaError, CudaError)

# tshmem_moe_dtype_t codes.
_BOOL, _I32, _I64, _F32, _BF16, _E4M3 = range(6)
_dtypes = {}
_torch_dtype = {}
_np_dtype = {}
if _torch is not None:
    _torch_dtype = {_BOOL: _torch.bool, _I32: _torch.int32, _I64: _torch.int64, _F32: _torch.float32,
                    _BF16: _torch.bfloat16}
    if hasattr(_torch, 'float8_e4m3fn'):
        _torch_dtype[_E4M3] = _torch.float8_e4m3fn
    _dtypes.update({v: k for k, v in _torch_dtype.items()})
if _np is not None:
    _np_dtype = {_BOOL: _np.dtype(_np.bool_), _I32: _np.dtype(_np.int32), _I64: _np.dtype(_np.int64),
                 _F32: _np.dtype(_np.float32)}
    _dtypes.update({v: k for k, v in _np_dtype.items()})
_Tensor = _torch.Tensor if _torch is not None else None
_C._register(_dtypes, _Tensor, _ERRORS)

if _torch is not None and hasattr(_torch._C, '_cuda_getCurrentRawStream'):
    _raw_stream = _torch._C._cuda_getCurrentRawStream
else:  # pragma: no cover - older torch, or none (then only host arrays exist: stream 0)
    def _raw_stream(index):
        return _torch.cuda.current_stream(index).cuda_stream if _torch is not None else 0


def _stream(t):
    """torch's current stream of t's CUDA device (0 for host tensors)."""
    if _Tensor is not None and isinstance(t, _Tensor) and t.is_cuda:
        return _raw_stream(t.get_device())
    return 0


def _empty(like, shape, code):
    """An uninitialised output of dtype `code` beside `like` (same device, same array library)."""
    if _Tensor is not None and isinstance(like, _Tensor):
        return _torch.empty(shape, dtype=_torch_dtype[code], device=like.device)
    if _np is not None and isinstance(like, _np.ndarray):
        if code not in _np_dtype:
            raise ArgumentError(f'tshmem_moe: dtype code {code} has no numpy equivalent; use torch tensors')
        return _np.empty(shape, dtype=_np_dtype[code])
    raise TypeError(f'tshmem_moe: {type(like).__name__} is neither a torch.Tensor nor a numpy array')


def _dims(call, name, t, ndim):
    """Raises ArgumentError unless t has `ndim` dimensions (the library checks everything else)."""
    nd = getattr(t, 'ndim', None)
    if nd != ndim:
        shape = tuple(getattr(t, 'shape', ()))
        raise ArgumentError(f'tshmem_moe.{call}: {name} has {nd} dimensions (shape {shape}); it must have {ndim}')


def _current_device(device):
    if device is not None:
        return device.index if hasattr(device, 'index') else int(device)
    if _torch is None:
        raise CudaError('tshmem_moe: no device given and torch is not installed to name the current one')
    return _torch.cuda.current_device()


# ---- configuration ---------------------------------------------------------------------------------------

def get_device_num_sms(device=None) -> int:
    """SM count of `device` (default: torch's current CUDA device), cached per device index."""
    return _C.get_device_num_sms(_current_device(device))


def set_num_sms(num_sms: int) -> None:
    """Grid-size override (results never depend on it), as TileKernels': 0 < num_sms <= the current device's
    SM count. The override is validated again on each device a call runs on."""
    if _torch is not None and _torch.cuda.is_available():
        limit = get_device_num_sms()
        if not 0 < num_sms <= limit:
            raise ArgumentError(f'tshmem_moe.set_num_sms: num_sms = {num_sms}; it must be in (0, {limit}], the SM '
                                f'count of cuda:{_torch.cuda.current_device()}')
    elif num_sms <= 0:
        raise ArgumentError(f'tshmem_moe.set_num_sms: num_sms = {num_sms}; it must be > 0')
    _C.set_num_sms(int(num_sms))


def get_num_sms(device=None) -> int:
    """The override if set, else the SM count of `device` (default: the current device)."""
    return _C.get_num_sms(_current_device(device))


_MODES = {'sync': 0, 'deferred': 1}


def set_check_mode(mode: str) -> None:
    """'deferred' (the package's default: no synchronisation, like TileKernels) or 'sync'."""
    if mode not in _MODES:
        raise ArgumentError(f"tshmem_moe.set_check_mode: mode = {mode!r}; it must be 'sync' or 'deferred'")
    _C.set_check_mode(_MODES[mode])


def get_check_mode() -> str:
    return 'deferred' if _C.get_check_mode() == 1 else 'sync'


def check_device_errors(device=None) -> None:
    """Synchronises torch's current stream of `device` and raises ValueRuleError for the first value
    violation recorded there since the last check (then clears it)."""
    index = _current_device(device)
    _C.check_device_errors(index, _raw_stream(index))


set_check_mode('deferred')


# ---- gating ----------------------------------------------------------------------------------------------

def topk_gate(scores, num_topk: int):
    """[T, E] float32 scores -> [T, num_topk] int64 indices, descending, ties to the smaller index."""
    _dims('topk_gate', 'scores', scores, 2)
    out = _empty(scores, (scores.shape[0], num_topk), _I64)
    _C.topk_gate(scores, num_topk, out, _stream(scores))
    return out


def topk_sum_and_topk_group_idx(scores, num_topk_sum: int, num_topk_groups: int):
    """[T, G, E/G] float32 scores -> [T, num_topk_groups] int64 group indices."""
    _dims('topk_sum_and_topk_group_idx', 'scores', scores, 3)
    out = _empty(scores, (scores.shape[0], num_topk_groups), _I64)
    _C.topk_sum_and_topk_group_idx(scores, num_topk_sum, num_topk_groups, out, _stream(scores))
    return out


_scoring = {}


def top2_sum_gate(logits, bias, num_topk: int, num_topk_groups: int, num_groups: int, use_shared_as_routed: bool,
                  num_shared_experts: int, routed_scaling_factor: float, ep_rank: int, num_ep_ranks: int,
                  tp_rank: int, num_tp_ranks: int, scoring_func: str, mask=None, fix_routing_mask=None,
                  to_physical_map=None, logical_count=None, unmapped_topk_idx=None):
    """Returns (topk_idx [T, K+S] int64, topk_weights [T, K+S] float32); S = num_shared_experts when
    use_shared_as_routed, else 0."""
    _dims('top2_sum_gate', 'logits', logits, 2)
    code = _scoring.get(scoring_func)
    if code is None:
        code = _C.scoring_func(scoring_func)
        _scoring[scoring_func] = code
    width = (num_topk + num_shared_experts) if use_shared_as_routed else num_topk
    shape = (logits.shape[0], width)
    topk_idx = _empty(logits, shape, _I64)
    topk_weights = _empty(logits, shape, _F32)
    params = (num_topk, num_topk_groups, num_groups, use_shared_as_routed, num_shared_experts,
              float(routed_scaling_factor), ep_rank, num_ep_ranks, tp_rank, num_tp_ranks)
    _C.top2_sum_gate(logits, bias, params, code, mask, fix_routing_mask, to_physical_map, logical_count,
                     unmapped_topk_idx, topk_idx, topk_weights, _stream(logits))
    return topk_idx, topk_weights


# ---- counting and index utilities ------------------------------------------------------------------------

def group_count(group_idx, num_groups: int):
    """[T, K] int64 ids -> [num_groups] int32 counts."""
    out = _empty(group_idx, (num_groups,), _I32)
    _C.group_count(group_idx, num_groups, out, _stream(group_idx))
    return out


def aux_fi(topk_idx, num_experts: int, num_aux_topk: int):
    """[T, K] int64 ids -> [num_experts] float32 frequency indicators."""
    out = _empty(topk_idx, (num_experts,), _F32)
    _C.aux_fi(topk_idx, num_experts, num_aux_topk, out, _stream(topk_idx))
    return out


def normalize_weight(topk_weights):
    """[T, K] float32 -> (denominator [T], normalized_weights [T, K])."""
    _dims('normalize_weight', 'topk_weights', topk_weights, 2)
    den = _empty(topk_weights, (topk_weights.shape[0],), _F32)
    out = _empty(topk_weights, tuple(topk_weights.shape), _F32)
    _C.normalize_weight(topk_weights, den, out, _stream(topk_weights))
    return den, out



def mask_indices_by_tp(indices, n: int, num_ep_ranks: int, tp_rank: int, num_tp_ranks: int):
    """[T, K] int64/int32 expert ids -> the same with ids of other TP ranks masked to -1 and local ids
    remapped."""
    _dims('mask_indices_by_tp', 'indices', indices, 2)
    code = _dtypes.get(indices.dtype, _I64)
    out = _empty(indices, tuple(indices.shape), code)
    _C.mask_indices_by_tp(indices, n, num_ep_ranks, tp_rank, num_tp_ranks, out, _stream(indices))
    return out


def inplace_unique_group_indices(group_indices, num_groups: int) -> None:
    """Marks repeated group ids of each row -1, in place."""
    _C.inplace_unique_group_indices(group_indices, num_groups, _stream(group_indices))


# ---- the fused layout ------------------------------------------------------------------------------------

def get_fused_mapping(topk_idx, num_experts: int, num_expanded_tokens: int, alignment: int,
                      force_no_sync: bool = False):
    """Returns (pos_to_expert, pos_to_token, pos_to_token_topk, token_topk_to_pos, expert_start, expert_end,
    num_tokens_per_expert, num_tokens_per_expert_list). With num_expanded_tokens == 0 and not force_no_sync
    the length is found by a synchronisation: the pos_to_* outputs are trimmed to the sum of the aligned
    counts, which the list holds; otherwise the list is empty."""
    _dims('get_fused_mapping', 'topk_idx', topk_idx, 2)
    num_tokens, num_topk = topk_idx.shape
    should_sync = num_expanded_tokens == 0 and not force_no_sync
    rows = num_expanded_tokens
    if should_sync and alignment >= 1:  # an upper bound of the sum of aligned counts; invalid args: library
        rows = -(-(num_tokens * num_topk + (alignment - 1) * num_experts) // alignment) * alignment
    n_e = max(int(num_experts), 0)
    outs = (_empty(topk_idx, (rows,), _I32), _empty(topk_idx, (rows,), _I32), _empty(topk_idx, (rows,), _I32),
            _empty(topk_idx, (num_tokens, num_topk), _I32), _empty(topk_idx, (n_e,), _I32),
            _empty(topk_idx, (n_e,), _I32), _empty(topk_idx, (n_e,), _I32))
    _C.get_fused_mapping(topk_idx, num_experts, rows, alignment, outs, _stream(topk_idx))
    counts = []
    if should_sync:
        counts = outs[6].tolist()
        total = sum(counts)
        return (outs[0][:total], outs[1][:total], outs[2][:total]) + outs[3:] + (counts,)
    return outs + (counts,)


def expand_to_fused(x, token_topk_to_pos, pos_to_expert):
    """x [T, H] -> x_fused [P, H] (P = pos_to_expert.shape[0]); padding rows zeroed."""
    _dims('expand_to_fused', 'x', x, 2)
    _dims('expand_to_fused', 'pos_to_expert', pos_to_expert, 1)
    out = _empty(x, (pos_to_expert.shape[0], x.shape[1]), _dtypes.get(x.dtype, _F32))
    _C.expand_to_fused(x, token_topk_to_pos, pos_to_expert, out, _stream(x))
    return out


def expand_to_fused_with_sf(x, num_per_channels: int, token_topk_to_pos, pos_to_expert,
                            use_tma_aligned_col_major_sf: bool = False):
    """x = (data [T, H], sf [T, hidden_sf] float32 or int32 packed UE8M0) -> (out [P, H], out_sf [P, hidden_sf]);
    with use_tma_aligned_col_major_sf out_sf is column-major with strides (1, align(P, 4))."""
    data, sf = x
    _dims('expand_to_fused_with_sf', 'x', data, 2)
    _dims('expand_to_fused_with_sf', 'x_sf', sf, 2)
    _dims('expand_to_fused_with_sf', 'pos_to_expert', pos_to_expert, 1)
    rows = pos_to_expert.shape[0]
    hidden_sf = sf.shape[1]
    out = _empty(data, (rows, data.shape[1]), _dtypes.get(data.dtype, _F32))
    sf_code = _dtypes.get(sf.dtype, _F32)
    if use_tma_aligned_col_major_sf:
        out_sf = _empty(sf, (hidden_sf, -(-rows // 4) * 4), sf_code)[:, :rows].T
    else:
        out_sf = _empty(sf, (rows, hidden_sf), sf_code)
    _C.expand_to_fused_with_sf(data, sf, num_per_channels, token_topk_to_pos, pos_to_expert,
                               use_tma_aligned_col_major_sf, out, out_sf, _stream(data))
    return out, out_sf


def reduce_fused(x, topk_weights, token_topk_to_pos, fp8_format: str = '', sf=None, out=None):
    """x [P, H] (or (x, x_sf [P])) -> y [T, H]: y[t] = sum_k x[pos[t, k]] * w[t, k] (* x_sf) (* sf), in slot
    order; fp8_format 'e4m3' gives float8_e4m3fn (saturating), '' the dtype of x."""
    if isinstance(x, tuple):
        x, x_sf = x
    else:
        x_sf = None
    if out is None:
        _dims('reduce_fused', 'x', x, 2)
        _dims('reduce_fused', 'token_topk_to_pos', token_topk_to_pos, 2)
        code = _E4M3 if fp8_format == 'e4m3' else _dtypes.get(x.dtype, _F32)
        if code not in _torch_dtype and code not in _np_dtype:
            code = _dtypes.get(x.dtype, _F32)  # the library names the bad fp8_format
        out = _empty(x, (token_topk_to_pos.shape[0], x.shape[1]), code)
    _C.reduce_fused(x, x_sf, topk_weights, token_topk_to_pos, fp8_format, sf, out, _stream(x))
    return out
