"""src/moe/perftest/row_workers.py (side_by_side.py's worker processes for rows whose call can lose the CUDA
context): a fault, a worker that dies and one that hangs each cost only their own row; no torch, no GPU."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'perftest'))
import row_workers  # noqa: E402

FAKE_WORKER = '''
import os, sys, time
sys.path.insert(0, {path!r})
import row_workers

def handle(i):
    if i == 1:
        return {{'i': i, 'error': 'AcceleratorError: CUDA error: an illegal memory access was encountered',
                 'fatal': True}}
    if i == 2:
        os._exit(7)
    if i == 3:
        time.sleep(60)
    if i == 5:
        return {{'i': i, 'error': 'ValueError: bad shape', 'fatal': False}}
    print('library noise on stderr', file=sys.stderr)
    return {{'i': i, 'res': [1.0 + i, 2.0, 3.0, 'cupti'], 'pid': os.getpid()}}

sys.exit(row_workers.serve(handle, sys.stdin, sys.stdout))
'''


def test_a_fault_costs_only_its_row(tmp_path):
    script = tmp_path / 'fake_worker.py'
    script.write_text(FAKE_WORKER.format(path=os.path.dirname(row_workers.__file__)))
    pool = row_workers.WorkerPool([sys.executable, str(script)], row_timeout_s=3)
    try:
        r0 = pool.run(0)
        assert r0['res'] == [1.0, 2.0, 3.0, 'cupti']
        r1 = pool.run(1)
        assert r1['fatal'] and row_workers.fault_cell(r1['error']) == 'faults (illegal memory access)'
        r4 = pool.run(4)
        assert r4['res'][0] == 5.0 and r4['pid'] != r0['pid']  # the next worker measured it
        r2 = pool.run(2)
        assert r2['fatal'] and 'exited with status 7' in r2['error']
        r3 = pool.run(3)
        assert r3['fatal'] and 'no result in 3 s' in r3['error']
        r5 = pool.run(5)
        assert not r5['fatal'] and row_workers.fault_cell(r5['error']) == 'fails (ValueError: bad shape)'
        r6 = pool.run(6)
        assert r6['res'][0] == 7.0 and r6['pid'] != r4['pid']
        assert pool.spawned == 5  # the first, one standby per fault (3), and the standby after the last
    finally:
        pool.close()
    assert pool.active is None and pool.standby is None


def test_context_lost_and_cells():
    assert row_workers.context_lost('AcceleratorError: CUDA error: an illegal memory access was encountered')
    assert row_workers.context_lost('RuntimeError: CUDA error: unspecified launch failure')
    assert not row_workers.context_lost('ValueError: num_topk must be positive')
    assert row_workers.fault_cell('RuntimeError: CUDA error: unspecified launch failure') == \
        'faults (unspecified launch failure)'
