"""Peer and multicast views, peer_ptrs. Founding bug reports 2 and 3:
test_peer_of_n_pes_raises and test_peer_of_my_pe_aliases_t."""
import numpy as np
import pytest

import tshmem
from conftest import GPU, arr, host


def test_peer_of_n_pes_raises(pe):
    """Founding bug report 2: a PE one past the end."""
    me, n = pe
    t = tshmem.zeros(8)
    with pytest.raises(tshmem.InvalidPEError, match=rf'tshmem.peer\(t, {n}\).*PE {n} out of range \[0, {n}\)'):
        tshmem.peer(t, n)
    with pytest.raises(tshmem.InvalidPEError):
        tshmem.peer(t, -1)
    with pytest.raises(tshmem.ArgumentTypeError, match='pe = 1.5 is not an int'):
        tshmem.peer(t, 1.5)
    tshmem.free(t)


def test_peer_of_my_pe_aliases_t(pe):
    """Founding bug report 3: the own slot of the peer table is t itself."""
    me, n = pe
    t = tshmem.zeros((2, 4), 'int32')
    v = tshmem.peer(t, me)
    assert tuple(v.shape) == (2, 4)
    if GPU:
        assert v.data_ptr() == t.data_ptr()
    else:
        assert v.__array_interface__['data'][0] == t.__array_interface__['data'][0] and np.shares_memory(v, t)
    v[1, 2] = 7
    assert host(t)[1, 2] == 7
    tshmem.free(t)


def test_peers_load_and_store_each_other(pe):
    me, n = pe
    t = tshmem.zeros((n, 3), 'float64')
    for p in range(n):  # my row in every PE's copy, by store
        view = tshmem.peer(t, p)
        view[me] = arr([me, me + 0.5, -me], 'float64')
    tshmem.barrier_all(blocking=True)
    expect = np.array([[p, p + 0.5, -p] for p in range(n)])
    np.testing.assert_array_equal(host(t), expect)
    strided = tshmem.peer(t[:, ::2], (me + 1) % n)  # a strided view keeps its strides
    np.testing.assert_array_equal(host(strided), expect[:, ::2])
    tshmem.barrier_all(blocking=True)
    tshmem.free(t)


def test_peer_of_memory_off_the_heap_is_refused(pe):
    local = arr([1.0, 2.0])
    with pytest.raises(tshmem.InvalidArgumentError, match='not inside the symmetric heap'):
        tshmem.peer(local, 0)
    with pytest.raises(tshmem.ArgumentTypeError, match='must be a torch.Tensor or a numpy.ndarray'):
        tshmem.peer([1, 2], 0)


def test_peer_ptrs_lists_every_pes_copy(pe):
    me, n = pe
    t = tshmem.zeros(16, 'uint8')
    ptrs = tshmem.peer_ptrs(t)
    assert str(ptrs.dtype).endswith('int64') and tuple(ptrs.shape) == (n,)
    values = host(ptrs)
    assert values[me] == (t.data_ptr() if GPU else t.__array_interface__['data'][0])
    assert all(v != 0 for v in values)  # one node: every copy is mapped
    for p in range(n):
        view = tshmem.peer(t, p)
        assert values[p] == (view.data_ptr() if GPU else view.__array_interface__['data'][0])
    tshmem.free(t)


def test_multicast_names_the_rule_that_forbids_it(pe):
    t = tshmem.zeros(32)
    with pytest.raises(tshmem.ConfigError, match='tshmem.multicast: .*multicast is off'):
        tshmem.multicast(t)
    assert tshmem.mc_status() != 'on'
    tshmem.free(t)
