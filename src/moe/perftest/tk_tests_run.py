"""Runs DeepSeek TileKernels' own MoE tests (tests/moe/test_*.py) against tshmem_moe as parallel pytest processes
inside one time budget, and prints one table: file | passed | failed | skipped | reasons (GPU host only).

    python3 tk_tests_run.py --tk TK_SRC --logs DIR [--budget-s S] [--jobs N] [--shards FILE=N,...] [-- PYTEST_ARGS]

(scripts/tilekernels-tests.sh sets PYTHONPATH: the tilelang site, tshmem_moe, TileKernels, this folder.)

Where the time of a plain `pytest tests/moe` goes, and what this does about it:
* Each pytest process imports torch, tilelang (TVM) and tile_kernels (about 20 s of CPU) and compiles
  TileKernels' input generator `generate_topk_idx` (a torch.compile'd function; about 5 s the first time, 1 s
  per new set of MoE parameters). The files run as parallel processes (one per file, the three large files
  split into slices, `TK_SHARD`), at most --jobs at once (default 12), inductor with one compile thread each
  (TORCHINDUCTOR_COMPILE_THREADS=1, no pool of compile workers per process). Measured (1 x H200): a
  reduce_fused slice of 324 tests ran in 25 s; top2_sum_gate's three 256-expert tests take 30 s each.
* test_reduce_fused.py has 1152 correctness tests (12 MoE parameter sets x 6 hidden sizes x 16 dtype/weight/sf
  combinations, each with a torch reference over tensors of up to 9 GB); test_expand_to_fused.py 420.
* test_expand_to_fused.py's `_with_sf` tests make their inputs with TileKernels' tilelang `per_token_cast`:
  28 JIT compiles per process. `TK_TORCH_CAST=1` (tilekernels_compat.py) makes them with TileKernels' torch
  reference `cast` instead (the same tensors; TileKernels' own quant tests assert so). Nothing else the MoE
  tests call is tilelang once the 12 MoE functions are tshmem_moe's (the references are torch).
* Benchmark tests (`@pytest.mark.benchmark`, TileKernels' benchmark parametrizations) skip without
  --run-benchmark; the table gives every skip reason with its count. A file lists them after its correctness
  tests, so each slice takes its share of both.
GPU memory: the processes share the one GPU (141 GB); each gives its cached memory back after a test when it
holds more than TK_RESERVED_CAP_GB (default 12; the largest reduce_fused test needs about 14 GB), and tests that
still fail for GPU memory run again in one process at the end while the budget lasts.
A process cut off by the budget still reports the tests it finished (TK_RESULTS lines); the rest show as
'not run'. A process whose test makes no progress for --stall-s (75 s; 3x that before its first test, the
imports) gets SIGUSR1 (its Python stacks go to SLICE.stacks, the innermost frames to a STALL line after the
table), is stopped, the test counts as an error, and the rest of its slice starts in a new process (at most
--restarts times). Exit status 0 when every collected test passed or skipped.
"""
import argparse
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import time

# Slices for the files with many or long tests (reduce_fused: 1152 tests; expand_to_fused: 420, each with
# tensors of GBs; top2_sum_gate: 11 tests, each up to 96 calls with rejection-sampled inputs).
DEFAULT_SHARDS = {'test_reduce_fused': 4, 'test_expand_to_fused': 3, 'test_top2_sum_gate': 4}
# Sliced round robin: top2_sum_gate's three slowest tests (about 30 s each, the 256-expert grouped configs)
# are its last three, and it compiles nothing per parameter set.
ROUND_ROBIN = ('test_top2_sum_gate',)
# Started first: the longest.
ORDER = ('test_reduce_fused', 'test_expand_to_fused', 'test_top2_sum_gate')


