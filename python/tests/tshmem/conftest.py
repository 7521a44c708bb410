"""Shared by the tshmem tests. They run under mpirun (every rank runs the same tests in the same order, so the
collectives meet): ctest's tshmem_python_np{1,2,4} on the shm backend with numpy arrays, and on a GPU host
scripts/python-test.sh with TSHMEM_MEM_BACKEND=vmm and torch tensors on the GPU heap. Tests that need more PEs than the job has skip."""
import faulthandler
import glob
import os
import sys
import shutil
import time
import zlib

import numpy as np
import pytest

import tshmem

try:
    import torch
except ImportError:
    torch = None

GPU = os.environ.get('TSHMEM_MEM_BACKEND', 'shm') != 'shm'
TORCHRUN = 'TORCHELASTIC_RUN_ID' in os.environ

# The launcher's rank and size: mpirun's, or torchrun's (then tshmem.init() takes torch.distributed's default
# group, which this file starts: gloo, a CPU all-gather).
RANK = int(os.environ.get('OMPI_COMM_WORLD_RANK', os.environ.get('RANK', '0')))
SIZE = int(os.environ.get('OMPI_COMM_WORLD_SIZE', os.environ.get('WORLD_SIZE', '1')))
JOB = (os.environ.get('PMIX_NAMESPACE') or os.environ.get('OMPI_MCA_ess_base_jobid') or
       os.environ.get('TORCHELASTIC_RUN_ID') or str(os.getppid()))
if TORCHRUN:
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group('gloo')


# TSHMEM_PYTEST_TEST_TIMEOUT=<seconds> (src/ep/python/gpu_check.sh and src/ep/test/gpu_run.sh set it): each test
# that runs longer dumps every thread's stack to stderr (this rank's log) and ends the process, so mpirun ends the job and the launcher prints
# the logs: a hang names its test and the line each PE waits at. The name of each test goes to stderr as it starts.
_TEST_TIMEOUT = float(os.environ.get('TSHMEM_PYTEST_TEST_TIMEOUT', '0') or 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _TEST_TIMEOUT > 0:
        sys.stderr.write(f'[rank {RANK}] start {item.nodeid}\n')
        sys.stderr.flush()
        faulthandler.dump_traceback_later(_TEST_TIMEOUT, exit=True)
    try:
        yield
    finally:
        if _TEST_TIMEOUT > 0:
            faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope='module')
def pe():
    """tshmem initialised for the module (finalized after it); yields (my_pe, n_pes)."""
    tshmem.init()
    yield tshmem.my_pe(), tshmem.n_pes()
    tshmem.finalize()


def arr(values, dtype='float32'):
    """A local array of the heap's kind: a CUDA tensor on a GPU heap, a numpy array on shm."""
    if GPU:
        return torch.tensor(values, dtype=getattr(torch, dtype), device=f'cuda:{tshmem.device()}')
    return np.array(values, dtype=dtype)


def host(a):
    """A numpy copy of an array of either kind."""
    if torch is not None and isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.array(a)


def allgather(value):
    """Every PE's int, through tshmem itself (put into a symmetric array, barrier)."""
    me, n = tshmem.my_pe(), tshmem.n_pes()
    with tshmem.scope():
        box = tshmem.zeros(n, 'int64')
        for p in range(n):
            tshmem.put(box[me:me + 1], arr([value], 'int64'), p, blocking=True)
        tshmem.barrier_all(blocking=True)
        return [int(v) for v in host(box)]


def same_everywhere(text):
    """True when `text` is identical on every PE."""
    h = zlib.crc32(str(text).encode())
    return all(v == h for v in allgather(h))


def needs(n):
    if tshmem.n_pes() < n:
        pytest.skip(f'needs {n} PEs')


class FileGroup:
    """A launcher's collectives for tshmem.init(group=...) without torch: an all-gather over files of a folder
    that the job's ranks share (here: one per mpirun job, named after its id)."""

    def __init__(self, folder, rank, size):
        self.folder, self.rank, self.size, self.seq = folder, rank, size, 0
        os.makedirs(folder, exist_ok=True)

    def allgather_bytes(self, data):
        self.seq += 1
        mine = os.path.join(self.folder, f'{self.seq}.{self.rank}')
        with open(mine + '.tmp', 'wb') as f:
            f.write(data)
        os.rename(mine + '.tmp', mine)
        parts, deadline = [], time.monotonic() + 60
        for r in range(self.size):
            path = os.path.join(self.folder, f'{self.seq}.{r}')
            while not os.path.exists(path):
                if time.monotonic() > deadline:
                    raise TimeoutError(f'FileGroup: rank {r} never wrote {path}')
                time.sleep(0.0005)
            with open(path, 'rb') as f:
                parts.append(f.read())
        if self.seq > 2:  # every rank has read round seq - 2 before writing round seq
            try:
                os.remove(os.path.join(self.folder, f'{self.seq - 2}.{self.rank}'))
            except FileNotFoundError:
                pass
        return b''.join(parts)

    def barrier(self):
        self.allgather_bytes(b'')


def file_group(tag):
    return FileGroup(f'/tmp/tshmem-pytest-{JOB}-{tag}', RANK, SIZE)


def close_group(group):
    """Removes this rank's files that every rank has read: those before the last round (writing round k needs
    every file of round k - 1 read). The last round's go with the folder at the end of the pytest session."""
    group.barrier()
    for seq in range(max(1, group.seq - 4), group.seq):
        try:
            os.remove(os.path.join(group.folder, f'{seq}.{group.rank}'))
        except FileNotFoundError:
            pass


def pytest_sessionfinish(session, exitstatus):
    # Every rank is past the group tests by now: the later modules' collectives needed them all.
    if RANK == 0:
        for folder in glob.glob(f'/tmp/tshmem-pytest-{JOB}-*'):
            shutil.rmtree(folder, ignore_errors=True)
