"""Remote memory access, signals, ordering and collectives.

On a GPU heap every call is stream-ordered, on torch's current stream of this PE's device unless ``stream=`` (a
torch.cuda.Stream or a raw cudaStream_t int) is given; ``blocking=True`` gives the host-blocking form, which
first waits for the work already queued on that stream. On the shm backend (host memory) every call is
host-blocking and takes no stream. Arguments are checked before anything is launched: mistakes raise
ArgumentTypeError (a TypeError) or InvalidArgumentError (a ValueError) naming the argument. Host-blocking
collectives carry such a refusal into their checked rendezvous, so every PE raises alike and none waits.
"""

from . import _C
from ._arrays import DTYPES, buf, invalid, numpy, torch
from ._enums import Cmp, ReduceOp, SignalOp
from ._errors import ArgumentTypeError, InvalidArgumentError
from ._runtime import (_SLOW, TEAM_INVALID, TEAM_WORLD, _checked_collective, _int_arg, _live_block, _pe_arg,
                       _require, _state)


_CMP_NAMES = {'eq': Cmp.EQ, '==': Cmp.EQ, 'ne': Cmp.NE, '!=': Cmp.NE, 'gt': Cmp.GT, '>': Cmp.GT, 'le': Cmp.LE,
              '<=': Cmp.LE, 'lt': Cmp.LT, '<': Cmp.LT, 'ge': Cmp.GE, '>=': Cmp.GE}
_U64 = 1 << 64


# ---- arguments -----------------------------------------------------------------------------------------------

def _mode(call, stream, blocking):
    """'stream' or 'host'."""
    if _state.gpu:
        return 'host' if blocking else 'stream'
    if stream is not None:
        raise invalid(call, f'stream = {stream!r}, but the {_state.backend} heap is host memory: calls are '
                            'host-blocking and take no stream')
    return 'host'


def _stream(stream):
    if stream is None:
        return torch.cuda.current_stream(_state.device).cuda_stream
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    raw = getattr(stream, 'cuda_stream', None)
    if raw is None:
        raise ArgumentTypeError(f'stream = {stream!r} is neither a torch.cuda.Stream nor a cudaStream_t (int)')
    dev = getattr(stream, 'device', None)
    if dev is not None and getattr(dev, 'index', _state.device) != _state.device:
        raise invalid('stream', f'{stream!r} belongs to {dev}; this PE\'s heap is on cuda:{_state.device}')
    return raw


def _sync_before(stream):
    """Host-blocking on a GPU heap: the work already queued on the stream comes first."""
    if _state.gpu:
        if stream is None:
            torch.cuda.current_stream(_state.device).synchronize()
        elif hasattr(stream, 'synchronize'):
            stream.synchronize()
        else:
            torch.cuda.ExternalStream(stream, device=_state.device).synchronize()


def _where(b):
    return f'{b.device}:{b.index}' if b.device == 'cuda' else b.device


def _device_check(b, arg, call, on_heap, on_stream):
    if _state.gpu:
        if b.device == 'cuda' and b.index != _state.device:
            raise invalid(call, f'{arg} is on {_where(b)}; this PE\'s heap is on cuda:{_state.device}')
        if b.device != 'cuda' and (on_heap or on_stream):
            raise invalid(call, f'{arg} is on the {_where(b)}; it must be on cuda:{_state.device} (this PE\'s heap)')
    elif b.device != 'cpu':
        raise invalid(call, f'{arg} is on {_where(b)}; the {_state.backend} heap is host memory: pass CPU arrays')


def _check_written(obj, arg, call):
    """A destination must take writes: a read-only numpy array (a view of bytes, say) is refused, not written."""
    if numpy is not None and isinstance(obj, numpy.ndarray) and not obj.flags.writeable:
        raise invalid(call, f'{arg} is read-only (numpy flags.writeable is False); the call writes it')