def parse_shards(spec):
    shards = dict(DEFAULT_SHARDS)
    for item in filter(None, spec.split(',')):
        name, _, n = item.partition('=')
        shards[name.strip().removesuffix('.py')] = max(1, int(n))
    return shards


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tk', required=True, help='TileKernels checkout (tests/, tile_kernels/)')
    ap.add_argument('--logs', required=True)
    ap.add_argument('--budget-s', type=float, default=300, help='wall time for all files together')
    ap.add_argument('--jobs', type=int, default=min(12, os.cpu_count() or 8), help='pytest processes at once')
    ap.add_argument('--shards', default='', help='FILE=N,... slices per file (default %s)' % DEFAULT_SHARDS)
    ap.add_argument('--files', default='', help='comma-separated test_* names (default: all of tests/moe)')
    ap.add_argument('--stall-s', type=float, default=75,
                    help='a process whose test makes no progress this long is stopped and its slice restarted')
    ap.add_argument('--restarts', type=int, default=3, help='restarts per slice after a stall')
    ap.add_argument('pytest_args', nargs='*')
    a = ap.parse_args()
    deadline = time.time() + a.budget_s
    os.makedirs(a.logs, exist_ok=True)
    for old in glob.glob(os.path.join(a.logs, 'test_*')) + glob.glob(os.path.join(a.logs, 'retry.*')):
        os.remove(old)
    files = sorted(os.path.basename(f)[:-3] for f in glob.glob(os.path.join(a.tk, 'tests', 'moe', 'test_*.py')))
    if a.files:
        want = {f.strip().removesuffix('.py') for f in a.files.split(',')}
        files = [f for f in files if f in want]
    shards = parse_shards(a.shards)
    jobs = []  # (file, i, n)
    for f in sorted(files, key=lambda f: (ORDER.index(f) if f in ORDER else len(ORDER), f)):
        n = shards.get(f, 1)
        jobs += [(f, i, n) for i in range(n)]

    env = dict(os.environ)
    env.setdefault('TK_TORCH_CAST', '1')
    env.setdefault('TORCHINDUCTOR_COMPILE_THREADS', '1')
    env.setdefault('OMP_NUM_THREADS', '1')
    env.setdefault('PYTORCH_CUDA_ALLOC_CONF', 'expandable_segments:True')
    env.setdefault('TK_RESERVED_CAP_GB', '12')
    env.setdefault('TILELANG_PRINT_ON_COMPILATION', '0')
    print(f'# {len(files)} files as {len(jobs)} pytest processes, {a.jobs} at once, budget {a.budget_s:.0f} s; '
          f'TK_TORCH_CAST={env["TK_TORCH_CAST"]} TSHMEM_TK_IMPL={env.get("TSHMEM_TK_IMPL", "tshmem")}', flush=True)

    running = {}  # Popen -> (job, start time)
    pending = list(jobs)
    seconds, rcs, restarts = {}, {}, collections.Counter()
    stalls = []

    def tag_of(job):
        f, i, n = job
        return f if n == 1 else f'{f}.{i}of{n}'

    def start(job):
        f, i, n = job
        tag = tag_of(job)
        res = os.path.join(a.logs, tag + '.jsonl')
        e = dict(env, TK_RESULTS=res, TK_STACKS=os.path.join(a.logs, tag + '.stacks'))
        if n > 1:
            e['TK_SHARD'] = f'{i}/{n}' + ('/rr' if f in ROUND_ROBIN else '')
        if restarts[job]:  # a restart: leave out what the slice's earlier processes finished or stalled in
            desel = os.path.join(a.logs, tag + '.deselect')
            with open(desel, 'w') as out:
                out.write('\n'.join(finished_ids(res)) + '\n')
            e['TK_DESELECT'] = desel
        cmd = [sys.executable, '-m', 'pytest', '-p', 'tilekernels_compat', '-p', 'no:cacheprovider', '-p',
               'no:benchmark', '-q', '-rfE', f'tests/moe/{f}.py', *a.pytest_args]
        with open(os.path.join(a.logs, tag + '.log'), 'a') as log:
            p = subprocess.Popen(cmd, cwd=a.tk, env=e, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        running[p] = (job, time.time())

    def finish(p, rc):
        job, t_start = running.pop(p)
        seconds[job] = seconds.get(job, 0) + time.time() - t_start
        rcs[job] = rc
        f, i, n = job
        print(f'# {f}{"" if n == 1 else f" slice {i + 1}/{n}"}: rc {rc}, {seconds[job]:.0f} s', flush=True)

    def stop(p):
        os.killpg(p.pid, signal.SIGTERM)
        for _ in range(30):
            if p.poll() is not None:
                return
            time.sleep(0.1)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()

    t0, last_note = time.time(), time.time()
    while pending or running:
        while pending and len(running) < a.jobs and time.time() < deadline:
            start(pending.pop(0))
        if not running:
            break
        time.sleep(0.5)
        now = time.time()
        if now - last_note >= 30:  # progress: tests finished so far, all processes together
            last_note = now
            done = sum(len(finished_ids(f)) for f in glob.glob(os.path.join(a.logs, '*.jsonl')))
            print(f'# {now - t0:.0f} s: {done} tests finished, {len(running)} processes running, '
                  f'{len(pending)} waiting', flush=True)
        for p in list(running):
            rc = p.poll()
            if rc is not None:
                finish(p, rc)
                continue
            # A test that makes no progress for --stall-s: print its stacks, stop the process, record the test
            # as an error, and start the rest of the slice in a new process.
            job, t_start = running[p]
            res = os.path.join(a.logs, tag_of(job) + '.jsonl')
            started = os.path.exists(res) and os.path.getmtime(res) >= t_start  # collected: imports are done
            last = os.path.getmtime(res) if started else t_start
            if now - last < (a.stall_s if started else 3 * a.stall_s):
                continue
            stuck = current_test(res)
            os.kill(p.pid, signal.SIGUSR1)
            time.sleep(1)
            stop(p)
            finish(p, 'stalled')
            with open(res, 'a') as out:
                out.write(json.dumps({'nodeid': stuck or '(collection)', 'outcome': 'error', 'when': 'call',
                                      'reason': f'no progress for {a.stall_s:.0f} s: stopped (stacks in '
                                                f'{tag_of(job)}.stacks)', 's': a.stall_s}) + '\n')
            print(f'# {tag_of(job)}: no progress for {a.stall_s:.0f} s in {stuck}: stopped', flush=True)
            stalls.append(f'STALL {tag_of(job)} {stuck}: innermost frames: ' +
                          ' <- '.join(innermost_frames(os.path.join(a.logs, tag_of(job) + '.stacks'))))
            if stuck and restarts[job] < a.restarts:
                restarts[job] += 1
                pending.insert(0, job)
        if time.time() >= deadline:
            for p in list(running):
                stop(p)
                finish(p, 'timeout')
            break
    retried = retry_out_of_memory(a, env, deadline)
    rc = report(a.logs, files, jobs, seconds, rcs, retried)
    print('\n'.join(stalls))
    return rc


def finished_ids(res):
    """Node ids with a result in a TK_RESULTS file."""
    if not os.path.exists(res):
        return []
    return [json.loads(line)['nodeid'] for line in open(res) if '"nodeid"' in line]


def innermost_frames(stacks, n=6):
    """The first n frames of the main thread's stack in the last dump of a TK_STACKS file."""
    if not os.path.exists(stacks):
        return ['(no stack dump)']
    lines = open(stacks).read().splitlines()
    heads = [k for k, line in enumerate(lines) if line.startswith('Current thread')]
    if not heads:
        return ['(no stack dump)']
    out = []
    for line in lines[heads[-1] + 1:]:
        if not line.startswith('  File '):
            break
        out.append(line.strip().removeprefix('File ').replace('"', ''))
    return out[:n] or ['(empty stack)']


def current_test(res):
    """The test a TK_RESULTS file's process started last and has not finished, or None."""
    started, finished = None, set()
    if os.path.exists(res):
        for line in open(res):
            r = json.loads(line)
            if 'start' in r:
                started = r['start']
            elif 'nodeid' in r:
                finished.add(r['nodeid'])
    return started if started not in finished else None


def retry_out_of_memory(a, env, deadline):
    """Tests that failed for GPU memory (parallel processes share one GPU) run again in one process, if the
    budget leaves time; returns {nodeid: (outcome, reason)} of the reruns."""
    oom = []
    for f in glob.glob(os.path.join(a.logs, 'test_*.jsonl')):
        for line in open(f):
            r = json.loads(line)
            if r.get('outcome') in ('failed', 'error') and 'out of memory' in r.get('reason', '').lower():
                oom.append(r['nodeid'])
    left = deadline - time.time()
    if not oom:
        return {}
    if left < 20:
        print(f'# {len(oom)} tests failed for GPU memory; no budget left to run them again', flush=True)
        return {}
    print(f'# {len(oom)} tests failed for GPU memory: running them again in one process ({left:.0f} s left)',
          flush=True)
    res = os.path.join(a.logs, 'retry.jsonl')
    with open(os.path.join(a.logs, 'retry.log'), 'w') as log:
        try:
            subprocess.run([sys.executable, '-m', 'pytest', '-p', 'tilekernels_compat', '-p', 'no:cacheprovider',
                            '-p', 'no:benchmark', '-q', '-rfE', *sorted(set(oom)), *a.pytest_args], cwd=a.tk,
                           env=dict(env, TK_RESULTS=res), stdout=log, stderr=subprocess.STDOUT, timeout=left)
        except subprocess.TimeoutExpired:
            print('# the rerun was cut off by the budget', flush=True)
    out = {}
    if os.path.exists(res):
        for line in open(res):
            r = json.loads(line)
            if 'nodeid' in r:
                out[r['nodeid']] = (r['outcome'], r['reason'])
    return out


def report(logs, files, jobs, seconds, rcs, retried):
    rows, totals = [], collections.Counter()
    rank = {'passed': 0, 'skipped': 1, 'failed': 2, 'error': 3}
    bad = False
    for f in files:
        fjobs = [j for j in jobs if j[0] == f]
        outcome = {}  # nodeid -> (outcome, reason), the worst phase
        collected, notes, incomplete = 0, [], False
        for job in fjobs:
            _, i, n = job
            tag = f if n == 1 else f'{f}.{i}of{n}'
            res = os.path.join(logs, tag + '.jsonl')
            got = None
            if os.path.exists(res):
                for line in open(res):
                    r = json.loads(line)
                    if 'collected' in r:
                        got = max(got or 0, r['collected'])  # a restarted process counts the slice again
                        continue
                    if 'nodeid' not in r:
                        continue  # a test's start
                    prev = outcome.get(r['nodeid'])
                    if prev is None or rank[r['outcome']] > rank[prev[0]]:
                        outcome[r['nodeid']] = (r['outcome'], r['reason'])
            collected += got or 0
            rc = rcs.get(job)
            where = '' if n == 1 else f'slice {i + 1}/{n} '
            if job not in rcs:
                notes.append(f'{where}not started (budget spent)')
                incomplete = True
            elif rc == 'timeout':
                notes.append(f'{where}cut off by the budget after {seconds[job]:.0f} s')
                incomplete = True
            elif rc == 'stalled':
                notes.append(f'{where}stopped after a stall, restarts used up')
                incomplete = True
            elif got is None or rc not in (0, 1, 5):  # 5: every test of a restarted slice was done
                notes.append(f'{where}pytest exit status {rc}, see {tag}.log')
                incomplete = True
        again = [n for n in outcome if n in retried]
        for n in again:  # a rerun after running out of GPU memory replaces the first outcome
            outcome[n] = retried[n]
        if again:
            notes.append(f'{len(again)} run again after running out of GPU memory')
        c = collections.Counter(o for o, _ in outcome.values())
        reasons = collections.Counter()
        for o, why in outcome.values():
            if o != 'passed':
                reasons[why if o == 'skipped' else f'{o}: {why}'] += 1
        not_run = max(collected - len(outcome), 0)
        failed = c['failed'] + c['error']
        if not_run:
            notes.append(f'{not_run} not run')
        secs = max((seconds.get(j, 0) for j in fjobs), default=0)
        text = '; '.join([f'{k}x {why}' for why, k in reasons.most_common()] + notes + [f'{secs:.0f} s'])
        rows.append(f'| {f}.py | {c["passed"]} | {failed} | {c["skipped"]} | {text} |')
        totals.update(passed=c['passed'], failed=failed, skipped=c['skipped'], not_run=not_run)
        bad |= bool(failed or not_run or incomplete)
    impl = os.environ.get('TSHMEM_TK_IMPL', 'tshmem')
    print(f'\nTileKernels tests/moe against {"tshmem_moe" if impl == "tshmem" else "TileKernels itself"}:')
    print('| file | passed | failed | skipped | reasons |\n| --- | ---: | ---: | ---: | --- |')
    print('\n'.join(rows))
    print(f'| total | {totals["passed"]} | {totals["failed"]} | {totals["skipped"]} | '
          f'{totals["not_run"]} not run |')
    print(f'TK-TESTS: {totals["passed"]} passed, {totals["failed"]} failed, {totals["skipped"]} skipped, '
          f'{totals["not_run"]} not run -> {"FAIL" if bad else "OK"}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
