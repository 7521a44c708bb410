"""put/get, put_signal and signal waits, ordering, teams and collectives; argument mistakes raise before anything
is launched, naming the argument."""
import re

import numpy as np
import pytest

import tshmem
from conftest import GPU, arr, host, same_everywhere, torch


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
    # PEs beyond any C int: the same kind of error, naming the call and `pe` (not a binding's conversion error).
    for big in (2**31, 2**40, 2**64, -2**63):
        for name, call in (('put', lambda: tshmem.put(x, ok, big, blocking=True)),
                           ('get', lambda: tshmem.get(ok, x, big, blocking=True)),
                           ('peer', lambda: tshmem.peer(x, big))):
            with pytest.raises(tshmem.InvalidPEError, match=rf'tshmem\.{name}: pe = {big}: PE {big} out of range'):
                call()
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


def _fold(values, op):
    """The members' values folded in team-index order (the C API's order): float16 accumulates in float32 and
    rounds once, as the GPU kernels do; every other dtype in its own type (integers wrap around)."""
    wide = 'float32' if values[0].dtype == np.float16 else values[0].dtype
    acc = values[0].astype(wide)
    with np.errstate(over='ignore'):  # a result past the dtype's range wraps or saturates, as in the kernels
        for v in values[1:]:
            acc = {'sum': np.add, 'prod': np.multiply, 'min': np.fmin, 'max': np.fmax, 'and': np.bitwise_and,
                   'or': np.bitwise_or, 'xor': np.bitwise_xor}[op](acc, v.astype(wide))
        return acc.astype(values[0].dtype)


def _member_values(k, dtype, count):
    e = np.arange(count)
    if np.dtype(dtype).kind == 'f':
        big = np.float32(1e4) if dtype == 'float16' else 1e8  # a large first value: the order of a sum matters
        return (big + e if k == 0 else 0.3 * (k + 1) + 0.01 * e).astype(dtype)
    return ((k + 3) * 2654435761 + e * 40503).astype(dtype)


def test_collectives_give_the_team_order_fold_on_every_team(pe):
    """The same values and reference on both heaps: on shm the host runs the collectives, on a GPU heap the kernels
    (stream-ordered), so the two agree bit for bit with one fold. World, node and a strided split team, every dtype
    both have and every operator, in and out of place; then the moves and the team barrier."""
    me, n = pe
    count = 1001
    evens = tshmem.team_split_strided(tshmem.TEAM_WORLD, 0, 2, (n + 1) // 2)
    dst = tshmem.zeros(count, 'float64')
    src = tshmem.zeros(count * n, 'float64')

    def done():
        if GPU:
            torch.cuda.synchronize()

    def load(into, values):
        into[:] = torch.from_numpy(values).to(into.device) if GPU else values

    int_types = ('int32', 'int64') if GPU else ('int32', 'int64', 'uint32', 'uint64')
    for team in (tshmem.TEAM_WORLD, tshmem.TEAM_NODE, evens):
        if team == tshmem.TEAM_INVALID:
            continue  # not a member: the members' calls are theirs alone
        size, rank = tshmem.team_n_pes(team), tshmem.team_my_pe(team)
        for dtype in ('float32', 'float64', 'float16') + int_types:
            view = (lambda a: a.view(getattr(torch, dtype))) if GPU else (lambda a: a.view(dtype))
            d, s = view(dst)[:count], view(src)[:count]
            ops = ('sum', 'min', 'max', 'prod') + (('and', 'or', 'xor') if dtype[0] in 'iu' else ())
            for op in ops:
                want = _fold([_member_values(k, dtype, count) for k in range(size)], op)
                load(s, _member_values(rank, dtype, count))
                tshmem.all_reduce(d, s, op=op, team=team)
                done()
                np.testing.assert_array_equal(host(d), want, err_msg=f'{dtype} {op} team {team}')
                tshmem.all_reduce(s, op=op, team=team)  # in place
                done()
                np.testing.assert_array_equal(host(s), want, err_msg=f'{dtype} {op} in place, team {team}')
        ints, out = (src.view(torch.int32), dst.view(torch.int32)) if GPU else (src.view('int32'), dst.view('int32'))
        ints, out = ints[:4 * size], out[:4 * size]
        load(ints, (np.arange(4 * size) + 1000 * rank).astype('int32'))
        tshmem.reduce_scatter(out[:4], ints, team=team)
        done()
        np.testing.assert_array_equal(host(out[:4]), sum(np.arange(4) + 4 * rank + 1000 * k for k in range(size)))
        tshmem.all_gather(out, ints[:4], team=team)
        done()
        np.testing.assert_array_equal(host(out), np.concatenate([np.arange(4) + 1000 * k for k in range(size)]))
        tshmem.all_to_all(out, ints, team=team)
        done()
        np.testing.assert_array_equal(host(out),
                                      np.concatenate([np.arange(4) + 4 * rank + 1000 * k for k in range(size)]))
        tshmem.broadcast(out[:4], ints[:4], root=size - 1, team=team)
        done()
        np.testing.assert_array_equal(host(out[:4]), np.arange(4) + 1000 * (size - 1))
        tshmem.barrier(team)
    if evens != tshmem.TEAM_INVALID:
        tshmem.team_destroy(evens)
    tshmem.free(src)
    tshmem.free(dst)


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


def test_a_collective_refused_on_one_pe_is_named_in_pythons_terms_on_every_pe(pe):
    """One PE passes a bad argument to a host-blocking collective: every PE raises; the message names the Python
    call and the argument, whole, with no C placeholder or numeric dtype code."""
    if GPU:
        pytest.skip('host-blocking on the shm heap')
    me, n = pe
    if n < 2:
        pytest.skip('needs a PE to differ')
    x = tshmem.zeros(8, 'float32')
    bad = me == n - 1
    for call, arg in ((lambda: tshmem.all_reduce(x, op='avg' if bad else 'sum'), "op = 'avg'"),
                      (lambda: tshmem.broadcast(x, root='0' if bad else 0), "root = '0'"),
                      (lambda: tshmem.all_gather(x, arr([0.0] * 4) if bad else x[:8 // n]), 'src'),
                      (lambda: tshmem.reduce_scatter(x[:8 // n], arr([0.0] * 8) if bad else x), 'src')):
        with pytest.raises(tshmem.Error) as info:
            call()
        text = str(info.value)
        assert 'tshmem.' in text and arg in text, text
        assert '<T>' not in text and not re.search(r'dtype=\d', text) and 'count=0' not in text, text
        assert 'nothing was allocated or freed' not in text, text
        assert not text.rstrip().endswith(('-', ',')) and '...' not in text, text
    tshmem.free(x)
