"""DeepSeek TileKernels beside tshmem_moe (GPU host only; TileKernels is never part of this repository).

Two uses:
* a pytest plugin (``-p tilekernels_compat``, with this folder on PYTHONPATH) that runs TileKernels' own
  ``tests/moe`` with the 12 ``tile_kernels.moe`` functions replaced by tshmem_moe's, and TileKernels'
  ``set_num_sms`` forwarding the override to tshmem_moe too (``TSHMEM_TK_IMPL=tilekernels`` leaves
  TileKernels' functions in place, to check the harness itself);
* a module: ``import_tile_kernels()`` and ``MOE_NAMES`` for ``side_by_side.py``.

TileKernels at its April 2026 head imports ``determine_target`` from ``tilelang.utils.target``, which tilelang
0.1.15 moved to ``tilelang.backend.target``; ``scripts/tilekernels-env.sh`` writes the one-line shim module
into the unpacked tilelang.

What the plugin adds for ``tk_tests_run.py`` (which runs the files as parallel pytest processes):
* ``TK_SHARD=i/n``: keep the i-th of n contiguous slices of the collected tests that run, and of those that
  skip (parametrizations are generated with the MoE parameters outermost, so a slice needs few of
  ``generate_topk_idx``'s compiles); ``TK_SHARD=i/n/rr``: every n-th test from the i-th (round robin);
* ``TK_DESELECT=FILE``: leave out the tests named there (node ids, one a line): a restarted slice's finished
  ones;
* ``TK_RESULTS=FILE``: one JSON line per test as it starts and as it finishes (outcome, skip reason, seconds),
  and one with the number collected, so that a process cut off by its time budget still reports what it ran
  and which test it was in; ``TK_STACKS=FILE``: SIGUSR1 writes every thread's Python stack there;
* ``TK_TORCH_CAST=1`` (the runner's default): ``tile_kernels.quant.per_token_cast``, which
  ``test_expand_to_fused.py`` uses only to make the inputs of ``expand_to_fused_with_sf``, is TileKernels'
  torch reference ``tile_kernels.torch.cast`` with ``block_size=(1, num_per_channels)`` instead of its
  tilelang kernel: the same tensors (TileKernels' own ``tests/quant/test_per_token_cast.py`` asserts both
  equal, values and strides, except unused bytes of packed ue8m0 padding, which both expand implementations
  copy alike), without 28 tilelang JIT compiles (one per hidden x num_per_channels x sf layout) per process;
* ``TK_RESERVED_CAP_GB=N``: after a test, give cached GPU memory back when this process holds more than N
  GiB, so that parallel processes share the one GPU.
"""
import faulthandler
import json
import os
import signal
import sys
import time

MOE_NAMES = (
    'topk_gate', 'top2_sum_gate', 'topk_sum_and_topk_group_idx', 'group_count', 'aux_fi', 'normalize_weight',
    'mask_indices_by_tp', 'inplace_unique_group_indices', 'get_fused_mapping', 'expand_to_fused',
    'expand_to_fused_with_sf', 'reduce_fused',
)


def import_tile_kernels():
    """tile_kernels with its own kernels (needs tilelang)."""
    import tile_kernels
    return tile_kernels


def use_tshmem_moe(tk):
    """Replaces TileKernels' MoE entry points by tshmem_moe's; returns the originals by name."""
    import tshmem_moe
    originals = {name: getattr(tk.moe, name) for name in MOE_NAMES}
    for name in MOE_NAMES:
        setattr(tk.moe, name, getattr(tshmem_moe, name))
    tk_set_num_sms = tk.config.set_num_sms

    def set_num_sms(num_sms):
        tk_set_num_sms(num_sms)
        tshmem_moe.set_num_sms(num_sms)

    tk.config.set_num_sms = set_num_sms
    tk.set_num_sms = set_num_sms
    return originals


def _impl():
    impl = os.environ.get('TSHMEM_TK_IMPL', 'tshmem')
    if impl not in ('tshmem', 'tilekernels'):
        raise ValueError(f"TSHMEM_TK_IMPL = {impl!r}; it must be 'tshmem' or 'tilekernels'")
    return impl


# ---- pytest plugin ---------------------------------------------------------------------------------------

_results = None  # TK_RESULTS file
_stacks = None  # TK_STACKS file

try:
    import pytest
    _last = pytest.hookimpl(trylast=True)
except ImportError:  # used as a module without pytest
    def _last(f):
        return f


