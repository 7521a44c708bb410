"""Init and lifetime, teams, checked symmetric allocation, peer and multicast views."""

import atexit
import contextlib
import json as _json
import os
import sys
import warnings
import weakref

from . import _C
from ._arrays import (_ARRAY_DTYPES, _DTYPE_CACHE, DTYPES, ArgumentTypeError, _array_dtype, buf, dtype_of,
                      element_strides, extent, invalid, is_torch, numpy, shape_of, torch)
from ._enums import ReduceOp
from ._errors import (AsymmetricAllocationError, AsymmetricError, ConfigError, Error, InvalidArgumentError,
                      InvalidPEError, NotInitializedError, UnfreedWarning)

TEAM_INVALID = -1
TEAM_WORLD = 0
TEAM_NODE = 2

_KDL_CPU, _KDL_CUDA = 1, 2
_SLOW = _C.SLOW  # what a fast-path function returns for a call it leaves to the Python layer


class _State:
    """What this process knows between init and finalize (one job at a time)."""

    def __init__(self):
        self.live = False
        self.me = -1
        self.n = 0
        self.base = 0
        self.size = 0
        self.device = -1  # CUDA device of the heap; -1 on shm
        self.gpu = False  # the heap is device memory (vmm, ipc)
        self.backend = None
        self.blocks = {}  # address -> _Block, in allocation order
        self.scopes = []  # open tshmem.scope() blocks, innermost last


_state = _State()

# Called by finalize, in order, before the heap goes: objects that own symmetric memory through another library
# release it there, collectively (tshmem.ep destroys the buffers that were never destroyed, in creation order).
_before_finalize = []


class _Block:
    """One symmetric allocation: what finalize lists (where: "file:line", or the fast path's (code, byte offset)).
    `array` is a weak reference to the array empty/zeros returned: free takes that array only, never a view."""

    __slots__ = ('ptr', 'nbytes', 'desc', 'where', 'array', '__weakref__')

    def __init__(self, ptr, nbytes, desc, where):
        self.ptr, self.nbytes, self.desc, self.where, self.array = ptr, nbytes, desc, where, None

    def is_array(self, t):
        return self.array is not None and self.array() is t

    def __repr__(self):
        where = self.where
        if isinstance(where, tuple):  # (code, byte offset) from _C's fast path: the line is looked up now
            code, offset = where
            where = f'{os.path.basename(code.co_filename)}:{_C.code_line(code, offset)}'
        return f'{self.desc} from {where}'


def _require(call):
    if not _state.live:
        raise NotInitializedError(f'{call}: tshmem is not initialised (call tshmem.init first)')


_PACKAGE_DIR = os.path.dirname(__file__) + os.sep


