"""tshmem.ep: expert-parallel dispatch and combine for PyTorch, with DeepEP V1's ``Buffer`` API (normal kernels).

    import tshmem, tshmem.ep as ep
    tshmem.init()                                   # or tshmem.init(group=...) under torchrun
    buffer = ep.Buffer(None, num_nvl_bytes, num_rdma_bytes)
    per_rank, per_rdma, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, num_experts)
    recv_x, recv_idx, recv_w, counts, handle, _ = buffer.dispatch(x, None, per_rank, per_rdma, in_rank, per_expert,
                                                                  topk_idx, topk_weights)
    y, _, _ = buffer.combine(expert_out, handle)
    buffer.destroy()                                # collective, explicit

The method names, arguments and return tuples are DeepEP V1's (``from tshmem import ep as deep_ep`` is meant to be
the one change), over libtshmem_ep (include/tshmem/ep.h, docs/ep.md) and tshmem's checked symmetric heap.
docs/ep-python.md describes the module; what differs from DeepEP is listed there.

Streams: each call runs on the buffer's communication stream, which first waits for ``previous_event`` (or for
torch's current stream). With ``async_finish=True`` the call returns an ``EventOverlap`` recorded on the
communication stream, and every tensor the call touched is recorded on that stream (``record_stream``), so the
caching allocator cannot hand its memory out before the work is done; otherwise torch's current stream waits for
the communication stream before the call returns.

Errors: mistakes in arguments raise before anything is launched. What only Python sees (not a tensor, a dtype, a
device, a shape, a non-contiguous tensor) raises ``tshmem.ArgumentTypeError`` (a TypeError) or
``tshmem.InvalidArgumentError`` (a ValueError) naming the call, the argument and its value; the rules the C API
states (sizes, alignment, what the buffer holds) are checked by the C API alone and raise the class of its status
with its message: ``BufferTooSmallError`` (a ValueError), ``InvalidValueError``, ``UnsupportedError``, or
tshmem's ``InvalidArgumentError``, ``NotInitializedError``, ``CudaError``, ``OutOfMemoryError``, ``InternalError``.

Lifetime: ``Buffer.destroy()`` is collective and explicit (also ``with Buffer(...) as buffer:``); garbage collection
never runs it. A buffer still alive at ``tshmem.finalize()`` is destroyed there, collectively, in creation order,
with a ``tshmem.UnfreedWarning``. Handles are local: a handle dropped by Python returns its routes' memory to its
buffer for the next dispatch (no device call), and the buffer frees them all in ``destroy()``.
"""

import warnings

from . import _runtime
from ._errors import (ArgumentTypeError, CudaError, Error, InternalError, InvalidArgumentError, NotInitializedError,
                      OutOfMemoryError, UnfreedWarning)

try:
    import torch
except ImportError as _e:  # pragma: no cover - the base package works without torch; this module does not
    raise ImportError('tshmem.ep needs PyTorch (import torch failed: %s)' % _e) from None

try:
    from . import _ep_C as _C
    _C_MISSING = None
except ImportError as _e:  # built without nvcc, or without libtshmem_ep: the argument checks still import
    _C, _C_MISSING = None, str(_e)


class BufferTooSmallError(InvalidArgumentError):
    """The call does not fit the buffer's num_nvl_bytes / num_rdma_bytes, or the outputs' rows
    (TSHMEM_EP_ERR_BUFFER_TOO_SMALL); the message says how many bytes or rows it needs."""


class InvalidValueError(Error, ValueError):
    """A value inside a device tensor breaks a rule, e.g. an expert id outside [-1, num_experts)
    (TSHMEM_EP_ERR_INVALID_VALUE); the message names the value and its position."""


class UnsupportedError(Error, NotImplementedError):
    """Valid by DeepEP's semantics but beyond this implementation (TSHMEM_EP_ERR_UNSUPPORTED, LogFMT combine)."""


# Index = tshmem_ep_status_t (include/tshmem/ep.h); 0 (success) is never raised. TSHMEM_EP_ERR_TSHMEM carries
# tshmem's own message.
_BY_STATUS = (Error, InvalidArgumentError, InvalidValueError, BufferTooSmallError, NotInitializedError, Error,
              CudaError, OutOfMemoryError, UnsupportedError, InternalError)
if _C is not None:
    assert len(_BY_STATUS) == _C.NUM_STATUS, 'tshmem.ep: the status table does not match include/tshmem/ep.h'
    _C._register(_BY_STATUS)

# torch dtype -> tshmem_ep_dtype_t (the C API names what it was given, and says which ones a call takes).
_BF16, _FP8, _F32, _F16, _I64, _I32 = 0, 1, 2, 3, 4, 5
_EP_DTYPES = {torch.bfloat16: _BF16, torch.float32: _F32, torch.float16: _F16, torch.int64: _I64, torch.int32: _I32}
if hasattr(torch, 'float8_e4m3fn'):
    _EP_DTYPES[torch.float8_e4m3fn] = _FP8
_FP8_BLOCK = 128
topk_idx_t = torch.int64  # DeepEP's deep_ep.topk_idx_t: the dtype of topk_idx
_MAX_EXPERTS_ALLOC = 1 << 20  # outputs of a layout call are sized by num_experts only below this; the C API decides


# ---- argument checks (what only Python sees) --------------------------------------------------------------------

def _int(call, name, value):
    return _runtime._int_arg(value, name, call)  # the package's one int check, in this file's argument order


def _tensor(call, name, t, device, dtypes=None, ndim=None, rule=None, contiguous=True):
    """t checked: a torch.Tensor of one of `dtypes`, `ndim` dimensions, on `device`, contiguous (unless told)."""
    if not isinstance(t, torch.Tensor):
        raise ArgumentTypeError(f'{call}: {name} is {"None" if t is None else "a " + type(t).__name__}; it must be a '
                                f'torch.Tensor{" (" + rule + ")" if rule else ""}')
    if dtypes is not None and t.dtype not in dtypes:
        want = ' or '.join(str(d) for d in dtypes)
        raise ArgumentTypeError(f'{call}: {name} has dtype {t.dtype}; it must be {want}')
    if ndim is not None and t.dim() != ndim:
        raise InvalidArgumentError(f'{call}: {name} has shape {tuple(t.shape)}; it must have {ndim} dimension'
                                   f'{"s" if ndim != 1 else ""}{" (" + rule + ")" if rule else ""}')
    if t.device != device:
        raise InvalidArgumentError(f'{call}: {name} is on {t.device}; it must be on {device}, this PE\'s GPU')
    if contiguous and not t.is_contiguous():
        raise InvalidArgumentError(f'{call}: {name} is not contiguous (shape {tuple(t.shape)}, stride {t.stride()}); '
                                   f'pass {name}.contiguous()')
    return t


def _shape(call, name, t, shape, rule):
    if tuple(t.shape) != tuple(shape):
        raise InvalidArgumentError(f'{call}: {name} has shape {tuple(t.shape)}; it must be {tuple(shape)} ({rule})')


def _flag(call, name, value):
    if not isinstance(value, bool):
        raise ArgumentTypeError(f'{call}: {name} = {value!r} is not a bool')
    return value


