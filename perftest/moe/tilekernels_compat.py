"""DeepSeek TileKernels beside tshmem_moe (GPU host only; TileKernels is never part of this repository).

Two uses:
* a pytest plugin (``-p tilekernels_compat``, with this folder on PYTHONPATH) that runs TileKernels' own
  ``tests/moe`` with the 12 ``tile_kernels.moe`` functions replaced by tshmem_moe's, and TileKernels'
  ``set_num_sms`` forwarding the override to tshmem_moe too (``TSHMEM_TK_IMPL=tilekernels`` leaves
  TileKernels' functions in place, to check the harness itself);
* a module: ``import_tile_kernels()`` and ``MOE_NAMES`` for ``side_by_side.py``.

TileKernels at its April 2026 head imports ``determine_target`` from ``tilelang.utils.target``, which tilelang
0.1.15 moved to ``tilelang.backend.target``; ``scripts/tilekernels-tests.sh`` writes the one-line shim module
into the unpacked tilelang.
"""
import os

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


def pytest_report_header(config):
    if _impl() == 'tshmem':
        import tshmem_moe
        return (f'tile_kernels.moe.{{{",".join(MOE_NAMES)}}} -> tshmem_moe '
                f'({os.path.dirname(tshmem_moe.__file__)}); check mode {tshmem_moe.get_check_mode()}')
    return 'tile_kernels.moe: TileKernels\' own kernels (TSHMEM_TK_IMPL=tilekernels)'
