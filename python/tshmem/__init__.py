"""tshmem for Python: symmetric tensors for PyTorch (and NumPy) users.

    import tshmem, torch
    tshmem.init()                                  # under mpirun/srun; tshmem.init(group=...) under torchrun
    x = tshmem.zeros((1024,), torch.float32)       # collective, checked on every PE
    tshmem.put(x, torch.ones(1024, device=x.device), (tshmem.my_pe() + 1) % tshmem.n_pes())
    tshmem.barrier_all()
    tshmem.free(x)
    tshmem.finalize()

Allocation is collective and checked: PEs that ask for different shapes, dtypes or orders all raise
AsymmetricAllocationError with one message naming them, and nothing is allocated. Nothing collective ever runs
from garbage collection: free explicitly, use ``with tshmem.scope():``, or let finalize list and release what was
left. Arrays are torch tensors on this PE's GPU, or numpy arrays on the shm backend (CPU torch tensors with
array_type="torch"), so all of it runs without a GPU. Operations are stream-ordered on torch's current stream
(``stream=`` for another, ``blocking=True`` for the host-blocking form). Errors are tshmem.Error subclasses
carrying the C library's message. The package wraps libtshmem (include/tshmem/tshmem.h, tshmemx.h) and never
links libtorch.
"""

import os as _os

from . import _module_loading

_module_loading.prefer_eager_loading()  # before anything in this process can start CUDA

from . import _C
from ._errors import (BY_CODE as _BY_CODE, ArgumentTypeError, AsymmetricAllocationError, AsymmetricError,
                      ConfigError, CudaError, Error, InternalError, InvalidArgumentError, InvalidPEError, MpiError,
                      NotInitializedError, OutOfMemoryError, SystemCallError, TimeoutError, UnfreedWarning,
                      UnreachablePEError)
from ._ops import (Cmp, ReduceOp, SignalOp, all_gather, all_reduce, all_to_all, barrier, barrier_all, broadcast,
                   fence, get, put, put_signal, quiet, reduce_scatter, signal_wait_until)
from ._runtime import (TEAM_INVALID, TEAM_NODE, TEAM_WORLD, backend, device, empty, empty_like, finalize, free, info,
                       init, initialized, is_initialized, local_n_pes, local_pe, mc_status, multicast, my_pe, n_pes,
                       peer, peer_ptrs, scope, team_destroy, team_my_pe, team_n_pes, team_split_strided,
                       team_translate_pe, unfreed, zeros, zeros_like)

_C._register(_BY_CODE)

SIGNAL_SET, SIGNAL_ADD = SignalOp.SET, SignalOp.ADD
CMP_EQ, CMP_NE, CMP_GT, CMP_LE, CMP_LT, CMP_GE = Cmp.EQ, Cmp.NE, Cmp.GT, Cmp.LE, Cmp.LT, Cmp.GE

_HERE = _os.path.dirname(_os.path.abspath(__file__))


def get_include():
    """The folder holding tshmem/tshmem.h and the device API (tshmem/device/tshmem_device.cuh), for extensions."""
    return _os.path.join(_HERE, 'include')


def get_library_dir():
    """The folder holding libtshmem.so, the library this package runs on. Link CUDA extensions that use the device
    API with ``-L<dir> -ltshmem -Wl,-rpath,<dir>``: they then share it with the package, and their device state
    needs one call, tshmem.init(), before or after they load (each unit registers itself when the extension
    loads; init fills every registered unit, and a unit that loads later is filled on arrival).
    examples/ring_extension.py builds one with nvcc."""
    return _os.path.join(_HERE, 'lib')


def cumodule_init(module):
    """Fills the tshmem device state of a CUDA module loaded at run time (a CUmodule handle as an int, e.g. a
    JIT-compiled kernel's module built with -DTSHMEM_CUMODULE). Not collective; after init."""
    _C.cumodule_init(int(module))


__all__ = [
    'init', 'finalize', 'initialized', 'is_initialized', 'my_pe', 'n_pes', 'local_pe', 'local_n_pes', 'device',
    'backend', 'info', 'mc_status', 'TEAM_WORLD', 'TEAM_NODE', 'TEAM_INVALID', 'team_my_pe', 'team_n_pes',
    'team_translate_pe', 'team_split_strided', 'team_destroy', 'empty', 'zeros', 'empty_like', 'zeros_like', 'free',
    'scope', 'unfreed', 'peer', 'multicast', 'peer_ptrs', 'put', 'get', 'put_signal', 'signal_wait_until', 'quiet',
    'fence', 'barrier_all', 'barrier', 'all_reduce', 'reduce_scatter', 'all_gather', 'all_to_all', 'broadcast',
    'SignalOp', 'Cmp', 'ReduceOp', 'SIGNAL_SET', 'SIGNAL_ADD', 'CMP_EQ', 'CMP_NE', 'CMP_GT', 'CMP_LE', 'CMP_LT',
    'CMP_GE', 'get_include', 'get_library_dir', 'cumodule_init', 'Error', 'AsymmetricError',
    'AsymmetricAllocationError', 'InvalidPEError', 'InvalidArgumentError', 'ArgumentTypeError', 'OutOfMemoryError',
    'NotInitializedError', 'ConfigError', 'CudaError', 'MpiError', 'SystemCallError', 'UnreachablePEError',
    'InternalError', 'TimeoutError', 'UnfreedWarning',
]