def _x_dtype(call, name, t):
    code = _EP_DTYPES.get(t.dtype)
    if code is None:
        raise ArgumentTypeError(f'{call}: {name} has dtype {t.dtype}; the rows are torch.bfloat16, or '
                                '(torch.float8_e4m3fn, torch.float32 scales) for dispatch')
    return code


def _typed(x, fn, *args):
    """fn(*args); the C API's refusal of x's element type becomes a type error that names the torch dtype."""
    try:
        return fn(*args)
    except InvalidArgumentError as e:
        if ': x_dtype = ' in str(e) and not isinstance(e, TypeError):
            raise ArgumentTypeError(f'{e} (x has dtype {x.dtype})') from None
        raise


def _ptr(t):
    return 0 if t is None else t.data_ptr()


def _pair(x):
    return isinstance(x, (tuple, list))


# ---- events ------------------------------------------------------------------------------------------------------

class EventOverlap:
    """The completion of a call made with ``async_finish=True``: a CUDA event on the buffer's communication
    stream (``event``; None when the call already made torch's current stream wait). ``extra_tensors`` are kept
    alive with it. ``current_stream_wait()`` makes torch's current stream wait for it; ``with event:`` runs the
    block (e.g. computation to overlap) and then waits."""

    def __init__(self, event=None, extra_tensors=None):
        self.event = event
        self.extra_tensors = extra_tensors

    def current_stream_wait(self):
        if self.event is not None:
            torch.cuda.current_stream().wait_event(self.event)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.current_stream_wait()
        return False


# ---- configuration -----------------------------------------------------------------------------------------------

class Config:
    """DeepEP's performance configuration. ``num_sms`` is the number of thread blocks of the dispatch and combine
    kernels (0: the library's default); every PE must pass the same value, and results never depend on it. The
    chunk sizes are accepted for DeepEP's signature and not used: tshmem.ep moves whole rows, with no chunked
    ring buffer."""

    def __init__(self, num_sms=0, num_max_nvl_chunked_send_tokens=6, num_max_nvl_chunked_recv_tokens=256,
                 num_max_rdma_chunked_send_tokens=6, num_max_rdma_chunked_recv_tokens=256):
        call = 'tshmem.ep.Config'
        self.num_sms = _int(call, 'num_sms', num_sms)
        self.num_max_nvl_chunked_send_tokens = _int(call, 'num_max_nvl_chunked_send_tokens',
                                                    num_max_nvl_chunked_send_tokens)
        self.num_max_nvl_chunked_recv_tokens = _int(call, 'num_max_nvl_chunked_recv_tokens',
                                                    num_max_nvl_chunked_recv_tokens)
        self.num_max_rdma_chunked_send_tokens = _int(call, 'num_max_rdma_chunked_send_tokens',
                                                     num_max_rdma_chunked_send_tokens)
        self.num_max_rdma_chunked_recv_tokens = _int(call, 'num_max_rdma_chunked_recv_tokens',
                                                     num_max_rdma_chunked_recv_tokens)

    def __repr__(self):
        return f'tshmem.ep.Config(num_sms={self.num_sms})'

    def get_nvl_buffer_size_hint(self, hidden_bytes, num_ranks, num_max_tokens_per_rank=4096, num_topk=8):
        """num_nvl_bytes for up to ``num_max_tokens_per_rank`` tokens per PE of ``hidden_bytes`` bytes each (bf16
        rows; fp8 rows with their scales are smaller), every token possibly to every PE. DeepEP's ring buffers
        need no token count; whole rows do: pass yours (the default is 4096)."""
        return _size_hint('tshmem.ep.Config.get_nvl_buffer_size_hint', hidden_bytes, num_ranks,
                          num_max_tokens_per_rank, num_topk)[0]

    def get_rdma_buffer_size_hint(self, hidden_bytes, num_ranks, num_max_tokens_per_rank=4096, num_topk=8):
        """num_rdma_bytes, as get_nvl_buffer_size_hint (0 is enough when every PE is on one node; the hint does
        not know, so it sizes for a job that spans nodes)."""
        return _size_hint('tshmem.ep.Config.get_rdma_buffer_size_hint', hidden_bytes, num_ranks,
                          num_max_tokens_per_rank, num_topk)[1]


def _require_ext(call):
    if _C is None:
        raise NotInitializedError(f'{call}: this tshmem was built without tshmem.ep\'s extension (it needs nvcc and '
                                  f'libtshmem_ep at build time): {_C_MISSING}')


def _size_hint(call, hidden_bytes, num_ranks, max_tokens, num_topk):
    hidden_bytes = _int(call, 'hidden_bytes', hidden_bytes)
    hidden = (max(hidden_bytes, 1) + 15) // 16 * 8  # bf16 elements, rounded up to whole 16-byte rows
    return buffer_size_hint(num_ranks, max_tokens, hidden, torch.bfloat16, num_topk, call=call)


def buffer_size_hint(num_ranks, num_max_tokens_per_rank, hidden, dtype=torch.bfloat16, num_topk=8, *, call=None):
    """(num_nvl_bytes, num_rdma_bytes) that hold any dispatch and combine of up to ``num_max_tokens_per_rank``
    tokens per PE among ``num_ranks`` PEs, rows of ``hidden`` elements of ``dtype`` (torch.bfloat16 or
    torch.float8_e4m3fn), ``num_topk`` top-k entries (tshmem_ep_buffer_size_hint). Works before tshmem.init."""
    call = call or 'tshmem.ep.buffer_size_hint'
    _require_ext(call)
    code = _EP_DTYPES.get(dtype)
    if code is None:
        raise ArgumentTypeError(f'{call}: dtype = {dtype!r}; it must be torch.bfloat16 or torch.float8_e4m3fn')
    return _C.buffer_size_hint(_int(call, 'num_ranks', num_ranks), _int(call, 'num_max_tokens_per_rank',
                                                                         num_max_tokens_per_rank),
                               _int(call, 'hidden', hidden), code, _int(call, 'num_topk', num_topk), call)


# ---- handles -----------------------------------------------------------------------------------------------------

class _BufferState:
    """What a Buffer and its handles share: the C buffer and the pool of C handles (routes' device memory)."""

    def __init__(self, ptr, desc):
        self.ptr = ptr
        self.desc = desc
        self.live = True
        self.free = []       # (capacity, num_experts, c handle): idle, reused by the next dispatch that fits
        self.all = []        # every C handle, destroyed with the buffer
        self.pinned = set()  # C handles a CUDA graph captured: never reused (a replay rewrites them)

    def release(self, key):
        """A Handle's finalizer: its C handle goes back to the pool. Local, no device call."""
        if self.live and key[2] not in self.pinned:
            self.free.append(key)