def _heap_arg(obj, arg, call, on_stream=False, written=False):
    b = buf(obj, arg, call)
    if not b.contiguous:
        raise invalid(call, f'{arg} is not contiguous (shape {b.shape}): pass a contiguous array')
    if written:
        _check_written(obj, arg, call)
    _device_check(b, arg, call, True, on_stream)
    if b.nbytes and not (_state.base <= b.ptr and b.ptr + b.nbytes <= _state.base + _state.size):
        raise invalid(call, f'{arg} (data_ptr {b.ptr:#x}, {b.nbytes} bytes) is not on the symmetric heap: '
                            'allocate it with tshmem.empty or tshmem.zeros')
    if b.nbytes and _live_block(b.ptr, b.nbytes) is None:
        raise invalid(call, f'{arg} (data_ptr {b.ptr:#x}, {b.nbytes} bytes) is not inside a live allocation: it was '
                            'freed (tshmem.free, or the tshmem.scope that allocated it closed)')
    return b


def _local_arg(obj, arg, call, on_stream, written=False):
    b = buf(obj, arg, call)
    if not b.contiguous:
        raise invalid(call, f'{arg} is not contiguous (shape {b.shape}): pass a contiguous array')
    if written:
        _check_written(obj, arg, call)
    _device_check(b, arg, call, False, on_stream)
    return b


def _same(a, b, an, bn, call):
    if a.dtype is not b.dtype:
        raise ArgumentTypeError(f'{call}: {an} is {a.dtype.name} and {bn} is {b.dtype.name}; they must match')
    if a.nbytes != b.nbytes:
        raise invalid(call, f'{an} has {a.numel} elements and {bn} {b.numel}; they must match')


def _signal_word(obj, call):
    b = _heap_arg(obj, 'signal_var', call)
    if b.dtype.name not in ('int64', 'uint64'):
        raise ArgumentTypeError(f'{call}: signal_var is {b.dtype.name}; a signal word is int64 or uint64')
    if b.numel < 1:
        raise invalid(call, 'signal_var has no element')
    return b.ptr


def _word_value(value, arg, call):
    if isinstance(value, bool) or not hasattr(value, '__index__'):
        raise ArgumentTypeError(f'{call}: {arg} = {value!r} is not an int')
    v = value.__index__()
    if not -(1 << 63) <= v < _U64:
        raise invalid(call, f'{arg} = {v} does not fit a 64-bit word')
    return v % _U64


def _signal_op(op, call):
    if isinstance(op, Cmp):
        raise ArgumentTypeError(f'{call}: signal_op = {op!r} is a comparison; put_signal takes a signal operator '
                                '(tshmem.SIGNAL_SET or tshmem.SIGNAL_ADD)')
    if isinstance(op, SignalOp):
        return int(op)
    if isinstance(op, str) and op.lower() in ('set', 'add'):
        return int(SignalOp[op.upper()])
    raise ArgumentTypeError(f'{call}: signal_op = {op!r} is not a signal operator (tshmem.SIGNAL_SET or '
                            'tshmem.SIGNAL_ADD)')


def _cmp(cmp, call):
    if isinstance(cmp, SignalOp):
        raise ArgumentTypeError(f'{call}: cmp = {cmp!r} is a signal operator; signal_wait_until takes a comparison '
                                '(tshmem.CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE)')
    if isinstance(cmp, Cmp):
        return int(cmp)
    if isinstance(cmp, str) and cmp.lower() in _CMP_NAMES:
        return int(_CMP_NAMES[cmp.lower()])
    raise ArgumentTypeError(f'{call}: cmp = {cmp!r} is not a comparison (tshmem.CMP_EQ, CMP_NE, CMP_GT, CMP_GE, '
                            'CMP_LT, CMP_LE)')


def _redop(op, dt, call):
    if isinstance(op, ReduceOp):
        code = int(op)
    elif isinstance(op, str) and op.upper() in ReduceOp.__members__:
        code = int(ReduceOp[op.upper()])
    else:
        raise ArgumentTypeError(f'{call}: op = {op!r} is not a reduction operator (sum, min, max, prod; and, or, '
                                'xor for integers)')
    if dt.reduce_code is None:
        supported = ', '.join(n for n, d in DTYPES.items() if d.reduce_code is not None)
        raise ArgumentTypeError(f'{call}: dtype {dt.name} has no reductions (supported: {supported})')
    if code >= ReduceOp.AND and dt.name.startswith(('float', 'bfloat')):
        raise ArgumentTypeError(f'{call}: op = {ReduceOp(code).name.lower()} needs an integer dtype; got {dt.name}')
    return code


# ---- remote memory access ------------------------------------------------------------------------------------

