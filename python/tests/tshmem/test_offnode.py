"""Across nodes (TSHMEM_DEBUG_NODE_SIZE=1: every PE a node of its own) on each remote transport: put, get and
put_signal, blocking and on a stream, reach the PEs of other nodes."""
import pytest

import tshmem
from conftest import GPU, SIZE, arr, host

try:
    import torch
except ImportError:
    torch = None


@pytest.fixture(params=['mpi', 'ucx', 'ucx-staged'])
def offnode(request, monkeypatch):
    """tshmem initialised with every PE on a node of its own, over the transport named; yields (my_pe, n_pes).
    ucx-staged: UCX carrying the staged protocol, which a GPU heap without GPUDirect takes, on any heap."""
    if SIZE < 2:
        pytest.skip('needs 2 PEs to make 2 nodes')
    monkeypatch.setenv('TSHMEM_DEBUG_NODE_SIZE', '1')
    monkeypatch.setenv('TSHMEM_REMOTE_TRANSPORT', request.param.split('-')[0])
    if request.param == 'ucx-staged':
        monkeypatch.setenv('TSHMEM_DEBUG_UCX_STAGED', '1')
    try:
        tshmem.init()
    except tshmem.ConfigError as e:  # the same on every PE: init agrees
        if request.param.startswith('ucx') and 'cannot reach other nodes' in str(e):
            pytest.skip(f'this build has no ucx transport: {e}')
        raise
    yield tshmem.my_pe(), tshmem.n_pes()
    tshmem.finalize()


def test_put_get_cross_nodes(offnode):
    me, n = offnode
    nxt, prv = (me + 1) % n, (me - 1) % n
    x = tshmem.zeros(6, 'int64')
    tshmem.put(x, arr([me * 10 + i for i in range(6)], 'int64'), nxt, blocking=True)
    tshmem.barrier_all(blocking=True)
    assert list(host(x)) == [prv * 10 + i for i in range(6)]
    got = arr([0] * 6, 'int64')
    tshmem.get(got, x, nxt, blocking=True)
    assert list(host(got)) == [me * 10 + i for i in range(6)]
    tshmem.barrier_all(blocking=True)
    tshmem.free(x)


def test_put_signal_crosses_nodes(offnode):
    me, n = offnode
    nxt, prv = (me + 1) % n, (me - 1) % n
    data = tshmem.zeros(8, 'int32')
    sig = tshmem.zeros(3, 'uint64')
    tshmem.put_signal(data, arr(list(range(me, me + 8)), 'int32'), sig, 5, tshmem.SIGNAL_SET, nxt, blocking=True)
    assert tshmem.signal_wait_until(sig, tshmem.CMP_EQ, 5, timeout=30, blocking=True) == 5
    assert list(host(data)) == list(range(prv, prv + 8))  # the data came before the signal
    tshmem.barrier_all(blocking=True)
    tshmem.put_signal(data[:0], arr([], 'int32'), sig[1:], 1, 'add', 0, blocking=True)  # from every PE
    if me == 0:
        assert tshmem.signal_wait_until(sig[1:], '>=', n, timeout=30, blocking=True) == n
    tshmem.barrier_all(blocking=True)
    if GPU and torch is not None:  # stream-ordered: after the work queued before it
        stream = torch.cuda.current_stream()
        tshmem.put_signal(data, arr(list(range(me + 1, me + 9)), 'int32'), sig[2:], 7, tshmem.SIGNAL_SET, nxt,
                          stream=stream)
        stream.synchronize()
        assert tshmem.signal_wait_until(sig[2:], tshmem.CMP_EQ, 7, timeout=30, blocking=True) == 7
        assert list(host(data)) == list(range(prv + 1, prv + 9))
        tshmem.barrier_all(blocking=True)
    tshmem.free(sig)
    tshmem.free(data)
