"""put/get, put_signal and signal waits, ordering, teams and collectives; argument mistakes raise before anything
is launched, naming the argument."""
import pytest

import tshmem
from conftest import GPU, arr, host, same_everywhere


def test_put_get_ring(pe):
    me, n = pe
    nxt, prv = (me + 1) % n, (me - 1) % n
    x = tshmem.zeros(6, 'int64')
    tshmem.put(x, arr([me * 10 + i for i in range(6)], 'int64'), nxt, blocking=True)
    tshmem.barrier_all(blocking=True)
    assert list(host(x)) == [prv * 10 + i for i in range(6)]
    got = arr([0] * 6, 'int64')
    tshmem.get(got, x, nxt, blocking=True)
    assert list(host(got)) == [me * 10 + i for i in range(6)]
    tshmem.quiet(blocking=True)
    tshmem.fence(blocking=True)
    tshmem.barrier_all(blocking=True)
    tshmem.free(x)


def test_rma_argument_mistakes_name_the_argument(pe):
    me, n = pe
    x = tshmem.zeros((4, 4), 'float32')
    ok = arr([[0.0] * 4] * 4)
    with pytest.raises(tshmem.InvalidArgumentError, match='dst .* is not on the symmetric heap'):
        tshmem.put(arr([0.0] * 16), ok.reshape(16), 0, blocking=True)
    with pytest.raises(tshmem.InvalidArgumentError, match='dst is not contiguous'):
        tshmem.put(x[:, ::2], arr([[0.0] * 2] * 4), 0, blocking=True)
    with pytest.raises(tshmem.ArgumentTypeError, match='dst is float32 and src is int32'):
        tshmem.put(x, arr([[0] * 4] * 4, 'int32'), 0, blocking=True)
    with pytest.raises(tshmem.InvalidArgumentError, match='dst has 16 elements and src 4'):
        tshmem.put(x, arr([0.0] * 4), 0, blocking=True)
    with pytest.raises(tshmem.ArgumentTypeError, match='src is a builtins.list'):
        tshmem.put(x, [0.0] * 16, 0, blocking=True)
    with pytest.raises(tshmem.InvalidPEError, match=f'PE {n} out of range'):
        tshmem.put(x, ok, n, blocking=True)
    if not GPU:
        with pytest.raises(tshmem.InvalidArgumentError, match='host memory: calls are host-blocking and take no'):
            tshmem.put(x, ok, 0, stream=0)
    tshmem.free(x)


def test_put_signal_and_wait(pe):
    me, n = pe
    nxt, prv = (me + 1) % n, (me - 1) % n
    data = tshmem.zeros(8, 'int32')
    sig = tshmem.zeros(2, 'uint64')
    tshmem.put_signal(data, arr(list(range(me, me + 8)), 'int32'), sig, 5, tshmem.SIGNAL_SET, nxt, blocking=True)
    assert tshmem.signal_wait_until(sig, tshmem.CMP_EQ, 5, timeout=30, blocking=True) == 5
    assert list(host(data)) == list(range(prv, prv + 8))  # the data came before the signal
    tshmem.barrier_all(blocking=True)
    # ADD from every PE into PE 0's second word.
    tshmem.put_signal(data[:0], arr([], 'int32'), sig[1:], 1, 'add', 0, blocking=True)
    if me == 0:
        assert tshmem.signal_wait_until(sig[1:], '>=', n, timeout=30, blocking=True) == n
    tshmem.barrier_all(blocking=True)
    with pytest.raises(tshmem.TimeoutError, match='to be > 5; it holds 5'):
        tshmem.signal_wait_until(sig, tshmem.CMP_GT, 5, timeout=0.05, blocking=True)
    tshmem.free(sig)
    tshmem.free(data)