def put(dst, src, pe, *, stream=None, blocking=False):
    """Copies the local array src into PE `pe`'s copy of the symmetric array dst (same dtype and size). Complete at
    the target after quiet or a barrier."""
    if _C.fast_put(dst, src, pe, stream, blocking) is not _SLOW:
        return
    call = 'tshmem.put'
    _require(call)
    mode = _mode(call, stream, blocking)
    d = _heap_arg(dst, 'dst', call, mode == 'stream', written=True)
    s = _local_arg(src, 'src', call, mode == 'stream')
    _same(d, s, 'dst', 'src', call)
    pe = _pe_arg(pe, call)
    if mode == 'stream':
        _C.putmem_on_stream(d.ptr, s.ptr, d.nbytes, pe, _stream(stream))
    else:
        _sync_before(stream)
        _C.putmem(d.ptr, s.ptr, d.nbytes, pe)


def get(dst, src, pe, *, stream=None, blocking=False):
    """Copies PE `pe`'s copy of the symmetric array src into the local array dst."""
    if _C.fast_get(dst, src, pe, stream, blocking) is not _SLOW:
        return
    call = 'tshmem.get'
    _require(call)
    mode = _mode(call, stream, blocking)
    d = _local_arg(dst, 'dst', call, mode == 'stream', written=True)
    s = _heap_arg(src, 'src', call, mode == 'stream')
    _same(d, s, 'dst', 'src', call)
    pe = _pe_arg(pe, call)
    if mode == 'stream':
        _C.getmem_on_stream(d.ptr, s.ptr, d.nbytes, pe, _stream(stream))
    else:
        _sync_before(stream)
        _C.getmem(d.ptr, s.ptr, d.nbytes, pe)


def put_signal(dst, src, signal_var, signal_val, signal_op, pe, *, stream=None, blocking=False):
    """put, then the signal word (the first element of signal_var, int64 or uint64, on the heap) on `pe` becomes
    signal_val (SIGNAL_SET) or grows by it (SIGNAL_ADD, atomic). A PE that sees the signal sees the data."""
    call = 'tshmem.put_signal'
    _require(call)
    mode = _mode(call, stream, blocking)
    d = _heap_arg(dst, 'dst', call, mode == 'stream', written=True)
    s = _local_arg(src, 'src', call, mode == 'stream')
    _same(d, s, 'dst', 'src', call)
    sig = _signal_word(signal_var, call)
    value = _word_value(signal_val, 'signal_val', call)
    op = _signal_op(signal_op, call)
    pe = _pe_arg(pe, call)
    if mode == 'stream':
        _C.putmem_signal_on_stream(d.ptr, s.ptr, d.nbytes, sig, value, op, pe, _stream(stream))
    else:
        _sync_before(stream)
        _C.putmem_signal(d.ptr, s.ptr, d.nbytes, sig, value, op, pe)


def signal_wait_until(signal_var, cmp, cmp_val, *, timeout=None, stream=None, blocking=False):
    """Waits until this PE's signal word (the first element of signal_var) compares to cmp_val by `cmp`.
    Host-blocking (the shm backend, or blocking=True): returns the word's value; ``timeout`` (seconds; None:
    forever) ends the wait with tshmem.TimeoutError. On a stream: later work on it waits (bounded by
    TSHMEM_WAIT_TIMEOUT_MS) and None is returned."""
    call = 'tshmem.signal_wait_until'
    _require(call)
    mode = _mode(call, stream, blocking)
    sig = _signal_word(signal_var, call)
    c = _cmp(cmp, call)
    value = _word_value(cmp_val, 'cmp_val', call)
    if mode == 'stream':
        if timeout is not None:
            raise invalid(call, 'timeout bounds host-blocking waits; a wait on a stream ends at TSHMEM_WAIT_TIMEOUT_MS')
        _C.signal_wait_until_on_stream(sig, c, value, _stream(stream))
        return None
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise invalid(call, f'timeout = {timeout!r}; it must be a number of seconds > 0, or None')
    ms = 0 if timeout is None else max(1, int(timeout * 1000))
    return _C.signal_wait_until(sig, c, value, ms)


def quiet(*, stream=None, blocking=False):
    """Completes this PE's puts. Stream-ordered puts complete in stream order, so on a stream this enqueues
    nothing; the host-blocking form (and every call on shm) completes what the host issued."""
    call = 'tshmem.quiet'
    _require(call)
    if _mode(call, stream, blocking) == 'stream':
        _stream(stream)  # checked all the same
        return
    _sync_before(stream)
    _C.quiet()


