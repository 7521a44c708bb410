"""Checked symmetric allocation: shapes and dtypes compared across PEs, refusals that fail every PE, free, scope,
garbage collection that runs no collective. The first founding bug report is
test_private_scratch_before_the_shared_buffer_fails_on_every_pe."""
import gc

import numpy as np
import pytest

import tshmem
from conftest import GPU, allgather, arr, host, needs, same_everywhere

KIND = 'torch' if GPU else 'numpy'


def offset(a):
    return int(host(tshmem.peer_ptrs(a))[tshmem.my_pe()]) - tshmem._runtime._state.base


def next_offset():
    """Where the next block of 1 KiB would go, the same on every PE (asserted)."""
    with tshmem.scope():
        probe = tshmem.empty(256)
        where = offset(probe)
    assert len(set(allgather(where))) == 1
    return where


def test_arrays_of_every_shape_and_dtype(pe):
    for shape, dtype in (((4, 8), 'float32'), (7, 'int64'), ((2, 3, 5), 'uint8'), ((3,), 'bool'), ((16,), 'float16'),
                         ((), 'int32'), ((5, 1), np.float64), ((2,), np.dtype('int16'))):
        x = tshmem.zeros(shape, dtype)
        assert type(x).__module__.split('.')[0] == KIND
        expect = (shape,) if isinstance(shape, int) else shape
        assert tuple(x.shape) == expect and str(x.dtype).endswith(np.dtype(dtype).name)
        assert not host(x).any()
        assert len(set(allgather(offset(x)))) == 1  # the same offset on every PE
        tshmem.free(x)
    y = tshmem.empty_like(np.zeros((3, 2), np.int32)) if not GPU else tshmem.empty((3, 2), 'int32')
    z = tshmem.zeros_like(y)
    assert tuple(z.shape) == (3, 2) and not host(z).any()
    tshmem.free(z)
    tshmem.free(y)
    e = tshmem.empty(0)  # nothing on the heap, still collective
    assert host(e).size == 0
    tshmem.free(e)
    assert tshmem.unfreed() == []


def test_private_scratch_before_the_shared_buffer_fails_on_every_pe(pe):
    """Founding bug report 1: PE 1 allocates a private scratch buffer before the shared one."""
    me, n = pe
    needs(2)
    before = next_offset()
    with pytest.raises(tshmem.AsymmetricAllocationError) as info:
        if me == 1:
            tshmem.empty(16, 'float32')  # private scratch
        else:
            tshmem.empty((1024,), 'float32')  # the shared buffer
    message = str(info.value)
    assert 'divergent PE 1.' in message
    assert 'tshmem.empty(shape=(16,), dtype=float32): tshmem_malloc(size=64)' in message
    assert 'tshmem.empty(shape=(1024,), dtype=float32): tshmem_malloc(size=4096)' in message
    assert 'nothing was allocated' in message
    assert same_everywhere(message)
    assert tshmem.unfreed() == [] and next_offset() == before  # nothing allocated anywhere


def test_same_bytes_in_another_shape_or_dtype_is_asymmetric(pe):
    me, n = pe
    needs(2)
    with pytest.raises(tshmem.AsymmetricAllocationError, match=r'divergent PE 1\.') as info:
        if me == 1:
            tshmem.empty((8,), 'int32')
        else:
            tshmem.empty((4, 2), 'float32')
    assert 'shape=(8,), dtype=int32' in str(info.value) and 'shape=(4, 2), dtype=float32' in str(info.value)
    assert same_everywhere(str(info.value))
    with pytest.raises(tshmem.AsymmetricAllocationError, match='tshmem_calloc'):
        (tshmem.zeros if me == 0 else tshmem.empty)(8)  # calloc against malloc


def test_a_refused_argument_fails_every_pe(pe):
    me, n = pe
    # Refused everywhere: the argument's own kind of error, on every PE, nothing allocated.
    with pytest.raises(tshmem.ArgumentTypeError, match="dtype = 'no-such-type' is not a supported dtype"):
        tshmem.empty(4, 'no-such-type')
    with pytest.raises(tshmem.InvalidArgumentError, match=r'shape\[1\] = -2 < 0'):
        tshmem.empty((3, -2))
    with pytest.raises(tshmem.InvalidArgumentError, match='alignment = 3 is not a power of two'):
        tshmem.empty(4, alignment=3)
    with pytest.raises(tshmem.ArgumentTypeError, match='t is a list; it must be a torch.Tensor or a numpy.ndarray'):
        tshmem.zeros_like([1, 2])
    if not GPU:
        with pytest.raises(tshmem.ArgumentTypeError, match='numpy has no bfloat16'):
            tshmem.empty(4, 'bfloat16')
    needs(2)
    # Refused on the last PE only: the others' calls are valid, so the calls differ; that PE and why are named.
    with pytest.raises(tshmem.AsymmetricAllocationError) as info:
        tshmem.zeros(4, object if me == n - 1 else 'float32')
    assert f'divergent PE {n - 1}.' in str(info.value) and 'is not a supported dtype' in str(info.value)
    assert same_everywhere(str(info.value))
    assert tshmem.unfreed() == []