class Handle(tuple):
    """The routes of one dispatch (DeepEP's ``handle``), for combine and for cached dispatches of other data along
    the same routes; valid while its Buffer lives. As DeepEP's intranode handle it is a tuple
    ``(rank_prefix_matrix, channel_prefix_matrix, recv_channel_prefix_matrix, recv_src_idx, is_token_in_rank,
    send_head)``: ``rank_prefix_matrix`` int32 [n_pes, n_pes] (entry [i, j]: tokens PEs 0..i send to PE j),
    ``recv_src_idx`` int32 [rows] (each received row's token index on its source PE), ``is_token_in_rank`` the
    layout's; the channel matrices and ``send_head`` (DeepEP's ring-buffer bookkeeping, which tshmem.ep does not
    have) are None. Attributes: ``num_tokens`` (this PE's tokens), ``num_experts``, ``num_recv_tokens`` (rows
    received here; None after a ``num_worst_tokens`` dispatch), ``num_recv_rows`` (rows of the outputs),
    ``num_recv_tokens_per_expert_list``, ``expert_alignment``, ``num_worst_tokens``."""

    def __new__(cls, state, key, items=()):
        h = super().__new__(cls, items)
        h._state, h._key = state, key
        return h

    def __del__(self):
        # The C handle goes back to its buffer's pool (local, no device call). A tuple cannot be weakly referenced,
        # so this is the finalizer.
        state = getattr(self, '_state', None)
        if state is not None:
            state.release(self._key)

    @property
    def _ptr(self):
        return self._key[2]

    def device_counts(self):
        """int32 tensor [1 + num_experts / n_pes] on the GPU: the received row count, then the aligned count per
        local expert, as the dispatch's notify left them (valid in the buffer's stream order); what a
        ``num_worst_tokens`` dispatch has instead of the host list."""
        call = 'tshmem.ep.Handle.device_counts'
        if not self._state.live:
            raise InvalidArgumentError(f'{call}: the Buffer that made this handle was destroyed')
        from . import _C as _base
        ptr = _C.handle_device_counts(self._ptr, call)
        n = int(self.num_experts) // self._state.n_pes
        return _base.array(ptr, [1 + n], [], 0, 32, 2, self._state.device, self, True)

    def __repr__(self):
        return (f'<tshmem.ep.Handle num_tokens={self.num_tokens} num_recv_tokens={self.num_recv_tokens} '
                f'num_experts={self.num_experts}>')


def _capacity(num_tokens):
    return max(128, 1 << max(num_tokens - 1, 0).bit_length())


# ---- the buffer --------------------------------------------------------------------------------------------------

_live_buffers = []  # Buffers not destroyed yet, in creation order (tshmem.finalize destroys them in this order)


def _destroy_leftovers():
    if _live_buffers:
        listed = '; '.join(b._state.desc for b in _live_buffers)
        warnings.warn(UnfreedWarning(f'tshmem.finalize: {len(_live_buffers)} tshmem.ep.Buffer(s) never destroyed, '
                                     f'destroyed now: {listed}'), stacklevel=3)
    for b in list(_live_buffers):
        b.destroy()


_runtime._before_finalize.append(_destroy_leftovers)