def fence(*, stream=None, blocking=False):
    """Orders this PE's puts to each PE (those before reach it before those after): as quiet here, since host puts
    complete when they return and stream-ordered ones in stream order."""
    quiet(stream=stream, blocking=blocking)


def barrier_all(*, stream=None, blocking=False):
    """Every PE waits for all others after completing its puts (collective)."""
    if _C.fast_barrier_all(stream, blocking) is not _SLOW:
        return
    call = 'tshmem.barrier_all'
    _require(call)
    if _mode(call, stream, blocking) == 'stream':
        _C.barrier_on_stream(TEAM_WORLD, _stream(stream))
        return
    _sync_before(stream)
    _C.barrier_all(None, None)


def barrier(team=TEAM_WORLD, *, stream=None, blocking=False):
    """Barrier over `team` (collective over its members; the host-blocking form needs a team of every PE)."""
    call = 'tshmem.barrier'
    _require(call)
    mode = _mode(call, stream, blocking)
    if mode == 'stream':
        _C.barrier_on_stream(_int_arg(team, 'team', call), _stream(stream))
        return
    err = None
    try:
        team = _int_arg(team, 'team', call)
    except ArgumentTypeError as e:
        err, team = str(e), TEAM_INVALID
    _sync_before(stream)
    _checked_collective(lambda e: _C.barrier(team, None, e), err, True)


# ---- collectives ---------------------------------------------------------------------------------------------

def _collective(call, stream, blocking, check, run_on_stream, host, dummy):
    """check(on_stream) -> (args, desc); run_on_stream(args, stream); host(args, desc, err). A refused argument
    raises at once on a stream (as in the C API, the check is local) and joins the checked rendezvous of a
    host-blocking call, so that every PE raises alike. The library describes valid calls itself (a failure's
    report carries whole messages): desc names the call in Python's terms on every PE."""
    _require(call)
    on_stream = _state.gpu and not blocking
    err, type_error = None, False
    try:
        _mode(call, stream, blocking)
        args, desc = check(on_stream)
    except InvalidArgumentError as e:
        if on_stream:
            raise
        # The refusal is this PE's verdict in the rendezvous; the call's own name heads every PE's message.
        args, desc, err, type_error = dummy, call, str(e), isinstance(e, TypeError)
    if on_stream:
        run_on_stream(args, _stream(stream))
        return
    if err is None:
        _sync_before(stream)
    _checked_collective(lambda e: host(args, desc, e), err, type_error)


def _team_size(team, call):
    n = _C.team_n_pes(_int_arg(team, 'team', call))
    return n if n > 0 else None  # an unknown team: the library names it


def all_reduce(dst, src=None, op='sum', team=TEAM_WORLD, *, stream=None, blocking=False):
    """dst = op over the team's PEs of src, element-wise (src None: dst in place). sum, min, max, prod (and, or,
    xor for integers) over int32, int64, uint32, uint64, float16, bfloat16, float32, float64; results are the C
    API's: accumulated in team-index order, identical on every PE."""
    if _C.fast_all_reduce(dst, src, op, team, stream, blocking) is not _SLOW:
        return
    call = 'tshmem.all_reduce'

    def check(on_stream):
        d = _heap_arg(dst, 'dst', call, on_stream, written=True)
        s = d if src is None else _heap_arg(src, 'src', call, on_stream)
        _same(d, s, 'dst', 'src', call)
        code = _redop(op, d.dtype, call)
        t = _int_arg(team, 'team', call)
        desc = f'{call}(team={t}, count={d.numel}, dtype={d.dtype.name}, op={ReduceOp(code).name.lower()})'
        return (t, d.ptr, s.ptr, d.numel, d.dtype.reduce_code, code), desc

    _collective(call, stream, blocking, check, lambda a, s: _C.allreduce_on_stream(*a, s),
                lambda a, d, e: _C.host_reduce(*a, d, e), (TEAM_INVALID, 0, 0, 0, 0, 0))