def _caller():
    """file:line of the first frame outside this package: where an allocation was made."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    return f'{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}' if f is not None else '?'


# ---- init and lifetime ---------------------------------------------------------------------------------------

_MPI_LAUNCHER_VARS = ('OMPI_COMM_WORLD_SIZE', 'PMI_SIZE', 'PMIX_RANK', 'MV2_COMM_WORLD_SIZE', 'SLURM_STEP_ID')


def _under_torchrun():
    """torchrun (torch.distributed.elastic) started this process, and no MPI launcher did."""
    if any(v in os.environ for v in _MPI_LAUNCHER_VARS):
        return False
    return 'TORCHELASTIC_RUN_ID' in os.environ or ('LOCAL_RANK' in os.environ and 'WORLD_SIZE' in os.environ)


def _group_callbacks(group):
    """(rank, size, allgather, barrier) of a torch.distributed process group, or of any object with rank and size
    (ints or methods), allgather_bytes(bytes) -> bytes (every rank's bytes, concatenated in rank order) and
    barrier()."""
    dist = None
    if torch is not None:
        import torch.distributed as dist  # noqa: F811
        if not dist.is_available():
            dist = None
    if dist is not None and (group is dist.group.WORLD or isinstance(group, dist.ProcessGroup)):
        if not dist.is_initialized():
            raise ConfigError('tshmem.init(group=...): torch.distributed is not initialised '
                              '(call torch.distributed.init_process_group first)')
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        backend = str(dist.get_backend(group))
        # A CPU tensor where the group has a CPU backend; NCCL-only groups gather on this PE's current GPU.
        device = torch.device('cpu') if 'gloo' in backend or 'mpi' in backend else \
            torch.device('cuda', torch.cuda.current_device())

        def allgather(data):
            if not data:
                return b''
            mine = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device)
            parts = [torch.empty_like(mine) for _ in range(size)]
            dist.all_gather(parts, mine, group=group)  # every backend has it (gloo lacks all_gather_into_tensor)
            return torch.cat(parts).cpu().numpy().tobytes()

        return rank, size, allgather, lambda: allgather(b'\0')
    for name in ('rank', 'size', 'allgather_bytes', 'barrier'):
        if not hasattr(group, name):
            raise ArgumentTypeError(f'tshmem.init: group is a {type(group).__name__} without {name}; pass a '
                                    'torch.distributed process group, or an object with rank, size, '
                                    'allgather_bytes(bytes) -> bytes and barrier()')
    rank = group.rank() if callable(group.rank) else group.rank
    size = group.size() if callable(group.size) else group.size
    return int(rank), int(size), group.allgather_bytes, group.barrier


def init(group=None, *, nvshmem_env=False):
    """Starts tshmem: collective over the job's PEs.

    Without ``group`` the PEs are the processes of mpirun or srun (MPI bootstrap, as tshmem_init in C; the package
    starts MPI once and ends it when the interpreter exits, so init and finalize may alternate). Under
    torchrun, pass ``group=`` a torch.distributed process group (``torch.distributed.group.WORLD`` for all
    ranks); if torch.distributed is initialised, ``tshmem.init()`` takes the default group itself. With a group,
    MPI is neither used nor needed: PEs of one host reach each other, and PEs of other nodes are unreachable
    (every call that would reach one says so). On failure every PE raises the same error and nothing stays
    allocated. ``nvshmem_env`` also reads NVSHMEM's variable names where tshmem's are unset.
    """
    if _state.live:
        raise InvalidArgumentError('tshmem.init: already initialised (call tshmem.finalize first)')
    if group is None and _under_torchrun():
        dist = None
        if torch is not None:
            import torch.distributed as dist
        if dist is None or not dist.is_available() or not dist.is_initialized():
            raise ConfigError('tshmem.init: started by torchrun, but torch.distributed is not initialised: call '
                              'torch.distributed.init_process_group() first, or pass group=')
        group = dist.group.WORLD
    if group is None:
        _C.init()
    else:
        rank, size, allgather, barrier = _group_callbacks(group)
        _C.init_callbacks(rank, size, allgather, barrier, bool(nvshmem_env))
    s = _state
    s.me, s.n = _C.my_pe(), _C.n_pes()
    s.base, s.size = _C.heap_base(), _C.heap_size()
    s.backend = _C.backend_name()
    s.device = _C.cuda_device()
    s.gpu = s.backend in ('vmm', 'ipc')
    s.blocks, s.scopes = {}, []
    s.live = True
    _bind_fast_path()


def _bind_fast_path():
    """Hands _C's fast path (python/src/fast_path.cc) what it needs of this job: the heap, the live allocations,
    the dtype tables (filled here for the names and the torch and numpy dtypes; others join as the Python layer
    meets them) and one array over the whole heap, of which every allocation's array is a view."""
    s = _state
    numpy_dtypes, torch_dtypes = {}, {}
    for name, dt in DTYPES.items():
        dtype_of(name, 'dtype', 'tshmem.init')
        if torch is not None:
            torch_dtypes[name] = getattr(torch, name)
            dtype_of(torch_dtypes[name], 'dtype', 'tshmem.init')
            _array_dtype(torch_dtypes[name])
        if numpy is not None and name != 'bfloat16':
            numpy_dtypes[name] = numpy.dtype(name)
            _array_dtype(numpy_dtypes[name])
    u8 = DTYPES['uint8']
    dev_type, dev_id = (_KDL_CUDA, s.device) if s.gpu else (_KDL_CPU, 0)
    # The library owns the heap's memory until finalize; the arrays' owner is only a placeholder that lives as long.
    heap = lambda as_torch: _C.array(s.base, [s.size], [], u8.dl_code, u8.dl_bits, dev_type, dev_id, s,  # noqa
                                     as_torch)
    raw_stream = getattr(torch._C, '_cuda_getCurrentRawStream', None) if torch is not None and s.gpu else None
    _C.fast_bind({
        'base': s.base, 'size': s.size, 'gpu': s.gpu, 'device': s.device, 'blocks': s.blocks, 'scopes': s.scopes,
        'block_class': _Block, 'array_dtypes': _ARRAY_DTYPES, 'dtype_args': _DTYPE_CACHE,
        'ndarray_type': numpy.ndarray if numpy is not None else None,
        'tensor_type': torch.Tensor if torch is not None else None, 'reduce_op_type': ReduceOp,
        'raw_stream': raw_stream, 'as_strided': torch.as_strided if torch is not None else None,
        'numpy_dtypes': numpy_dtypes, 'torch_dtypes': torch_dtypes,
        'heap_numpy': heap(False) if numpy is not None and not s.gpu else None,
        'heap_torch': heap(True) if torch is not None else None,
        'asymmetric_alloc': AsymmetricAllocationError, 'package_dir': _PACKAGE_DIR,
    })


def finalize():
    """Ends tshmem: collective. Allocations never freed are listed in an UnfreedWarning (the same list on every
    PE: allocation order, not garbage-collection order) and released with the heap. An array over the heap that
    is still held afterwards reads zeros on the shm heap (its contents went with the heap; nothing faults); on a
    GPU heap its memory is gone. Does nothing when tshmem is not initialised."""
    s = _state
    if not s.live:
        return
    for release in list(_before_finalize):
        release()
    if s.blocks:
        listed = '; '.join(repr(b) for b in s.blocks.values())
        warnings.warn(UnfreedWarning(f'tshmem.finalize: {len(s.blocks)} symmetric allocation(s) never freed, '
                                     f'released now: {listed}'), stacklevel=2)
    _C.finalize()  # raises (on every PE) when some PE is not finalizing: tshmem then stays initialised
    _C.fast_unbind()
    s.__init__()


def unfreed():
    """What finalize would list now: one 'tshmem.empty(shape=..., dtype=...) from file:line' per live allocation,
    in allocation order."""
    return [repr(b) for b in _state.blocks.values()]


@contextlib.contextmanager
def initialized(group=None, **kwargs):
    """``with tshmem.initialized():`` init on entry, finalize on exit."""
    init(group, **kwargs)
    try:
        yield sys.modules[__package__]
    finally:
        finalize()


@atexit.register
def _finalize_at_exit():
    # MPI complains about processes that exit without finalizing; every PE exits, so every PE finalizes.
    if _state.live:
        try:
            finalize()
        except Error as e:  # pragma: no cover - a PE exited while others were still working
            print(f'tshmem: finalize at exit failed on PE {_state.me}: {e}', file=sys.stderr)
    _C.finalize_mpi()


def is_initialized():
    return _state.live


def my_pe():
    """This PE's number, or -1 before init."""
    return _C.my_pe()


def n_pes():
    """The number of PEs, or -1 before init."""
    return _C.n_pes()


def local_pe():
    return _C.local_pe()


def local_n_pes():
    return _C.local_n_pes()


def device():
    """The CUDA device index of this PE's heap, or -1 on the shm backend (host memory)."""
    return _C.cuda_device()


def backend():
    """The memory backend in use ('shm', 'vmm', 'ipc'), or None before init."""
    return _C.backend_name()


def info(json=False):
    """What the tshmem-info tool prints: build options, variables, backends, topology, multicast policy (a dict
    with json=True). Works before init."""
    text = _C.info(bool(json))
    return _json.loads(text) if json else text


# ---- teams ---------------------------------------------------------------------------------------------------

def _int_arg(value, arg, call):
    if isinstance(value, bool) or not hasattr(value, '__index__'):
        raise ArgumentTypeError(f'{call}: {arg} = {value!r} is not an int')
    return value.__index__()


def _live_block(ptr, nbytes):
    """The live allocation that holds [ptr, ptr + nbytes), or None (freed, or its scope closed)."""
    block = _state.blocks.get(ptr)
    if block is not None and nbytes <= block.nbytes:
        return block
    for block in _state.blocks.values():
        if block.ptr <= ptr and ptr + nbytes <= block.ptr + block.nbytes:
            return block
    return None


def _pe_arg(value, call):
    """A PE number: an int in [0, n_pes), else InvalidPEError naming the call and `pe` (whatever its size: the
    binding takes 32-bit PEs, and a larger int must not reach it as a conversion error)."""
    pe = _int_arg(value, 'pe', call)
    if not -2**31 <= pe < 2**31:  # within, the library checks and words it ("PE 5 out of range [0, 4)")
        n = _C.n_pes()
        raise InvalidPEError(f'{call}: pe = {pe}: PE {pe} out of range [0, {n})')
    return pe


def team_my_pe(team=TEAM_WORLD):
    return _C.team_my_pe(_int_arg(team, 'team', 'tshmem.team_my_pe'))


def team_n_pes(team=TEAM_WORLD):
    return _C.team_n_pes(_int_arg(team, 'team', 'tshmem.team_n_pes'))


def team_translate_pe(src_team, src_pe, dest_team):
    call = 'tshmem.team_translate_pe'
    return _C.team_translate_pe(_int_arg(src_team, 'src_team', call), _int_arg(src_pe, 'src_pe', call),
                                _int_arg(dest_team, 'dest_team', call))


def team_split_strided(parent, start, stride, size):
    """A team of the parent's members start, start + stride, ... (size of them). Collective over every PE of the
    job, checked: PEs that disagree are named. Members get the new team, the others TEAM_INVALID."""
    call = 'tshmem.team_split_strided'
    _require(call)
    args, err = [], None
    for name, value in (('parent', parent), ('start', start), ('stride', stride), ('size', size)):
        try:
            args.append(_int_arg(value, name, call))
        except ArgumentTypeError as e:
            # A split the library accepts locally, so that the refusal reaches its rendezvous.
            err, args = str(e), [TEAM_WORLD, 0, 1, 1]
            break
    return _checked_collective(lambda e: _C.team_split_strided(*args, None, e), err, err is not None)


def _checked_collective(run, err, type_error):
    """run(err): a collective through the library's checked rendezvous, which this PE's refused argument (err)
    joins as its verdict, so that every PE raises alike. The refusing PE raises its argument's kind of error."""
    try:
        return run(err)
    except InvalidArgumentError as e:
        if err is not None and type_error and not isinstance(e, TypeError):
            raise ArgumentTypeError(str(e)) from None
        raise


def team_destroy(team):
    _C.team_destroy(_int_arg(team, 'team', 'tshmem.team_destroy'))


# ---- symmetric allocation ------------------------------------------------------------------------------------

_ARRAY_TYPES = ('numpy', 'torch')


def _array(address, shape, strides, dt, owner, as_torch):
    """An array over a mapped peer's or the multicast heap that keeps `owner` alive (this PE's own allocations are
    _C.heap_view's)."""
    dev_type, dev_id = (_KDL_CUDA, _state.device) if _state.gpu else (_KDL_CPU, 0)
    return _C.array(address, list(shape), list(strides) if strides else [], dt.dl_code, dt.dl_bits, dev_type, dev_id,
                    owner, as_torch)


def _allocate(call, zero, shape, dtype, array_type, alignment, refused=None):
    _require(call)
    err = None
    dims, reason = shape_of(shape, call) if refused is None else (None, refused)
    if reason is not None:
        err = f'{call}: {reason}'
    dt = None
    try:
        dt = dtype_of(dtype, 'dtype', call)
    except ArgumentTypeError as e:
        err = err or str(e)
    type_error = err is not None and (reason is None or refused is not None)
    if array_type is None:
        array_type = 'torch' if _state.gpu else 'numpy'
    if array_type not in _ARRAY_TYPES:
        err, type_error = err or f'{call}: array_type = {array_type!r}; it must be "numpy" or "torch"', True
    elif array_type == 'numpy' and _state.gpu:
        err = err or (f'{call}: array_type = "numpy", but the {_state.backend} heap is GPU memory (cuda:'
                      f'{_state.device}): use torch tensors')
    elif array_type == 'numpy' and numpy is None:
        err = err or f'{call}: array_type = "numpy", but numpy is not installed'
    elif array_type == 'torch' and torch is None:
        err = err or f'{call}: array_type = "torch", but torch is not installed'
    elif array_type == 'numpy' and dt is not None and dt.name == 'bfloat16':
        err, type_error = err or f'{call}: numpy has no bfloat16: use array_type="torch"', True
    if alignment is not None and err is None:
        if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 or \
                alignment & (alignment - 1):
            err = f'{call}: alignment = {alignment!r} is not a power of two'
    if err is None:
        nbytes = dt.itemsize
        for d in dims:
            nbytes *= d
        desc = f'tshmem.{"zeros" if zero else "empty"}(shape={dims}, dtype={dt.name})'
    else:
        nbytes, desc = 0, f'{call}(shape={shape!r}, dtype={dtype!r})'
    kind = 2 if alignment is not None and err is None else (1 if zero else 0)
    try:
        address = _C.alloc(kind, nbytes, alignment or 0, desc, err)
    except AsymmetricError as e:
        raise AsymmetricAllocationError(str(e)) from None
    except InvalidArgumentError as e:
        if err is not None and type_error:
            raise ArgumentTypeError(str(e)) from None
        raise
    as_torch = array_type == 'torch'
    if nbytes == 0:  # nothing on the heap: an empty array of the same kind
        if as_torch:
            return torch.empty(dims, dtype=getattr(torch, dt.name),
                               device=f'cuda:{_state.device}' if _state.gpu else 'cpu')
        return numpy.empty(dims, dtype=dt.name)
    block = _Block(address, nbytes, desc, _caller())
    _state.blocks[address] = block
    if _state.scopes:
        _state.scopes[-1].append(block)
    array = _C.heap_view(address - _state.base, list(dims), dt, as_torch)
    block.array = weakref.ref(array)
    return array


def empty(shape, dtype='float32', *, array_type=None, alignment=None):
    """A symmetric array of `shape` and `dtype` on this PE's heap: a torch tensor on this PE's GPU (whatever the
    current device), or on the shm backend a numpy array (a CPU torch tensor with array_type="torch").
    Collective and checked: every PE must ask for the same shape and dtype in the same order, or every PE raises
    AsymmetricAllocationError naming the divergent PEs and both requests, with nothing allocated. Free it with
    tshmem.free (collective) or a tshmem.scope(); dropping the array frees nothing."""
    if array_type is None and alignment is None:
        t = _C.fast_empty(shape, dtype)
        if t is not _SLOW:
            return t
    return _allocate('tshmem.empty', False, shape, dtype, array_type, alignment)


def zeros(shape, dtype='float32', *, array_type=None):
    """As empty, zeroed on every PE before any PE returns."""
    if array_type is None:
        t = _C.fast_zeros(shape, dtype)
        if t is not _SLOW:
            return t
    return _allocate('tshmem.zeros', True, shape, dtype, array_type, None)


def _like(t, call, zero, array_type):
    """The allocation of t's shape and dtype (and array kind, unless array_type says otherwise)."""
    if is_torch(t):
        return _allocate(call, zero, tuple(t.shape), t.dtype, array_type or 'torch', None)
    if numpy is not None and isinstance(t, numpy.ndarray):
        return _allocate(call, zero, t.shape, t.dtype, array_type or 'numpy', None)
    return _allocate(call, zero, (), 'float32', array_type, None,
                     refused=f't is a {type(t).__name__}; it must be a torch.Tensor or a numpy.ndarray')


def empty_like(t, *, array_type=None):
    """empty(t.shape, t.dtype), as a tensor or array like t."""
    return _like(t, 'tshmem.empty_like', False, array_type)


def zeros_like(t, *, array_type=None):
    """zeros(t.shape, t.dtype), as a tensor or array like t."""
    return _like(t, 'tshmem.zeros_like', True, array_type)


def _release(block, call='tshmem.free', err=None):
    desc = f'tshmem.free({block.desc})' if block is not None else call
    try:
        _C.free(block.ptr if block is not None else 0, desc, err)
    except AsymmetricError as e:
        raise AsymmetricAllocationError(str(e)) from None
    if block is not None:
        del _state.blocks[block.ptr]


def free(t):
    """Frees the allocation that t is (the array empty/zeros returned). Collective and checked like empty: a
    PE whose t is not a live allocation makes every PE raise, with nothing freed anywhere."""
    if _C.fast_free(t) is not _SLOW:
        return
    call = 'tshmem.free'
    _require(call)
    err, block, type_error = None, None, False
    try:
        b = buf(t, 't', call)
    except ArgumentTypeError as e:
        err, type_error = str(e), True
    else:
        if b.nbytes == 0:
            return _release(None)  # an empty array: nothing on the heap, the collective still
        block = _state.blocks.get(b.ptr)
        if block is None:
            err = (f'{call}: t (data_ptr {b.ptr:#x}) is not a live allocation of tshmem.empty or tshmem.zeros '
                   '(freed already, a view inside one, or not from tshmem)')
        elif not block.is_array(t):
            err = (f'{call}: t (data_ptr {b.ptr:#x}, shape {tuple(b.shape)}) is a view of the allocation '
                   f'{block.desc}, not the array itself: free the array that call returned (a view of it would '
                   'leave that array over freed memory)')
            block = None
    try:
        _release(block, call, err)
    except InvalidArgumentError as e:
        if type_error and not isinstance(e, ArgumentTypeError):
            raise ArgumentTypeError(str(e)) from None
        raise


@contextlib.contextmanager
def scope():
    """``with tshmem.scope():`` frees, collectively and in reverse order, what was allocated inside it and not
    freed already, when the block ends (also when it raises)."""
    _require('tshmem.scope')
    mine = []
    _state.scopes.append(mine)
    try:
        yield
    finally:
        _state.scopes.remove(mine)
        for block in reversed(mine):
            if _state.live and _state.blocks.get(block.ptr) is block:
                _release(block)


# ---- views ---------------------------------------------------------------------------------------------------

def _prefixed(call, e):
    return type(e)(f'{call}: {e}')


def peer(t, pe):
    """A view of PE `pe`'s copy of the symmetric array t (same shape, dtype and strides), loaded and stored
    directly: PEs of this node only. peer(t, my_pe()) is a view of t itself. A PE out of range raises
    InvalidPEError; a PE of another node UnreachablePEError, saying why."""
    call = 'tshmem.peer'
    _require(call)
    b = buf(t, 't', call)
    pe = _pe_arg(pe, call)
    low, span = extent(t)
    try:
        address = _C.ptr_checked(low, max(span, 1), pe)  # checks the PE and that t lies on the heap
    except Error as e:
        raise _prefixed(f'{call}(t, {pe})', e) from None
    if pe == _state.me:
        return t[...]
    return _array(address + (b.ptr - low), b.shape, element_strides(t), b.dtype, t, is_torch(t))


def multicast(t, team=TEAM_NODE):
    """The multicast view of the symmetric array t for `team`: a store reaches every member's copy. Only where
    the multicast policy allows it; otherwise ConfigError naming the rule that forbids it."""
    call = 'tshmem.multicast'
    _require(call)
    b = buf(t, 't', call)
    low, span = extent(t)
    try:
        address = _C.mc_ptr_checked(_int_arg(team, 'team', call), low, max(span, 1))
    except Error as e:
        raise _prefixed(call, e) from None
    return _array(address + (b.ptr - low), b.shape, element_strides(t), b.dtype, t, is_torch(t))


def peer_ptrs(t):
    """The address of t's copy on every PE (0 where no load or store reaches it), as an int64 array of n_pes on
    the heap's device, for kernels that index peers themselves (Triton, CUDA)."""
    call = 'tshmem.peer_ptrs'
    _require(call)
    b = buf(t, 't', call)
    if not (_state.base <= b.ptr < _state.base + _state.size):
        raise invalid(call, f't (data_ptr {b.ptr:#x}) is not on the symmetric heap')
    offset = b.ptr - _state.base
    ptrs = [base + offset if base else 0 for base in _C.peer_bases()]
    if is_torch(t):
        return torch.tensor(ptrs, dtype=torch.int64, device=t.device)
    return numpy.array(ptrs, dtype=numpy.int64)


def mc_status():
    """'on', or why NVLink multicast is off in this job (None before init)."""
    return _C.mc_status()


# Used by _ops.
def _supported_reduce_dtypes():
    return [n for n, d in DTYPES.items() if d.reduce_code is not None]
