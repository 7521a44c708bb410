"""CUDA's module loading in a job over several nodes (docs/design.md, "Kernels that wait on the proxy").

Under lazy loading (CUDA's default) the first launch of a kernel loads it, and loading waits for the kernels
already running; when one of them waits for a PE of another node, whose data this PE's proxy must copy in, the
two wait for each other until the proxy's bound ends the job. tshmem_init sets CUDA_MODULE_LOADING=EAGER for such
a job, but in Python CUDA usually starts earlier (torch.cuda.is_available() starts it), so the package sets it
when it is imported, from what the launcher says about the job. The user's own value stands."""

import os


def _int(env, name):
    try:
        return int(env[name])
    except (KeyError, ValueError):
        return None


def job_spans_nodes(env):
    """Whether the launcher's variables in ``env`` say the job's PEs are on more than one node (mpirun, srun,
    Hydra), or TSHMEM_DEBUG_NODE_SIZE splits one host into nodes. Under torchrun (tshmem.init(group=...)) PEs of
    other nodes are unreachable, so there is no off-node path: False."""
    world = _int(env, 'OMPI_COMM_WORLD_SIZE') or _int(env, 'PMI_SIZE') or _int(env, 'SLURM_NTASKS')
    if world is None:
        return False
    nodes = _int(env, 'SLURM_STEP_NUM_NODES') or _int(env, 'SLURM_NNODES')
    local = _int(env, 'OMPI_COMM_WORLD_LOCAL_SIZE') or _int(env, 'MPI_LOCALNRANKS')
    split = _int(env, 'TSHMEM_DEBUG_NODE_SIZE')
    return (nodes is not None and nodes > 1) or (local is not None and local < world) or \
        (split is not None and 0 < split < world)


def prefer_eager_loading(env=os.environ):
    """Sets CUDA_MODULE_LOADING=EAGER in ``env`` where the job spans nodes and the variable is unset. Returns
    whether it did."""
    if 'CUDA_MODULE_LOADING' in env or not job_spans_nodes(env):
        return False
    env['CUDA_MODULE_LOADING'] = 'EAGER'
    return True