def reduce_scatter(dst, src, op='sum', team=TEAM_WORLD, *, stream=None, blocking=False):
    """dst = op over the team's PEs of this PE's slice of src (src holds team_n_pes * dst.numel elements)."""
    call = 'tshmem.reduce_scatter'

    def check(on_stream):
        d = _heap_arg(dst, 'dst', call, on_stream, written=True)
        s = _heap_arg(src, 'src', call, on_stream)
        if d.dtype is not s.dtype:
            raise ArgumentTypeError(f'{call}: dst is {d.dtype.name} and src is {s.dtype.name}; they must match')
        code = _redop(op, d.dtype, call)
        n = _team_size(team, call)
        if n is not None and s.numel != d.numel * n:
            raise invalid(call, f'src has {s.numel} elements; it must hold {n} x dst ({d.numel}) = {n * d.numel}')
        t = _int_arg(team, 'team', call)
        desc = f'{call}(team={t}, count={d.numel}, dtype={d.dtype.name}, op={ReduceOp(code).name.lower()})'
        return (t, d.ptr, s.ptr, d.numel, d.dtype.reduce_code, code), desc

    _collective(call, stream, blocking, check, lambda a, s: _C.reduce_scatter_on_stream(*a, s),
                lambda a, d, e: _C.host_reduce_scatter(*a, d, e), (TEAM_INVALID, 0, 0, 0, 0, 0))


def all_gather(dst, src, team=TEAM_WORLD, *, stream=None, blocking=False):
    """dst = the team's src arrays, concatenated in team-index order (dst holds team_n_pes x src)."""
    call = 'tshmem.all_gather'

    def check(on_stream):
        d = _heap_arg(dst, 'dst', call, on_stream, written=True)
        s = _heap_arg(src, 'src', call, on_stream)
        if d.dtype is not s.dtype:
            raise ArgumentTypeError(f'{call}: dst is {d.dtype.name} and src is {s.dtype.name}; they must match')
        n = _team_size(team, call)
        if n is not None and d.numel != s.numel * n:
            raise invalid(call, f'dst has {d.numel} elements; it must hold {n} x src ({s.numel}) = {n * s.numel}')
        t = _int_arg(team, 'team', call)
        return (t, d.ptr, s.ptr, s.nbytes), f'{call}(team={t}, nbytes={s.nbytes}, dtype={d.dtype.name})'

    _collective(call, stream, blocking, check, lambda a, s: _C.allgather_on_stream(*a, s),
                lambda a, d, e: _C.host_fcollect(*a, d, e), (TEAM_INVALID, 0, 0, 0))


def all_to_all(dst, src, team=TEAM_WORLD, *, stream=None, blocking=False):
    """Slice j of src on PE i lands in slice i of dst on PE j (team indices; dst and src of equal size, a
    multiple of team_n_pes)."""
    call = 'tshmem.all_to_all'

    def check(on_stream):
        d = _heap_arg(dst, 'dst', call, on_stream, written=True)
        s = _heap_arg(src, 'src', call, on_stream)
        _same(d, s, 'dst', 'src', call)
        n = _team_size(team, call)
        if n is not None and s.numel % n:
            raise invalid(call, f'src has {s.numel} elements, not a multiple of the team\'s {n} PEs')
        t = _int_arg(team, 'team', call)
        per = s.nbytes // n if n else s.nbytes
        return (t, d.ptr, s.ptr, per), f'{call}(team={t}, nbytes={per}, dtype={d.dtype.name})'

    _collective(call, stream, blocking, check, lambda a, s: _C.alltoall_on_stream(*a, s),
                lambda a, d, e: _C.host_alltoall(*a, d, e), (TEAM_INVALID, 0, 0, 0))


def broadcast(dst, src=None, root=0, team=TEAM_WORLD, *, stream=None, blocking=False):
    """dst on every PE of the team = src of team index `root` (src None: dst of the root)."""
    call = 'tshmem.broadcast'

    def check(on_stream):
        d = _heap_arg(dst, 'dst', call, on_stream, written=True)
        s = d if src is None else _heap_arg(src, 'src', call, on_stream)
        _same(d, s, 'dst', 'src', call)
        t, r = _int_arg(team, 'team', call), _int_arg(root, 'root', call)
        return (t, d.ptr, s.ptr, d.nbytes, r), f'{call}(team={t}, nbytes={d.nbytes}, root={r})'

    _collective(call, stream, blocking, check, lambda a, s: _C.broadcast_on_stream(*a, s),
                lambda a, d, e: _C.host_broadcast(*a, d, e), (TEAM_INVALID, 0, 0, 0, 0))