def test_aligned_allocation(pe):
    x = tshmem.empty(3, 'int8', alignment=1 << 16)
    assert offset(x) % (1 << 16) == 0
    tshmem.free(x)


def test_free_is_collective_and_checked(pe):
    me, n = pe
    before = next_offset()
    x = tshmem.empty(100)
    tshmem.free(x)
    assert next_offset() == before  # the block is reusable
    with pytest.raises(tshmem.InvalidArgumentError, match='not a live allocation'):
        tshmem.free(x)  # twice, on every PE
    y = tshmem.empty((4, 4))
    with pytest.raises(tshmem.InvalidArgumentError, match='not a live allocation'):
        tshmem.free(y[1:])  # a view inside one
    with pytest.raises(tshmem.ArgumentTypeError, match='must be a torch.Tensor or a numpy.ndarray'):
        tshmem.free([1, 2])
    if n > 1:  # refused on one PE only: nothing freed anywhere
        with pytest.raises(tshmem.AsymmetricAllocationError, match='divergent PE 0'):
            tshmem.free(np.zeros(3) if me == 0 else y)
        assert len(tshmem.unfreed()) == 1
    tshmem.free(y)
    assert tshmem.unfreed() == []


def test_a_view_at_offset_zero_is_not_the_allocation(pe):
    """Views that start where the allocation starts (a[:2], a.T, a reshape, another dtype) are refused on every PE,
    whatever path takes the call; the allocation itself is then freed."""
    a = tshmem.zeros((4, 4), 'float32')
    views = (lambda: a[:2], lambda: a.T, lambda: a.reshape(16), lambda: a.reshape(2, 8), lambda: a[...])
    if not GPU:
        views += (lambda: a.view(np.int32),)
    for view in views:
        with pytest.raises(tshmem.InvalidArgumentError, match='is a view of the allocation'):
            tshmem.free(view())
        assert len(tshmem.unfreed()) == 1  # nothing freed anywhere
    tshmem.free(a)
    assert tshmem.unfreed() == []


def test_puts_into_freed_arrays_are_refused(pe):
    me, n = pe
    src = arr([1.0] * 8) if not GPU else None
    if GPU:
        pytest.skip('host arrays: the shm heap')
    x = tshmem.zeros(8)
    tshmem.free(x)
    with pytest.raises(tshmem.InvalidArgumentError, match='not inside a live allocation'):
        tshmem.put(x, src, (me + 1) % n)
    with pytest.raises(tshmem.InvalidArgumentError, match='not inside a live allocation'):
        tshmem.put(x[2:6], src[:4], me)  # a view of it: the slow path, the same refusal
    with tshmem.scope():
        y = tshmem.zeros(8)
        tshmem.put(y, src, me)
    with pytest.raises(tshmem.InvalidArgumentError, match='not inside a live allocation'):
        tshmem.put(y, src, me)
    with pytest.raises(tshmem.InvalidArgumentError, match='not inside a live allocation'):
        tshmem.all_reduce(y)


def test_scope_frees_what_it_allocated(pe):
    before = next_offset()
    with tshmem.scope():
        a = tshmem.empty(10)
        with tshmem.scope():
            tshmem.empty(20)
            assert len(tshmem.unfreed()) == 2
        assert len(tshmem.unfreed()) == 1
        tshmem.free(a)  # freed already: the scope skips it
        tshmem.zeros(5)
    assert tshmem.unfreed() == [] and next_offset() == before
    with pytest.raises(KeyError):
        with tshmem.scope():
            tshmem.empty(7)
            raise KeyError('the body failed')
    assert tshmem.unfreed() == []


def test_dropping_the_last_reference_runs_no_collective(pe):
    me, n = pe
    held = {'x': tshmem.empty(64)}
    if me == 0:
        del held['x']  # the last reference
        gc.collect()
    tshmem.barrier_all(blocking=True)  # PE 0 ran nothing collective meanwhile: the barrier meets
    listed = tshmem.unfreed()
    assert len(listed) == 1 and listed[0].startswith('tshmem.empty(shape=(64,), dtype=float32) from test_alloc.py:')
    assert same_everywhere(listed)
    for b in list(tshmem._runtime._state.blocks.values()):  # release it (the test's own bookkeeping)
        tshmem._runtime._release(b)


def test_exhaustion_fails_every_pe(pe):
    with pytest.raises(tshmem.OutOfMemoryError, match='exhausted'):
        tshmem.empty(1 << 40, 'uint8')
    assert tshmem.unfreed() == []
