"""CUDA_MODULE_LOADING=EAGER for jobs over several nodes, set when the package is imported (tshmem/_module_loading.py):
the launcher's variables that say so, those that do not, and the user's own value."""
import os
import subprocess
import sys

import pytest

from tshmem import _module_loading as ml

MPIRUN_ONE_NODE = {'OMPI_COMM_WORLD_SIZE': '4', 'OMPI_COMM_WORLD_LOCAL_SIZE': '4'}


@pytest.mark.parametrize('env, spans', [
    ({}, False),                                                                     # no launcher
    (MPIRUN_ONE_NODE, False),
    ({'OMPI_COMM_WORLD_SIZE': '4', 'OMPI_COMM_WORLD_LOCAL_SIZE': '2'}, True),        # mpirun, two nodes
    ({'SLURM_NTASKS': '8', 'SLURM_STEP_NUM_NODES': '2'}, True),                      # srun
    ({'SLURM_NTASKS': '8', 'SLURM_STEP_NUM_NODES': '1'}, False),
    ({'PMI_SIZE': '4', 'MPI_LOCALNRANKS': '2'}, True),                               # Hydra
    (dict(MPIRUN_ONE_NODE, TSHMEM_DEBUG_NODE_SIZE='2'), True),                       # one host split into nodes
    (dict(MPIRUN_ONE_NODE, TSHMEM_DEBUG_NODE_SIZE='4'), False),
    (dict(MPIRUN_ONE_NODE, TSHMEM_DEBUG_NODE_SIZE='0'), False),
    ({'WORLD_SIZE': '8', 'LOCAL_WORLD_SIZE': '4', 'TORCHELASTIC_RUN_ID': 'x'}, False),  # torchrun: no off-node path
    ({'OMPI_COMM_WORLD_SIZE': 'four', 'OMPI_COMM_WORLD_LOCAL_SIZE': '1'}, False),    # not a number: no claim
])
def test_job_spans_nodes(env, spans):
    assert ml.job_spans_nodes(env) is spans


def test_sets_eager_only_when_unset():
    env = {'OMPI_COMM_WORLD_SIZE': '2', 'OMPI_COMM_WORLD_LOCAL_SIZE': '1'}
    assert ml.prefer_eager_loading(env) and env['CUDA_MODULE_LOADING'] == 'EAGER'
    env = {'OMPI_COMM_WORLD_SIZE': '2', 'OMPI_COMM_WORLD_LOCAL_SIZE': '1', 'CUDA_MODULE_LOADING': 'LAZY'}
    assert not ml.prefer_eager_loading(env) and env['CUDA_MODULE_LOADING'] == 'LAZY'
    env = dict(MPIRUN_ONE_NODE)
    assert not ml.prefer_eager_loading(env) and 'CUDA_MODULE_LOADING' not in env


@pytest.mark.parametrize('extra, expected', [
    ({'OMPI_COMM_WORLD_SIZE': '2', 'OMPI_COMM_WORLD_LOCAL_SIZE': '1'}, 'EAGER'),
    ({'OMPI_COMM_WORLD_SIZE': '2', 'OMPI_COMM_WORLD_LOCAL_SIZE': '1', 'CUDA_MODULE_LOADING': 'LAZY'}, 'LAZY'),
    ({'OMPI_COMM_WORLD_SIZE': '2', 'OMPI_COMM_WORLD_LOCAL_SIZE': '2'}, 'unset'),
])
def test_import_sets_it_before_anything_starts_cuda(extra, expected):
    """`import tshmem` in a fresh interpreter, with a launcher's variables (nothing is launched: importing needs
    no MPI), leaves the variable as the rule says."""
    env = {k: v for k, v in os.environ.items()
           if k != 'CUDA_MODULE_LOADING' and not k.startswith(('OMPI_', 'PMI', 'SLURM_', 'MPI_LOCAL', 'TSHMEM_DEBUG_NODE'))}
    env.update(extra)
    out = subprocess.run([sys.executable, '-c', 'import os, tshmem; print(os.environ.get("CUDA_MODULE_LOADING", "unset"))'],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
