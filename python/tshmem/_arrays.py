"""Element types and what the package reads from an array: one table of dtypes (DLPack codes for making arrays,
tshmemx_dtype_t codes for reductions), and the address, size, device and layout of a numpy array or a torch
tensor, read through their attributes (the extension links neither numpy nor libtorch)."""

from collections import namedtuple

from . import _C
from ._errors import ArgumentTypeError, InvalidArgumentError

try:  # optional: without torch, numpy arrays on the shm backend (how CI tests the package)
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None
try:
    import numpy
except ImportError:  # pragma: no cover
    numpy = None

# DLPack type codes.
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6

DType = namedtuple('DType', 'name itemsize dl_code dl_bits reduce_code')

# name -> (bytes, DLPack code, tshmemx_dtype_t of the reductions or None)
_TABLE = {
    'bool': (1, _BOOL, None), 'int8': (1, _INT, None), 'uint8': (1, _UINT, None), 'int16': (2, _INT, None),
    'uint16': (2, _UINT, None), 'int32': (4, _INT, 3), 'uint32': (4, _UINT, 6), 'int64': (8, _INT, 4),
    'uint64': (8, _UINT, 7), 'float16': (2, _FLOAT, 1), 'bfloat16': (2, _BFLOAT, 2), 'float32': (4, _FLOAT, 0),
    'float64': (8, _FLOAT, 5),
}
DTYPES = {name: DType(name, size, code, 8 * size, red) for name, (size, code, red) in _TABLE.items()}
_ALIASES = {'float': 'float32', 'double': 'float64', 'half': 'float16', 'long': 'int64', 'int': 'int32',
            'bool_': 'bool'}


_DTYPE_CACHE = {}


def dtype_of(value, arg, call):
    """The DType named by a torch.dtype, a numpy dtype (or type) or a string; ArgumentTypeError otherwise."""
    try:
        return _DTYPE_CACHE[value]
    except (KeyError, TypeError):
        pass
    name = None
    if isinstance(value, str):
        name = value
    elif torch is not None and isinstance(value, torch.dtype):
        name = str(value).rpartition('.')[2]
    elif numpy is not None:
        try:
            name = numpy.dtype(value).name
        except TypeError:
            name = None
    name = _ALIASES.get(name, name)
    if name not in DTYPES:
        raise ArgumentTypeError(f'{call}: {arg} = {value!r} is not a supported dtype (supported: '
                                f'{", ".join(DTYPES)})')
    try:
        _DTYPE_CACHE[value] = DTYPES[name]
    except TypeError:  # unhashable: not cached
        pass
    return DTYPES[name]


def torch_dtype(dt):
    return getattr(torch, dt.name)


Buf = namedtuple('Buf', 'ptr nbytes numel dtype device index contiguous shape')
"""What a call needs of an array: address, bytes, elements, DType, device ('cpu' or 'cuda'), CUDA index (-1 on
the CPU), whether it is contiguous, and its shape."""


def describe(obj):
    return f'{type(obj).__module__}.{type(obj).__qualname__}'


_ARRAY_DTYPES = {}  # a numpy or torch dtype object -> DType (None: not handled)


def _array_dtype(dtype):
    try:
        return _ARRAY_DTYPES[dtype]
    except KeyError:
        name = str(dtype).rpartition('.')[2]
        dt = _ARRAY_DTYPES[dtype] = DTYPES.get(_ALIASES.get(name, name))
        return dt


def buf(obj, arg, call):
    """Reads an array argument; ArgumentTypeError for anything that is neither a torch tensor nor a numpy array."""
    if torch is not None and isinstance(obj, torch.Tensor):
        dt = _array_dtype(obj.dtype)
        if dt is None:
            raise ArgumentTypeError(f'{call}: {arg} has dtype {obj.dtype}, which tshmem does not handle')
        dev = obj.device
        numel = obj.numel()
        return Buf(obj.data_ptr(), numel * dt.itemsize, numel, dt, dev.type, -1 if dev.index is None else dev.index,
                   obj.is_contiguous(), obj.shape)
    if numpy is not None and isinstance(obj, numpy.ndarray):
        dt = _array_dtype(obj.dtype)
        if dt is None:
            raise ArgumentTypeError(f'{call}: {arg} has dtype {obj.dtype}, which tshmem does not handle')
        address, nbytes, contiguous = _C.buffer_info(obj)
        return Buf(address, nbytes, obj.size, dt, 'cpu', -1, contiguous, obj.shape)
    raise ArgumentTypeError(f'{call}: {arg} is a {describe(obj)}; it must be a torch.Tensor or a numpy.ndarray')


def extent(obj):
    """(lowest address, bytes spanned) of an array or strided view: what a peer or multicast view must cover."""
    if torch is not None and isinstance(obj, torch.Tensor):
        item = obj.element_size()
        if obj.numel() == 0:
            return obj.data_ptr(), 0
        low = sum((n - 1) * s for n, s in zip(obj.shape, obj.stride()) if s < 0)
        high = sum((n - 1) * s for n, s in zip(obj.shape, obj.stride()) if s > 0)
        return obj.data_ptr() + low * item, (high - low + 1) * item
    item = obj.itemsize
    if obj.size == 0:
        return obj.__array_interface__['data'][0], 0
    low = sum((n - 1) * s for n, s in zip(obj.shape, obj.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(obj.shape, obj.strides) if s > 0)
    return obj.__array_interface__['data'][0] + low, high - low + item


def element_strides(obj):
    """Strides in elements (DLPack's unit)."""
    if torch is not None and isinstance(obj, torch.Tensor):
        return list(obj.stride())
    return [s // obj.itemsize for s in obj.strides]


def is_torch(obj):
    return torch is not None and isinstance(obj, torch.Tensor)


def shape_of(shape, call):
    """A shape from an int or a sequence of ints, each >= 0; (tuple, None) or (None, reason)."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        return None, f'shape = {shape!r} is neither an int nor a sequence of ints'
    for i, d in enumerate(dims):
        if isinstance(d, bool) or not hasattr(d, '__index__'):
            return None, f'shape[{i}] = {d!r} is not an int'
        if d.__index__() < 0:
            return None, f'shape[{i}] = {d} < 0'
    return tuple(d.__index__() for d in dims), None


def invalid(call, message):
    return InvalidArgumentError(f'{call}: {message}')