def test_signal_mistakes_are_type_errors(pe):
    """A comparison where a signal operator is expected (and the reverse) never reaches the library."""
    data = tshmem.zeros(2, 'int32')
    sig = tshmem.zeros(1, 'int64')
    src = arr([1, 2], 'int32')
    with pytest.raises(TypeError, match='signal_op = <Cmp.EQ: 0> is a comparison'):
        tshmem.put_signal(data, src, sig, 1, tshmem.CMP_EQ, 0, blocking=True)
    with pytest.raises(TypeError, match='signal_op = 0 is not a signal operator'):
        tshmem.put_signal(data, src, sig, 1, 0, 0, blocking=True)
    with pytest.raises(TypeError, match='cmp = <SignalOp.SET: 0> is a signal operator'):
        tshmem.signal_wait_until(sig, tshmem.SIGNAL_SET, 0, timeout=1, blocking=True)
    with pytest.raises(TypeError, match='signal_var is int32; a signal word is int64 or uint64'):
        tshmem.signal_wait_until(data, tshmem.CMP_EQ, 0, timeout=1, blocking=True)
    with pytest.raises(ValueError, match='signal_val = 18446744073709551616 does not fit'):
        tshmem.put_signal(data, src, sig, 1 << 64, tshmem.SIGNAL_ADD, 0, blocking=True)
    assert host(sig)[0] == 0 and list(host(data)) == [0, 0]  # nothing was written
    tshmem.free(sig)
    tshmem.free(data)


def test_teams(pe):
    me, n = pe
    assert tshmem.team_n_pes(tshmem.TEAM_WORLD) == n
    evens = tshmem.team_split_strided(tshmem.TEAM_WORLD, 0, 2, (n + 1) // 2)
    if me % 2 == 0:
        assert evens != tshmem.TEAM_INVALID and tshmem.team_my_pe(evens) == me // 2
        assert tshmem.team_translate_pe(evens, 0, tshmem.TEAM_WORLD) == 0
        tshmem.team_destroy(evens)
    else:
        assert evens == tshmem.TEAM_INVALID
    tshmem.barrier(tshmem.TEAM_WORLD, blocking=True)
    with pytest.raises(tshmem.InvalidArgumentError):
        tshmem.team_split_strided(tshmem.TEAM_WORLD, 0, 1, n + 1)  # a member outside the parent, on every PE
    with pytest.raises(tshmem.ArgumentTypeError, match='stride = 1.0 is not an int'):
        tshmem.team_split_strided(tshmem.TEAM_WORLD, 0, 1.0, n)


def test_collectives_on_host_memory_fail_alike_on_every_pe(pe):
    """The collectives are GPU kernels; on the shm heap they fail the same way everywhere, never hang."""
    if GPU:
        pytest.skip('the GPU heap runs them (test_torch.py)')
    me, n = pe
    x = tshmem.zeros(8, 'float32')
    y = tshmem.zeros(8 * n, 'float32')
    calls = (lambda: tshmem.all_reduce(x), lambda: tshmem.all_gather(y, x), lambda: tshmem.reduce_scatter(x, y),
             lambda: tshmem.all_to_all(y, y), lambda: tshmem.broadcast(x, root=0))
    for call in calls:
        with pytest.raises(tshmem.ConfigError, match='collectives run on the GPU') as info:
            call()
        assert same_everywhere(str(info.value))
    tshmem.free(y)
    tshmem.free(x)


def test_collective_type_mistakes_raise_before_launch_on_every_pe(pe):
    me, n = pe
    f = tshmem.zeros(4, 'float32')
    b = tshmem.zeros(4, 'bool')
    cases = ((lambda: tshmem.all_reduce(b), 'dtype bool has no reductions'),
             (lambda: tshmem.all_reduce(f, op='avg'), "op = 'avg' is not a reduction operator"),
             (lambda: tshmem.all_reduce(f, op='xor'), 'op = xor needs an integer dtype'),
             (lambda: tshmem.all_reduce(f, arr([0.0] * 4)), 'src .* is not on the symmetric heap'),
             (lambda: tshmem.all_gather(f, f), 'dst has 4 elements; it must hold'),
             (lambda: tshmem.broadcast(f, root='0'), "root = '0' is not an int"))
    for call, match in cases:
        if n == 1 and 'must hold' in match:
            continue  # 4 == 1 x 4
        with pytest.raises((TypeError, ValueError), match=match) as info:
            call()
        assert isinstance(info.value, tshmem.Error)
    if n > 1 and not GPU:  # refused on one PE only: every PE raises, naming it
        with pytest.raises(tshmem.AsymmetricError, match=f'divergent PE {n - 1}'):
            tshmem.all_reduce(b if me == n - 1 else f)
    tshmem.free(b)
    tshmem.free(f)
