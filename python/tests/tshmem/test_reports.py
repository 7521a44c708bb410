"""An error Python raises is the report: the library prints no warning line for it (stderr of a subprocess PE)."""
import os
import subprocess
import sys

import pytest

from conftest import GPU


def test_a_raised_error_prints_no_warning(pe):
    if GPU:
        pytest.skip('the shm heap is enough to show it')
    # One process of its own (a job of one PE: MPI starts as a singleton), so its stderr is this test's alone.
    code = ('import tshmem\n'
            'tshmem.init()\n'
            'x = tshmem.zeros(4, "float32")\n'
            'for _ in range(50):\n'
            '    try:\n'
            '        tshmem.put(x, x, 7)\n'
            '    except tshmem.InvalidPEError:\n'
            '        pass\n'
            'tshmem.free(x)\n'
            'tshmem.finalize()\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(('OMPI_', 'PMIX_', 'PMI_'))}
    env.pop('TSHMEM_DEBUG', None)
    done = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'WARN' not in done.stderr, done.stderr
