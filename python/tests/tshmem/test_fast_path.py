"""_C's fast path (python/src/fast_path.cc): the plain case of put, get, barrier_all, all_reduce, empty, zeros and
free is issued in C++; everything else is left to the Python layer (tshmem._C.SLOW), which explains refusals.
These tests pin both halves: the plain case really is taken (and gives what the Python layer gives), and each kind
of argument the Python layer must look at is left to it, with the Python layer's message."""
import numpy as np
import pytest

import tshmem
from tshmem import _C

from conftest import GPU, torch

SLOW = _C.SLOW


def host_array(shape, dtype):
    return np.zeros(shape, dtype) if not GPU else torch.zeros(shape, dtype=getattr(torch, dtype),
                                                               device=f'cuda:{tshmem.device()}')


def test_plain_calls_take_the_fast_path(pe):
    me, n = pe
    x = _C.fast_zeros((4, 2), 'int32')
    assert x is not SLOW and tuple(x.shape) == (4, 2) and str(x.dtype).endswith('int32')
    src = host_array((4, 2), 'int32')
    src[:] = me + 1
    assert _C.fast_put(x, src, (me + 1) % n, None, True) is None
    assert _C.fast_barrier_all(None, True) is None
    back = host_array((4, 2), 'int32')
    assert _C.fast_get(back, x, me, None, True) is None
    assert int(back[3][1]) == (me - 1) % n + 1
    assert _C.fast_free(x) is None
    assert tshmem.unfreed() == []


def test_the_fast_and_the_python_allocation_give_the_same_array(pe):
    fast = tshmem.empty((3, 5), 'float64')  # the fast path
    kind = 'torch' if GPU else 'numpy'
    slow = tshmem.empty((3, 5), 'float64', array_type=kind)  # array_type given: the Python layer
    assert type(fast) is type(slow)
    assert tuple(fast.shape) == tuple(slow.shape) and fast.dtype == slow.dtype
    if GPU:
        assert fast.stride() == slow.stride()
    else:
        assert fast.strides == slow.strides
    listed = tshmem.unfreed()
    assert listed[-2] == 'tshmem.empty(shape=(3, 5), dtype=float64) from test_fast_path.py:37'
    assert listed[-1] == 'tshmem.empty(shape=(3, 5), dtype=float64) from test_fast_path.py:39'
    tshmem.free(slow)
    tshmem.free(fast)


def test_arguments_the_python_layer_must_look_at_are_left_to_it(pe):
    me, n = pe
    x = tshmem.zeros(8, 'float32')
    src = host_array(8, 'float32')
    assert _C.fast_put(x[::2], src[:4], me, None, False) is SLOW  # a strided view
    assert _C.fast_put(x, src[:4], me, None, False) is SLOW  # sizes differ
    assert _C.fast_put(x, host_array(8, 'int32'), me, None, False) is SLOW  # dtypes differ
    assert _C.fast_put(x, src, True, None, False) is SLOW  # a bool is not a PE
    assert _C.fast_put(x, src, 2**40, None, False) is SLOW  # no such int
    assert _C.fast_put(src, x, me, None, False) is SLOW  # dst off the heap
    assert _C.fast_put(x, [0.0] * 8, me, None, False) is SLOW  # not an array
    assert _C.fast_empty(-1, 'float32') is SLOW
    assert _C.fast_empty((2, '3'), 'float32') is SLOW
    assert _C.fast_empty(2, 'complex64') is SLOW
    assert _C.fast_empty(2, ['float32']) is SLOW  # unhashable
    assert _C.fast_free(src) is SLOW  # not an allocation
    assert _C.fast_free(x[1:]) is SLOW  # inside one
    if not GPU:
        assert _C.fast_put(x, src, me, 7, False) is SLOW  # a stream on the host heap
        assert _C.fast_all_reduce(x, None, 'sum', 0, None, False) is SLOW  # no collectives on the host heap
    else:
        assert _C.fast_all_reduce(x, None, 'xor', 0, None, False) is SLOW  # xor of floats
        assert _C.fast_put(x, src, me, torch.cuda.current_stream(), False) is SLOW  # a stream object
    with pytest.raises(tshmem.ArgumentTypeError, match=r'tshmem.put: dst is float32 and src is int32; they must match'):
        tshmem.put(x, host_array(8, 'int32'), me)
    with pytest.raises(tshmem.InvalidArgumentError, match=r'tshmem.put: dst has 8 elements and src 4'):
        tshmem.put(x, src[:4], me)
    with pytest.raises(tshmem.ArgumentTypeError, match=r'tshmem.put: pe = True is not an int'):
        tshmem.put(x, src, True)
    with pytest.raises(tshmem.InvalidPEError):
        tshmem.put(x, src, n)  # the library's own check, through the fast path
    tshmem.free(x)


def test_a_refused_fast_free_fails_every_pe_alike(pe):
    me, n = pe
    a = tshmem.empty(4, 'int64')
    b = tshmem.empty(4, 'int64')
    if n > 1:  # PE 0 frees b, the others a: every PE refuses, nothing is freed
        with pytest.raises(tshmem.AsymmetricAllocationError, match='tshmem.free'):
            tshmem.free(b if me == 0 else a)
        assert len(tshmem.unfreed()) == 2
    tshmem.free(b)
    tshmem.free(a)
    assert tshmem.unfreed() == []


def test_a_read_only_destination_is_refused_not_written(pe):
    if GPU:
        pytest.skip('torch tensors have no read-only flag; this is about numpy arrays (the host heap)')
    me, n = pe
    x = tshmem.zeros(4, 'int64')
    frozen = np.frombuffer(bytes(32), dtype=np.int64)  # the memory of an immutable bytes object
    assert _C.fast_get(frozen, x, me, None, False) is SLOW
    with pytest.raises(tshmem.InvalidArgumentError, match=r'tshmem.get: dst is read-only'):
        tshmem.get(frozen, x, me)
    assert bytes(frozen) == bytes(32)
    x.flags.writeable = False
    with pytest.raises(tshmem.InvalidArgumentError, match=r'tshmem.put: dst is read-only'):
        tshmem.put(x, np.ones(4, np.int64), (me + 1) % n)
    x.flags.writeable = True
    tshmem.put(x, np.ones(4, np.int64), (me + 1) % n)
    tshmem.barrier_all()
    assert int(x[3]) == 1
    tshmem.free(x)