@_last  # after TileKernels' own configure, which binds xdist workers to GPUs before CUDA starts
def pytest_configure(config):
    """Runs before test modules are imported, so their `from tile_kernels.config import set_num_sms` binds the
    forwarding version."""
    tk = import_tile_kernels()
    if _impl() == 'tshmem':
        use_tshmem_moe(tk)
    if os.environ.get('TK_TORCH_CAST', '0') == '1':
        use_torch_cast(tk)
    global _results
    path = os.environ.get('TK_RESULTS')
    _results = open(path, 'a', buffering=1) if path else None  # noqa: SIM115 - line-buffered, lives as long as pytest
    global _stacks
    if os.environ.get('TK_STACKS'):  # SIGUSR1 writes every thread's Python stack: what a stalled test waits in
        _stacks = open(os.environ['TK_STACKS'], 'a')  # noqa: SIM115 - faulthandler keeps writing to it
        faulthandler.register(signal.SIGUSR1, file=_stacks, all_threads=True)


def use_torch_cast(tk):
    """per_token_cast by TileKernels' torch reference (same tensors, no tilelang JIT)."""
    import tile_kernels.torch as tkt

    def per_token_cast(x, fmt, num_per_channels, x_block_size=None, use_tma_aligned_col_major_sf=False,
                       round_sf=False, use_packed_ue8m0=False):
        return tkt.cast(x, fmt, (1, num_per_channels), x_block_size=x_block_size, round_sf=round_sf,
                        use_tma_aligned_col_major_sf=use_tma_aligned_col_major_sf,
                        use_packed_ue8m0=use_packed_ue8m0)

    tk.quant.per_token_cast = per_token_cast


def _shard():
    """TK_SHARD=i/n (contiguous slices) or i/n/rr (round robin)."""
    spec = os.environ.get('TK_SHARD', '')
    if not spec:
        return None
    parts = spec.split('/')
    i, n = int(parts[0]), int(parts[1])
    rr = len(parts) > 2 and parts[2] == 'rr'
    if not 0 <= i < n or len(parts) > 3 or (len(parts) == 3 and not rr):
        raise ValueError(f'TK_SHARD = {spec!r}; it must be i/n or i/n/rr with 0 <= i < n')
    return i, n, rr


def _skipped(item):
    return any(m.name == 'skip' for m in item.iter_markers())


@_last  # after TileKernels' plugin has marked its benchmark tests skipped
def pytest_collection_modifyitems(config, items):
    shard = _shard()
    keep = items
    if shard is not None:
        i, n, rr = shard
        keep = []
        # Tests that run and tests that skip are sliced separately: a file lists its benchmarks (skipped)
        # after its correctness tests, so plain contiguous slices would give one slice all the work.
        for group in ([t for t in items if not _skipped(t)], [t for t in items if _skipped(t)]):
            keep += group[i::n] if rr else group[len(group) * i // n:len(group) * (i + 1) // n]
    if _results:  # the slice's size, before TK_DESELECT (tests an earlier process of this slice finished)
        _results.write(json.dumps({'collected': len(keep), 'time': time.time()}) + '\n')
    done = set()
    if os.environ.get('TK_DESELECT'):
        with open(os.environ['TK_DESELECT']) as f:
            done = {line.strip() for line in f if line.strip()}
    keep = [t for t in keep if t.nodeid not in done]
    if len(keep) < len(items):
        kept = set(id(t) for t in keep)
        config.hook.pytest_deselected(items=[t for t in items if id(t) not in kept])
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    if _results is not None:  # the runner names a test that stops making progress
        _results.write(json.dumps({'start': nodeid}) + '\n')


def pytest_runtest_logreport(report):
    """One line per test: its call phase, or the setup phase when that did not pass, or a failed teardown."""
    if _results is None:
        return
    if report.when == 'call' or (report.when == 'setup' and report.outcome != 'passed') or \
            (report.when == 'teardown' and report.outcome == 'failed'):
        outcome = report.outcome
        if outcome == 'failed' and report.when != 'call':
            outcome = 'error'
        reason = ''
        if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2])
        elif report.failed:
            crash = getattr(report.longrepr, 'reprcrash', None)
            reason = (crash.message if crash else str(report.longrepr).strip().splitlines()[-1]).splitlines()[0][:300]
        _results.write(json.dumps({'nodeid': report.nodeid, 'outcome': outcome, 'when': report.when,
                              'reason': reason, 's': round(report.duration, 3)}) + '\n')


def pytest_runtest_teardown(item):
    cap = float(os.environ.get('TK_RESERVED_CAP_GB', '0') or 0)
    torch = sys.modules.get('torch')  # only when the tests use torch
    if cap > 0 and torch is not None and torch.cuda.is_available() and torch.cuda.memory_reserved() > cap * 2**30:
        torch.cuda.empty_cache()


def pytest_report_header(config):
    if _impl() == 'tshmem':
        import tshmem_moe
        return (f'tile_kernels.moe.{{{",".join(MOE_NAMES)}}} -> tshmem_moe '
                f'({os.path.dirname(tshmem_moe.__file__)}); check mode {tshmem_moe.get_check_mode()}')
    return 'tile_kernels.moe: TileKernels\' own kernels (TSHMEM_TK_IMPL=tilekernels)'