class Buffer:
    """DeepEP V1's communication buffer, on tshmem's symmetric heap (collective: every PE, same sizes).

    ``group_or_team``: None (tshmem's PEs: the processes of mpirun or srun, or the group tshmem.init was given),
    ``tshmem.TEAM_WORLD``, or a torch.distributed process group whose ranks are tshmem's PEs (rank r = PE r). tshmem
    must be initialised first (``tshmem.init()`` or ``tshmem.init(group=...)``), on a GPU heap (vmm or ipc).
    ``num_nvl_bytes`` receive the rows dispatched to this PE and returned to it (> 0); ``num_rdma_bytes`` stage rows
    bound for other nodes (0 when all PEs share a node). ``buffer_size_hint`` (or ``Config.get_*_size_hint``)
    gives sizes. With ``low_latency_mode=True`` num_rdma_bytes holds the low-latency slots
    (``get_low_latency_rdma_size_hint``) and num_nvl_bytes may be 0; every buffer runs both modes.
    Every buffer has the rank mask (DeepEP's ``enable_shrink=True``); the other DeepEP arguments are accepted and
    have no effect."""

    num_sms = 0  # thread blocks of the data kernels for the default configs (0: the library's default)

    def __init__(self, group_or_team=None, num_nvl_bytes=0, num_rdma_bytes=0, low_latency_mode=False,
                 num_qps_per_rank=24, allow_nvlink_for_low_latency_mode=True, allow_mnnvl=False, use_fabric=False,
                 explicitly_destroy=False, enable_shrink=False, comm=None):
        call = 'tshmem.ep.Buffer'
        self._state = None
        _require_ext(call)
        if not _runtime.is_initialized():
            raise NotInitializedError(f'{call}: tshmem is not initialised: call tshmem.init() (under mpirun or srun) '
                                      'or tshmem.init(group=...) (under torchrun) on every PE first')
        me, n = _runtime.my_pe(), _runtime.n_pes()
        self._check_group(call, group_or_team, me, n)
        if comm is not None:
            if (comm.Get_rank(), comm.Get_size()) != (me, n):
                raise InvalidArgumentError(f'{call}: comm has rank {comm.Get_rank()} of {comm.Get_size()}; '
                                           f'tshmem.ep runs on tshmem\'s PEs (this is PE {me} of {n})')
        nvl, rdma = _int(call, 'num_nvl_bytes', num_nvl_bytes), _int(call, 'num_rdma_bytes', num_rdma_bytes)
        if nvl < 0 or rdma < 0:
            raise InvalidArgumentError(f'{call}: num_nvl_bytes = {nvl}, num_rdma_bytes = {rdma}; sizes are >= 0')
        ptr = _C.buffer_create(nvl, rdma, call)
        info = _C.buffer_info(ptr, call)
        st = _BufferState(ptr, f'tshmem.ep.Buffer(num_nvl_bytes={nvl}, num_rdma_bytes={rdma}) from '
                               f'{_runtime._caller()}')
        st.n_pes, st.device = info['n_pes'], info['device']
        self._state = st
        self._info = info
        self._device = torch.device('cuda', info['device'])
        self._comm = torch.cuda.Stream(device=self._device)
        self._num_blocks = info['num_blocks']
        self._blocks_set = 0
        self.group = group_or_team
        self.rank, self.group_size = info['my_pe'], info['n_pes']
        self.num_nvl_bytes, self.num_rdma_bytes = nvl, rdma
        self.low_latency_mode = bool(low_latency_mode)
        self.explicitly_destroy = True  # always: garbage collection never destroys a buffer
        _live_buffers.append(self)

    @staticmethod
    def _check_group(call, group, me, n):
        if group is None:
            return
        if isinstance(group, int) and not isinstance(group, bool):
            if group != _runtime.TEAM_WORLD:
                raise UnsupportedError(f'{call}: group_or_team = {group}; tshmem.ep runs on TEAM_WORLD (0) only')
            return
        try:
            import torch.distributed as dist
            rank, size = dist.get_rank(group), dist.get_world_size(group)
        except Exception as e:  # not a process group, or torch.distributed not initialised
            raise ArgumentTypeError(f'{call}: group_or_team = {group!r} is neither None, tshmem.TEAM_WORLD nor a '
                                    f'usable torch.distributed process group ({e})') from None
        if (rank, size) != (me, n):
            raise InvalidArgumentError(f'{call}: group_or_team has rank {rank} of {size}; tshmem.ep runs on tshmem\'s '
                                       f'PEs (this is PE {me} of {n}): pass the group tshmem.init was given')

    @classmethod
    def _without_memory(cls, n_pes=2, device='cpu'):
        """A Buffer that owns nothing: every call checks its arguments, then raises NotInitializedError. For
        testing the argument checks without a GPU."""
        b = cls.__new__(cls)
        st = _BufferState(0, 'no memory')
        st.live, st.n_pes, st.device = False, n_pes, -1
        b._state, b._device, b._comm = st, torch.device(device), None
        b._info = {'my_pe': 0, 'n_pes': n_pes, 'pes_per_node': n_pes, 'num_nodes': 1, 'device': -1,
                   'num_blocks': 0, 'num_nvl_bytes': 0, 'num_rdma_bytes': 0}
        b.rank, b.group_size, b.group = 0, n_pes, None
        return b

    # ---- lifetime

    def destroy(self):
        """Collective: frees the handles (local) and the buffer's symmetric memory, after the device is done. The
        buffer and its handles are unusable afterwards. A second call does nothing."""
        st = self._state
        if st is None or not st.live:
            return
        st.live = False
        if self in _live_buffers:
            _live_buffers.remove(self)
        first = None
        for h in st.all:
            try:
                _C.handle_destroy(h, 'tshmem.ep.Buffer.destroy')
            except Error as e:  # keep going: the buffer must still be freed on every PE
                first = first or e
        st.all, st.free = [], []
        _C.buffer_destroy(st.ptr, 'tshmem.ep.Buffer.destroy')
        if first is not None:
            raise first

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    def _live(self, call):
        if not self._state.live:
            if self._state.ptr == 0:
                raise NotInitializedError(f'{call}: this buffer has no memory (arguments checked)')
            raise InvalidArgumentError(f'{call}: the buffer was destroyed')

    # ---- what DeepEP's Buffer reports

    def get_comm_stream(self):
        """The torch.cuda.Stream every call of this buffer runs on."""
        return self._comm

    def get_local_device_id(self):
        return self._info['device']

    def get_num_rdma_ranks(self):
        """Nodes of the job (DeepEP's RDMA ranks)."""
        return self._info['num_nodes']

    def get_rdma_rank(self):
        return self.rank // self._info['pes_per_node']

    def get_root_rdma_rank(self, global_):
        return self.get_rdma_rank() * self._info['pes_per_node'] if global_ else 0

    def set_timeout_ms(self, timeout_ms):
        """Bound of this PE's waits for the other PEs' signals in dispatch and combine (default 300000 ms; 0: tshmem's
        TSHMEM_WAIT_TIMEOUT_MS): a PE that does not make the same call in time makes the kernel print which PE and
        which call, and trap, instead of waiting for ever (tshmem_ep_buffer_set_timeout_ms). Local; not DeepEP's."""
        call = 'tshmem.ep.Buffer.set_timeout_ms'
        timeout_ms = _int(call, 'timeout_ms', timeout_ms)
        self._live(call)
        _C.buffer_set_timeout_ms(self._state.ptr, timeout_ms, call)

    @staticmethod
    def capture():
        """An EventOverlap of an event recorded on the current stream now (DeepEP's Buffer.capture), for a later
        call's previous_event."""
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream())
        return EventOverlap(event)

    @staticmethod
    def is_sm90_compiled():
        """True: every feature of tshmem.ep (fp8 rows and scales included) is there on any GPU tshmem runs on; DeepEP
        answers False when it was built without its SM90-only kernels."""
        return True

    @staticmethod
    def set_num_sms(new_num_sms):
        """Thread blocks of the data kernels in the default configs (0: the library's default). Every PE must use
        the same value."""
        Buffer.num_sms = _int('tshmem.ep.Buffer.set_num_sms', 'new_num_sms', new_num_sms)

    @staticmethod
    def get_dispatch_config(num_ranks):
        """The configuration dispatch uses when given none (num_sms = Buffer.num_sms)."""
        _int('tshmem.ep.Buffer.get_dispatch_config', 'num_ranks', num_ranks)
        return Config(Buffer.num_sms)

    @staticmethod
    def get_combine_config(num_ranks):
        """The configuration combine uses when given none (num_sms = Buffer.num_sms)."""
        _int('tshmem.ep.Buffer.get_combine_config', 'num_ranks', num_ranks)
        return Config(Buffer.num_sms)

    get_buffer_size_hint = staticmethod(buffer_size_hint)

    # ---- streams

    @staticmethod
    def _check_config(call, config):
        if config is not None and not isinstance(config, Config):
            raise ArgumentTypeError(f'{call}: config is a {type(config).__name__}; it must be a tshmem.ep.Config')

    def _config(self, call, config, default):
        if config is None:
            config = default(self.group_size)
        if config.num_sms != self._blocks_set:
            _C.buffer_set_num_blocks(self._state.ptr, config.num_sms, call)
            self._blocks_set = config.num_sms

    def _stream_args(self, call, previous_event, async_finish, allocate_on_comm_stream):
        _flag(call, 'async_finish', async_finish)
        _flag(call, 'allocate_on_comm_stream', allocate_on_comm_stream)
        if previous_event is not None and not isinstance(previous_event, EventOverlap):
            raise ArgumentTypeError(f'{call}: previous_event is a {type(previous_event).__name__}; it must be a '
                                    'tshmem.ep.EventOverlap or None')
        if allocate_on_comm_stream and (previous_event is None or not async_finish):
            raise InvalidArgumentError(f'{call}: allocate_on_comm_stream = True needs previous_event and '
                                       'async_finish = True (the outputs then belong to the communication stream)')

    def _begin(self, previous_event, allocate_on_comm_stream):
        """(compute stream, allocation stream): the communication stream waits for previous_event or the
        current stream."""
        compute = torch.cuda.current_stream(self._device)
        if previous_event is not None and previous_event.event is not None:
            self._comm.wait_event(previous_event.event)
        else:
            self._comm.wait_stream(compute)
        return compute, (self._comm if allocate_on_comm_stream else compute)

    def _finish(self, compute, async_finish, allocate_on_comm_stream, inputs, outputs):
        """The event, or the current stream waits; tensors used on the communication stream are recorded there."""
        capturing = torch.cuda.is_current_stream_capturing()
        inputs = [t for t in inputs if t is not None]
        outputs = [t for t in outputs if t is not None]
        event = None
        if async_finish:
            event = torch.cuda.Event()
            event.record(self._comm)
            if not capturing:  # a graph's memory stays reserved while the graph lives
                for t in inputs + ([] if allocate_on_comm_stream else outputs):
                    t.record_stream(self._comm)
        else:
            compute.wait_stream(self._comm)
        if allocate_on_comm_stream and not capturing:
            for t in outputs:
                t.record_stream(compute)
        return EventOverlap(event, inputs + outputs if async_finish else None)

    # ---- layout

    def get_dispatch_layout(self, topk_idx, num_experts, previous_event=None, async_finish=False,
                            allocate_on_comm_stream=False):
        """From topk_idx [num_tokens, num_topk] int64 (entries in [-1, num_experts); -1: none): (num_tokens_per_rank
        [n_pes] int32, num_tokens_per_rdma_rank [nodes] int32 or None on one node, num_tokens_per_expert
        [num_experts] int32, is_token_in_rank [num_tokens, n_pes] bool, event). Local (no other PE takes part)."""
        call = 'tshmem.ep.Buffer.get_dispatch_layout'
        topk_idx = _tensor(call, 'topk_idx', topk_idx, self._device, (torch.int64,), 2, '[num_tokens, num_topk]')
        num_experts = _int(call, 'num_experts', num_experts)
        self._stream_args(call, previous_event, async_finish, allocate_on_comm_stream)
        self._live(call)
        num_tokens, num_topk = topk_idx.shape
        n, nodes = self.group_size, self._info['num_nodes']
        compute, alloc = self._begin(previous_event, allocate_on_comm_stream)
        with torch.cuda.stream(alloc):
            per_rank = torch.empty(n, dtype=torch.int32, device=self._device)
            per_rdma = torch.empty(nodes, dtype=torch.int32, device=self._device) if nodes > 1 else None
            per_expert = torch.empty(num_experts if 0 < num_experts <= _MAX_EXPERTS_ALLOC else 1, dtype=torch.int32,
                                     device=self._device)
            in_rank = torch.empty((num_tokens, n), dtype=torch.bool, device=self._device)
        _C.get_dispatch_layout(self._state.ptr, _ptr(topk_idx), num_tokens, num_topk, num_experts, _ptr(per_rank),
                               _ptr(per_rdma), _ptr(per_expert), _ptr(in_rank), self._comm.cuda_stream, call)
        event = self._finish(compute, async_finish, allocate_on_comm_stream, [topk_idx],
                             [per_rank, per_rdma, per_expert, in_rank])
        return per_rank, per_rdma, per_expert, in_rank, event

    # ---- dispatch

    def _own(self, call, handle):
        if not isinstance(handle, Handle):
            raise ArgumentTypeError(f'{call}: handle is a {type(handle).__name__}; it must be the handle a dispatch '
                                    'of this buffer returned')
        if handle._state is not self._state:
            raise InvalidArgumentError(f'{call}: handle was made by another tshmem.ep.Buffer; a handle works only '
                                       'with the buffer whose dispatch returned it')
        return handle

    def _x(self, call, x):
        """(x, x_scales or None, dtype code): a tensor, or the pair (x_fp8, x_scales)."""
        if _pair(x):
            if len(x) != 2:
                raise ArgumentTypeError(f'{call}: x is a sequence of {len(x)}; it must be a tensor or the pair '
                                        '(x_fp8, x_scales)')
            data, scales = x
            data = _tensor(call, 'x[0]', data, self._device, None, 2, '[num_tokens, hidden]')
            code = _x_dtype(call, 'x[0]', data)
            # Any strides, as DeepEP takes them (DeepGEMM's scales are column-major): copied row-major here, on
            # the current stream, before the call's communication stream waits for it.
            scales = _tensor(call, 'x[1] (scales)', scales, self._device, (torch.float32,), 2,
                             '[num_tokens, hidden / 128]', contiguous=False)
            num_tokens, hidden = data.shape
            if hidden % _FP8_BLOCK == 0:  # otherwise the C API names the rule on hidden
                _shape(call, 'x[1] (scales)', scales, (num_tokens, hidden // _FP8_BLOCK),
                       'one fp32 scale per 128 channels of each row')
            return data, scales.contiguous(), code
        data = _tensor(call, 'x', x, self._device, None, 2, '[num_tokens, hidden]')
        return data, None, _x_dtype(call, 'x', data)

    def _topk(self, call, topk_idx, topk_weights, num_tokens):
        if topk_idx is not None:
            topk_idx = _tensor(call, 'topk_idx', topk_idx, self._device, (torch.int64,), 2, '[num_tokens, num_topk]')
            if topk_idx.shape[0] != num_tokens:
                _shape(call, 'topk_idx', topk_idx, (num_tokens, topk_idx.shape[1]), 'one row per token of x')
        if topk_weights is not None:
            topk_weights = _tensor(call, 'topk_weights', topk_weights, self._device, (torch.float32,), 2,
                                   '[num_tokens, num_topk]')
            want = topk_idx.shape if topk_idx is not None else (num_tokens, topk_weights.shape[1])
            _shape(call, 'topk_weights', topk_weights, want, 'the shape of topk_idx')
        ref = topk_idx if topk_idx is not None else topk_weights
        return topk_idx, topk_weights, (0 if ref is None else ref.shape[1])

    def _acquire(self, call, num_tokens, num_experts):
        """A C handle for num_tokens tokens: the smallest idle one that fits, else a new one (not under capture)."""
        st = self._state
        fits = [k for k in st.free if k[1] == num_experts and k[0] >= num_tokens]
        if fits:
            key = min(fits)
            st.free.remove(key)
            return key
        if torch.cuda.is_current_stream_capturing():
            raise InvalidArgumentError(
                f'{call}: num_tokens = {num_tokens}, num_experts = {num_experts}: no idle handle fits during '
                'CUDA-graph capture (handles allocate device memory, which capture forbids): run the same dispatch '
                'once before capturing, and drop its handle')
        cap = _capacity(num_tokens)
        key = (cap, num_experts, _C.handle_create(st.ptr, cap, num_experts, call))
        st.all.append(key[2])
        return key

    def dispatch(self, x, handle=None, num_tokens_per_rank=None, num_tokens_per_rdma_rank=None,
                 is_token_in_rank=None, num_tokens_per_expert=None, topk_idx=None, topk_weights=None,
                 expert_alignment=1, num_worst_tokens=0, config=None, previous_event=None, async_finish=False,
                 allocate_on_comm_stream=False):
        """Sends each token row to every PE hosting one of its experts (collective). x: bf16 [num_tokens, hidden], or
        (fp8 e4m3 [num_tokens, hidden], fp32 scales [num_tokens, hidden / 128]). Without ``handle``:
        is_token_in_rank and num_tokens_per_expert from get_dispatch_layout (num_tokens_per_rank and
        num_tokens_per_rdma_rank are accepted and not needed), optional topk_idx / topk_weights (both or neither).
        With ``handle``: the same routes again for other data (cached dispatch).

        Returns (recv_x or (recv_x, recv_x_scales), recv_topk_idx, recv_topk_weights,
        num_recv_tokens_per_expert_list, handle, event). Received rows: by source PE, then token index;
        recv_topk_idx in this PE's local expert numbering, -1 for another PE's expert (weight 0);
        num_recv_tokens_per_expert_list: per local expert, the entries naming it, aligned up to expert_alignment.
        With num_worst_tokens > 0 nothing waits for the device (CUDA-graph capturable): the outputs have
        num_worst_tokens rows (rows past the received count: recv_topk_idx -1, weights 0), the list is empty, and
        handle.device_counts() holds the counts."""
        call = 'tshmem.ep.Buffer.dispatch'
        x, x_scales, code = self._x(call, x)
        num_tokens, hidden = x.shape
        if handle is not None:
            handle = self._own(call, handle)
        topk_idx, topk_weights, num_topk = self._topk(call, topk_idx, topk_weights, num_tokens)
        n = self.group_size
        if handle is None:
            is_token_in_rank = _tensor(call, 'is_token_in_rank', is_token_in_rank, self._device, (torch.bool,), 2,
                                       'from get_dispatch_layout')
            _shape(call, 'is_token_in_rank', is_token_in_rank, (num_tokens, n), '[num_tokens of x, n_pes]')
            num_tokens_per_expert = _tensor(call, 'num_tokens_per_expert', num_tokens_per_expert, self._device,
                                            (torch.int32,), 1, 'from get_dispatch_layout')
            num_experts = num_tokens_per_expert.shape[0]
            expert_alignment = _int(call, 'expert_alignment', expert_alignment)
            num_worst_tokens = _int(call, 'num_worst_tokens', num_worst_tokens)
        self._stream_args(call, previous_event, async_finish, allocate_on_comm_stream)
        self._check_config(call, config)
        self._live(call)
        self._config(call, config, Buffer.get_dispatch_config)
        st = self._state
        compute, alloc = self._begin(previous_event, allocate_on_comm_stream)
        stream = self._comm.cuda_stream
        if handle is None:
            key = self._acquire(call, num_tokens, num_experts)
            try:
                num_recv, counts = _C.notify(st.ptr, key[2], _ptr(is_token_in_rank), _ptr(num_tokens_per_expert),
                                             num_tokens, num_experts, expert_alignment, num_worst_tokens,
                                             num_experts // n if num_experts % n == 0 else 0, stream, call)
            except BaseException:
                st.free.append(key)
                raise
            c_handle, new_handle = key[2], True
            rows = num_recv if num_recv >= 0 else num_worst_tokens
        else:
            c_handle, new_handle, rows = handle._ptr, False, handle.num_recv_rows
        if torch.cuda.is_current_stream_capturing():
            st.pinned.add(c_handle)
        try:
            with torch.cuda.stream(alloc):
                recv_x = torch.empty((rows, hidden), dtype=x.dtype, device=self._device)
                recv_scales = None
                if x_scales is not None:
                    recv_scales = torch.empty((rows, hidden // _FP8_BLOCK if hidden % _FP8_BLOCK == 0 else 1),
                                              dtype=torch.float32, device=self._device)
                recv_idx = recv_w = None
                if num_topk:
                    recv_idx = torch.empty((rows, num_topk), dtype=torch.int64, device=self._device)
                    recv_w = torch.empty((rows, num_topk), dtype=torch.float32, device=self._device)
                recv_src = rank_prefix = None
                if new_handle:
                    recv_src = torch.empty(rows, dtype=torch.int32, device=self._device)
                    rank_prefix = torch.empty((n, n), dtype=torch.int32, device=self._device)
            if new_handle:
                # DeepEP's rank_prefix_matrix: the cumulative sum over source PEs of their published counts per
                # destination, in the communication stream's order (after the notify; capturable).
                from . import _C as _base
                ptr, row_words = _C.handle_published_matrix(c_handle, call)
                published = _base.array(ptr, [n, row_words], [], 0, 32, 2, st.device, self, True)
                with torch.cuda.stream(self._comm):
                    torch.cumsum(published[:, :n], 0, dtype=torch.int32, out=rank_prefix)
            _typed(x, _C.dispatch, st.ptr, c_handle, _ptr(x), code, _ptr(x_scales), num_tokens, hidden,
                   _ptr(topk_idx), _ptr(topk_weights), num_topk, _ptr(recv_x), _ptr(recv_scales), _ptr(recv_idx),
                   _ptr(recv_w), _ptr(recv_src), rows, stream, call)
        except BaseException:
            if new_handle:
                st.release(key)  # back to the pool, unless a graph being captured holds it
            raise
        if new_handle:
            handle = Handle(st, key, (rank_prefix, None, None, recv_src, is_token_in_rank, None))
            handle.num_tokens, handle.num_experts = num_tokens, num_experts
            handle.expert_alignment, handle.num_worst_tokens = expert_alignment, num_worst_tokens
            handle.num_recv_tokens = num_recv if num_recv >= 0 else None
            handle.num_recv_rows = rows
            handle.num_recv_tokens_per_expert_list = counts if counts is not None else []
        inputs = [x, x_scales, topk_idx, topk_weights]
        if new_handle:
            inputs += [is_token_in_rank, num_tokens_per_expert]
        event = self._finish(compute, async_finish, allocate_on_comm_stream, inputs,
                             [recv_x, recv_scales, recv_idx, recv_w, recv_src, rank_prefix])
        out_x = (recv_x, recv_scales) if x_scales is not None else recv_x
        counts = list(handle.num_recv_tokens_per_expert_list) if new_handle else None
        return out_x, recv_idx, recv_w, counts, handle, event

    # ---- combine

    def combine(self, x, handle, topk_weights=None, bias=None, config=None, previous_event=None, async_finish=False,
                allocate_on_comm_stream=False):
        """Returns each received row to its home PE and sums there (collective): x bf16 [rows, hidden], one row per
        received row of the handle's dispatch (same order). combined_x[t] = bf16(sum over PEs p ascending of
        float(x_p[row of t]) + bias0[t] + bias1[t]) in fp32, rounded once; optional topk_weights [rows, num_topk]
        fp32 are summed alike; bias: None, a bf16 tensor [num_tokens, hidden], or a pair of them. Returns
        (combined_x, combined_topk_weights or None, event)."""
        call = 'tshmem.ep.Buffer.combine'
        x = _tensor(call, 'x', x, self._device, None, 2, '[received rows, hidden]')
        code = _x_dtype(call, 'x', x)
        num_rows, hidden = x.shape
        if handle is None:
            raise ArgumentTypeError(f'{call}: handle is None; it must be the handle the dispatch returned')
        handle = self._own(call, handle)
        if topk_weights is not None:
            topk_weights = _tensor(call, 'topk_weights', topk_weights, self._device, (torch.float32,), 2,
                                   '[received rows, num_topk]')
            if topk_weights.shape[0] != num_rows:
                _shape(call, 'topk_weights', topk_weights, (num_rows, topk_weights.shape[1]), 'one row per row of x')
        num_topk = 0 if topk_weights is None else topk_weights.shape[1]
        biases = list(bias) if _pair(bias) else [bias]
        if len(biases) > 2:
            raise ArgumentTypeError(f'{call}: bias is a sequence of {len(biases)}; it must be None, a tensor or a pair')
        biases += [None] * (2 - len(biases))
        for i, b in enumerate(biases):
            if b is not None:
                name = 'bias' if not _pair(bias) else f'bias[{i}]'
                _tensor(call, name, b, self._device, (torch.bfloat16,), 2, '[num_tokens, hidden]')
                _shape(call, name, b, (handle.num_tokens, hidden), '[num_tokens of the dispatch, hidden of x]')
        self._stream_args(call, previous_event, async_finish, allocate_on_comm_stream)
        self._check_config(call, config)
        self._live(call)
        self._config(call, config, Buffer.get_combine_config)
        st = self._state
        compute, alloc = self._begin(previous_event, allocate_on_comm_stream)
        if torch.cuda.is_current_stream_capturing():
            st.pinned.add(handle._ptr)
        with torch.cuda.stream(alloc):
            out = torch.empty((handle.num_tokens, hidden), dtype=torch.bfloat16, device=self._device)
            out_w = None
            if topk_weights is not None:
                out_w = torch.empty((handle.num_tokens, num_topk), dtype=torch.float32, device=self._device)
        _typed(x, _C.combine, st.ptr, handle._ptr, _ptr(x), code, num_rows, hidden, _ptr(topk_weights), num_topk,
               _ptr(biases[0]), _ptr(biases[1]), _ptr(out), _ptr(out_w), self._comm.cuda_stream, call)
        event = self._finish(compute, async_finish, allocate_on_comm_stream, [x, topk_weights] + biases,
                             [out, out_w])
        return out, out_w, event

    # ---- low-latency mode (DeepEP's low_latency_* calls; docs/ep-python.md, "Low-latency mode")

    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank, hidden, num_ranks, num_experts):
        """num_rdma_bytes the low-latency calls need for these shapes (their two slots)."""
        call = 'tshmem.ep.Buffer.get_low_latency_rdma_size_hint'
        _require_ext(call)
        args = [_int(call, n, v) for n, v in (('num_max_dispatch_tokens_per_rank', num_max_dispatch_tokens_per_rank),
                                               ('hidden', hidden), ('num_ranks', num_ranks),
                                               ('num_experts', num_experts))]
        size = _C.ll_rdma_size_hint(*args)
        if size == 0:
            raise InvalidArgumentError(f'{call}: num_max_dispatch_tokens_per_rank = {args[0]}, hidden = {args[1]}, '
                                       f'num_ranks = {args[2]}, num_experts = {args[3]}: tokens in [1, 65536], hidden '
                                       'a multiple of 8, num_experts a multiple of num_ranks up to 1024')
        return size

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank, hidden, num_experts):
        """Collective among the PEs this PE does not mask: zeroes the low-latency signals of both slots between two
        barriers (after normal-mode calls, or to change the low-latency shapes), on the current stream. A masked PE
        is not waited for; one not masked that does not come is masked at the buffer's timeout."""
        call = 'tshmem.ep.Buffer.clean_low_latency_buffer'
        args = [_int(call, n, v) for n, v in (('num_max_dispatch_tokens_per_rank', num_max_dispatch_tokens_per_rank),
                                               ('hidden', hidden), ('num_experts', num_experts))]
        self._live(call)
        _C.ll_clean(self._state.ptr, *args, torch.cuda.current_stream(self._device).cuda_stream, call)

    def _ll_stream(self, return_recv_hook):
        """(compute stream, launch stream): with the hook the kernels go on the current stream, as DeepEP's do;
        otherwise on the communication stream, after the current stream's work."""
        compute = torch.cuda.current_stream(self._device)
        if return_recv_hook:
            return compute, compute
        self._comm.wait_stream(compute)
        return compute, self._comm

    def _ll_finish(self, compute, launch, async_finish, tensors):
        if launch is compute:
            if async_finish:
                event = torch.cuda.Event()
                event.record(compute)
                return EventOverlap(event, tensors)
            return EventOverlap()
        if async_finish:
            event = torch.cuda.Event()
            event.record(launch)
            if not torch.cuda.is_current_stream_capturing():
                for t in tensors:
                    t.record_stream(launch)
            return EventOverlap(event, tensors)
        compute.wait_stream(launch)
        return EventOverlap()

    def low_latency_dispatch(self, x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts,
                             cumulative_local_expert_recv_stats=None, dispatch_wait_recv_cost_stats=None,
                             use_fp8=True, round_scale=False, use_ue8m0=False, async_finish=False,
                             return_recv_hook=False):
        """DeepEP's low_latency_dispatch (collective, no host synchronisation: CUDA-graph capturable). x bf16
        [num_tokens, hidden], topk_idx int64 [num_tokens, num_topk] (-1: none). Returns (recv_x, recv_count,
        handle, event, hook): recv_x [L, num_ranks * M, hidden] bf16, or with use_fp8 the pair (fp8 e4m3 data,
        scales), the scales fp32 [L, num_ranks * M, hidden / 128] or with use_ue8m0 int32 [L, num_ranks * M,
        hidden / 512] (four UE8M0 exponents each), column-major in the last two dimensions; recv_count int32 [L]
        (the valid rows of each expert); handle = (src_info, layout_range, M, hidden, num_experts). With
        return_recv_hook the call only sends; hook() receives."""
        call = 'tshmem.ep.Buffer.low_latency_dispatch'
        x = _tensor(call, 'x', x, self._device, (torch.bfloat16,), 2, '[num_tokens, hidden]')
        topk_idx = _tensor(call, 'topk_idx', topk_idx, self._device, (torch.int64,), 2, '[num_tokens, num_topk]')
        num_tokens, hidden = x.shape
        if topk_idx.shape[0] != num_tokens:
            _shape(call, 'topk_idx', topk_idx, (num_tokens, topk_idx.shape[1]), 'one row per token of x')
        M = _int(call, 'num_max_dispatch_tokens_per_rank', num_max_dispatch_tokens_per_rank)
        num_experts = _int(call, 'num_experts', num_experts)
        for name in ('use_fp8', 'round_scale', 'use_ue8m0', 'async_finish', 'return_recv_hook'):
            _flag(call, name, locals()[name])
        n = self.group_size
        L = num_experts // n if num_experts > 0 and num_experts % n == 0 else 0
        if cumulative_local_expert_recv_stats is not None:
            _tensor(call, 'cumulative_local_expert_recv_stats', cumulative_local_expert_recv_stats, self._device,
                    (torch.int32,), 1, '[num_local_experts]')
            _shape(call, 'cumulative_local_expert_recv_stats', cumulative_local_expert_recv_stats, (L,),
                   '[num_experts / num_ranks]')
        if dispatch_wait_recv_cost_stats is not None:
            _tensor(call, 'dispatch_wait_recv_cost_stats', dispatch_wait_recv_cost_stats, self._device,
                    (torch.int64,), 1, '[num_ranks]')
            _shape(call, 'dispatch_wait_recv_cost_stats', dispatch_wait_recv_cost_stats, (n,), '[num_ranks]')
        self._live(call)
        rows = n * M if 0 < M <= 65536 else 0
        compute, launch = self._ll_stream(return_recv_hook)
        dev = self._device
        data = torch.empty((L, rows, hidden), dtype=torch.float8_e4m3fn if use_fp8 else torch.bfloat16, device=dev)
        scales = None
        if use_fp8:
            if use_ue8m0:
                scales = torch.empty((L, hidden // 512, rows), dtype=torch.int32, device=dev).transpose(1, 2)
            else:
                scales = torch.empty((L, hidden // 128, rows), dtype=torch.float32, device=dev).transpose(1, 2)
        count = torch.empty(L, dtype=torch.int32, device=dev)
        src_info = torch.empty((L, rows), dtype=torch.int32, device=dev)
        layout_range = torch.empty((L, n), dtype=torch.int64, device=dev)
        st = self._state
        args = [st.ptr, _ptr(x), _ptr(topk_idx), num_tokens, hidden, topk_idx.shape[1], M, num_experts, use_fp8,
                round_scale, use_ue8m0, _ptr(data), _ptr(scales), _ptr(count), _ptr(src_info), _ptr(layout_range),
                _ptr(cumulative_local_expert_recv_stats), _ptr(dispatch_wait_recv_cost_stats)]
        phases = _C.LL_SEND if return_recv_hook else _C.LL_BOTH
        slot = _C.ll_dispatch(*args, phases, 0, launch.cuda_stream, call)
        handle = (src_info, layout_range, M, hidden, num_experts)
        tensors = [x, topk_idx, data, scales, count, src_info, layout_range, cumulative_local_expert_recv_stats,
                   dispatch_wait_recv_cost_stats]
        event = self._ll_finish(compute, launch, async_finish, [t for t in tensors if t is not None])

        def hook():
            _C.ll_dispatch(*args, _C.LL_RECV, slot, torch.cuda.current_stream(dev).cuda_stream, call + ' (hook)')

        recv_x = (data, scales) if use_fp8 else data
        return recv_x, count, handle, event, (hook if return_recv_hook else None)

    def low_latency_combine(self, x, topk_idx, topk_weights, handle, use_logfmt=False, zero_copy=False,
                            async_finish=False, return_recv_hook=False, out=None, combine_wait_recv_cost_stats=None):
        """DeepEP's low_latency_combine (collective, capturable): x bf16 [L, num_ranks * M, hidden], the experts'
        outputs in the dispatch's layout (with zero_copy: already written into get_next_low_latency_combine_buffer);
        topk_idx / topk_weights [num_tokens, num_topk] of the dispatch. combined_x[t] = bf16(sum over k of
        topk_weights[t, k] * y_k) in fp32, top-k order, one rounding; entries -1 or on a masked PE add nothing.
        Returns (combined_x, event, hook)."""
        call = 'tshmem.ep.Buffer.low_latency_combine'
        if not isinstance(handle, tuple) or len(handle) != 5:
            raise ArgumentTypeError(f'{call}: handle must be the 5-tuple low_latency_dispatch returned')
        src_info, layout_range, M, hidden, num_experts = handle
        for name in ('use_logfmt', 'zero_copy', 'async_finish', 'return_recv_hook'):
            _flag(call, name, locals()[name])
        if use_logfmt:
            raise UnsupportedError(f'{call}: use_logfmt = True; tshmem.ep sends combine rows as bf16 (no LogFMT '
                                   'encoding; docs/ep-python.md says why): pass use_logfmt=False')
        n = self.group_size
        L = num_experts // n
        topk_idx = _tensor(call, 'topk_idx', topk_idx, self._device, (torch.int64,), 2, '[num_tokens, num_topk]')
        topk_weights = _tensor(call, 'topk_weights', topk_weights, self._device, (torch.float32,), 2,
                               '[num_tokens, num_topk]')
        _shape(call, 'topk_weights', topk_weights, topk_idx.shape, 'the shape of topk_idx')
        num_tokens, num_topk = topk_idx.shape
        if not zero_copy:
            x = _tensor(call, 'x', x, self._device, (torch.bfloat16,), 3, '[num_local_experts, num_ranks * M, hidden]')
            _shape(call, 'x', x, (L, n * M, hidden), '[num_local_experts, num_ranks * M, hidden] of the dispatch')
        if out is not None:
            out = _tensor(call, 'out', out, self._device, (torch.bfloat16,), 2, '[num_tokens, hidden]')
            _shape(call, 'out', out, (num_tokens, hidden), '[num_tokens of the dispatch, hidden]')
        if combine_wait_recv_cost_stats is not None:
            _tensor(call, 'combine_wait_recv_cost_stats', combine_wait_recv_cost_stats, self._device,
                    (torch.int64,), 1, '[num_ranks]')
            _shape(call, 'combine_wait_recv_cost_stats', combine_wait_recv_cost_stats, (n,), '[num_ranks]')
        self._live(call)
        compute, launch = self._ll_stream(return_recv_hook)
        dev = self._device
        if out is None:
            out = torch.empty((num_tokens, hidden), dtype=torch.bfloat16, device=dev)
        st = self._state
        args = [st.ptr, 0 if zero_copy else _ptr(x), _ptr(topk_idx), _ptr(topk_weights), _ptr(src_info),
                _ptr(layout_range), num_tokens, hidden, num_topk, M, num_experts, zero_copy, _ptr(out),
                _ptr(combine_wait_recv_cost_stats)]
        phases = _C.LL_SEND if return_recv_hook else _C.LL_BOTH
        slot = _C.ll_combine(*args, phases, 0, launch.cuda_stream, call)
        tensors = [t for t in (None if zero_copy else x, topk_idx, topk_weights, src_info, layout_range, out)
                   if t is not None]
        event = self._ll_finish(compute, launch, async_finish, tensors)

        def hook():
            _C.ll_combine(*args, _C.LL_RECV, slot, torch.cuda.current_stream(dev).cuda_stream, call + ' (hook)')

        return out, event, (hook if return_recv_hook else None)

    def get_next_low_latency_combine_buffer(self, handle):
        """The send area the next low-latency call uses, as a bf16 tensor [L, num_ranks * M, hidden] on this
        buffer's memory: write the experts' outputs there and combine with zero_copy=True."""
        call = 'tshmem.ep.Buffer.get_next_low_latency_combine_buffer'
        if not isinstance(handle, tuple) or len(handle) != 5:
            raise ArgumentTypeError(f'{call}: handle must be the 5-tuple low_latency_dispatch returned')
        _, _, M, hidden, num_experts = handle
        self._live(call)
        ptr = _C.ll_next_combine_buffer(self._state.ptr, M, hidden, num_experts, call)
        from . import _C as _base
        n = self.group_size
        return _base.array(ptr, [num_experts // n, n * M, hidden], [], 4, 16, 2, self._state.device, self, True)

    def low_latency_update_mask_buffer(self, rank_to_mask, mask=False):
        """Masks (mask=True) or unmasks a PE for the low-latency calls of this PE: it is neither sent to nor waited
        for, and its experts' rows combine to nothing. On the current stream."""
        call = 'tshmem.ep.Buffer.low_latency_update_mask_buffer'
        rank = _int(call, 'rank_to_mask', rank_to_mask)
        _flag(call, 'mask', mask)
        self._live(call)
        _C.ll_update_mask(self._state.ptr, rank, mask, torch.cuda.current_stream(self._device).cuda_stream, call)

    def low_latency_query_mask_buffer(self, mask_status):
        """Writes the mask into mask_status, int32 [num_ranks] (1: masked), on the current stream."""
        call = 'tshmem.ep.Buffer.low_latency_query_mask_buffer'
        _tensor(call, 'mask_status', mask_status, self._device, (torch.int32,), 1, '[num_ranks]')
        _shape(call, 'mask_status', mask_status, (self.group_size,), '[num_ranks]')
        self._live(call)
        _C.ll_query_mask(self._state.ptr, _ptr(mask_status), torch.cuda.current_stream(self._device).cuda_stream,
                         call)

    def low_latency_clean_mask_buffer(self):
        """Unmasks every PE, on the current stream."""
        call = 'tshmem.ep.Buffer.low_latency_clean_mask_buffer'
        self._live(call)
        _C.ll_clean_mask(self._state.ptr, torch.cuda.current_stream(self._device).cuda_stream, call)


    def check_device_errors(self):
        """Waits for the communication stream, then raises the first error the device recorded (an expert id out of
        range under CUDA-graph capture, a num_worst_tokens overflow), if any."""
        call = 'tshmem.ep.Buffer.check_device_errors'
        self._live(call)
        _C.check_device_errors(self._state.ptr, self._comm.cuda_stream, call)


__all__ = ['Buffer', 'Config', 'EventOverlap', 'Handle', 'buffer_size_hint', 'topk_idx_t', 'BufferTooSmallError',
           'InvalidValueError', 'UnsupportedError']
