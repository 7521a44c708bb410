"""init/finalize under mpirun and over a group's collectives, the finalize listing, torchrun detection."""
import gc
import os
import warnings

import numpy as np
import pytest

import tshmem
from conftest import GPU, SIZE, TORCHRUN, allgather, arr, close_group, file_group, host, same_everywhere


def test_init_queries_finalize():
    tshmem.init()
    try:
        me, n = tshmem.my_pe(), tshmem.n_pes()
        assert n == SIZE and 0 <= me < n
        assert tshmem.team_n_pes(tshmem.TEAM_WORLD) == n and tshmem.team_my_pe(tshmem.TEAM_WORLD) == me
        assert tshmem.team_n_pes(tshmem.TEAM_NODE) == tshmem.local_n_pes() == n
        assert (tshmem.backend() == 'shm') != GPU and (tshmem.device() >= 0) == GPU
        with pytest.raises(tshmem.InvalidArgumentError, match='already initialised'):
            tshmem.init()
    finally:
        tshmem.finalize()
    assert tshmem.my_pe() == -1


def test_an_array_read_after_finalize_reads_zeros():
    """The shm heap leaves zero pages behind at finalize: an array still held reads zeros (and takes writes)
    instead of crashing the interpreter."""
    if GPU:
        pytest.skip('the shm heap')
    tshmem.init()
    x = tshmem.zeros(1 << 16, 'int64')
    x[:] = 7
    view = x[10:20]
    _finalize_quietly()  # x was never freed: listed in a warning
    assert int(x.sum()) == 0 and int(view.sum()) == 0
    x[:] = 3
    assert int(x[5]) == 3


def _finalize_quietly():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        tshmem.finalize()


def test_initialized_context_manager():
    with tshmem.initialized() as ts:
        assert ts is tshmem and tshmem.is_initialized()
        x = tshmem.zeros(3)
        tshmem.free(x)
    assert not tshmem.is_initialized()


def test_finalize_lists_what_was_never_freed_in_allocation_order_on_every_pe():
    tshmem.init()
    held = {'kept': tshmem.empty((2, 3), 'int32'), 'freed': tshmem.empty(8), 'dropped': tshmem.zeros(5, 'float64')}
    tshmem.free(held.pop('freed'))
    if tshmem.my_pe() == 0:  # garbage collection differs across PEs: no collective runs from it
        del held['dropped']  # the last reference
        gc.collect()
    listed = tshmem.unfreed()
    assert len(listed) == 2
    assert listed[0].startswith('tshmem.empty(shape=(2, 3), dtype=int32) from test_lifecycle.py:')
    assert listed[1].startswith('tshmem.zeros(shape=(5,), dtype=float64) from test_lifecycle.py:')
    assert same_everywhere(listed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        tshmem.finalize()
    unfreed = [w for w in caught if issubclass(w.category, tshmem.UnfreedWarning)]
    assert len(unfreed) == 1
    message = str(unfreed[0].message)
    assert '2 symmetric allocation(s) never freed, released now' in message
    assert all(item in message for item in listed)
    assert tshmem.unfreed() == []


def test_init_over_a_groups_collectives():
    group = file_group('init')
    tshmem.init(group=group)
    try:
        me, n = tshmem.my_pe(), tshmem.n_pes()
        assert (me, n) == (group.rank, group.size)
        inbox = tshmem.zeros(n, 'int64')
        for p in range(n):
            tshmem.put(inbox[me:me + 1], arr([100 + me], 'int64'), p)
        tshmem.barrier_all()
        assert list(host(inbox)) == [100 + p for p in range(n)]
        if n > 1:  # the symmetry check runs over the group too
            with pytest.raises(tshmem.AsymmetricAllocationError, match='divergent PE 1'):
                tshmem.empty(16 if me == 1 else 32)
        tshmem.free(inbox)
        assert group.seq > 0
    finally:
        tshmem.finalize()
        close_group(group)


def test_over_a_group_other_nodes_are_unreachable_saying_why():
    group = file_group('nodes')
    needs_two = group.size < 2
    os.environ['TSHMEM_DEBUG_NODE_SIZE'] = '1'  # every PE a node of its own
    try:
        tshmem.init(group=group)
    finally:
        del os.environ['TSHMEM_DEBUG_NODE_SIZE']
    try:
        if needs_two:
            pytest.skip('needs 2 PEs')
        me, n = tshmem.my_pe(), tshmem.n_pes()
        other = (me + 1) % n
        assert tshmem.local_n_pes() == 1 and tshmem.team_n_pes(tshmem.TEAM_NODE) == 1
        x = tshmem.zeros(4, 'int32')
        with pytest.raises(tshmem.UnreachablePEError, match='is on another node.*tshmemx_init_callbacks'):
            tshmem.peer(x, other)
        with pytest.raises(tshmem.UnreachablePEError, match='tshmemx_init_callbacks'):
            tshmem.put(x, arr([1, 2, 3, 4], 'int32'), other)
        ptrs = host(tshmem.peer_ptrs(x))
        assert ptrs[other] == 0 and ptrs[me] != 0
        tshmem.put(x, arr([1, 2, 3, 4], 'int32'), me)
        assert list(host(x)) == [1, 2, 3, 4]
        tshmem.free(x)
    finally:
        tshmem.finalize()
        close_group(group)


@pytest.mark.skipif(TORCHRUN, reason='torch.distributed is initialised here')
def test_under_torchrun_without_torch_distributed_init_says_what_to_do(monkeypatch):
    for var in list(os.environ):
        if var.startswith(('OMPI_', 'PMI', 'PMIX_', 'SLURM_')):
            monkeypatch.delenv(var)
    monkeypatch.setenv('TORCHELASTIC_RUN_ID', 'test')
    monkeypatch.setenv('LOCAL_RANK', '0')
    monkeypatch.setenv('WORLD_SIZE', '2')
    with pytest.raises(tshmem.ConfigError, match='torch.distributed is not initialised'):
        tshmem.init()
    assert not tshmem.is_initialized()


def test_a_bad_group_is_a_type_error():
    with pytest.raises(tshmem.ArgumentTypeError, match='group is a object without rank'):
        tshmem.init(group=object())
    assert not tshmem.is_initialized()


def test_the_same_offsets_after_reinit():
    tshmem.init()
    x = tshmem.empty(10)
    offset = tshmem.peer_ptrs(x)[tshmem.my_pe()] - tshmem._runtime._state.base
    assert len(set(allgather(int(offset)))) == 1
    tshmem.free(x)
    tshmem.finalize()
    np.testing.assert_equal(tshmem.unfreed(), [])
