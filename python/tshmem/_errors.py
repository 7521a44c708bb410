"""The exception hierarchy: one class per status code of the C API (include/tshmem/tshmem.h), each carrying the
library's message. Argument mistakes the package finds before calling the library are subclasses of TypeError or
ValueError as well, so both ``except tshmem.Error`` and ``except TypeError`` catch them."""

import builtins


class Error(RuntimeError):
    """A failed tshmem call. ``code`` is the C status (``tshmem_status_t``); the message is the library's."""

    code = -1


class AsymmetricError(Error):
    """PEs made different collective calls (TSHMEM_ERR_ASYMMETRIC); raised on every PE with the same message."""

    code = 1


class AsymmetricAllocationError(AsymmetricError):
    """An allocation or free whose request differs across PEs (size, shape, dtype, order); nothing was
    allocated or freed on any PE."""


class InvalidPEError(Error, IndexError):
    """A PE outside [0, n_pes) (TSHMEM_ERR_INVALID_PE)."""

    code = 2


class InvalidArgumentError(Error, ValueError):
    """An argument breaks a documented rule (TSHMEM_ERR_INVALID_ARG)."""

    code = 3


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong kind: not an array, a dtype the call does not support, a comparison where a
    signal operator is expected."""


class OutOfMemoryError(Error, MemoryError):
    """The symmetric heap is exhausted on some PE (TSHMEM_ERR_OUT_OF_MEMORY)."""

    code = 4


class NotInitializedError(Error):
    """Called before tshmem.init or after tshmem.finalize (TSHMEM_ERR_NOT_INITIALIZED)."""

    code = 5


class ConfigError(Error):
    """The environment or the job's configuration forbids it (TSHMEM_ERR_CONFIG), e.g. multicast is off."""

    code = 6


class CudaError(Error):
    """A CUDA call failed (TSHMEM_ERR_CUDA)."""

    code = 7


class MpiError(Error):
    """An MPI call failed (TSHMEM_ERR_MPI)."""

    code = 8


class SystemCallError(Error, OSError):
    """An operating-system call failed, or a bootstrap callback did (TSHMEM_ERR_SYSTEM)."""

    code = 9


class UnreachablePEError(Error):
    """A PE of another node that the call cannot reach (TSHMEM_ERR_UNREACHABLE_PE); the message says why."""

    code = 10


class InternalError(Error):
    """A broken invariant inside tshmem (TSHMEM_ERR_INTERNAL): please report it."""

    code = 11


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - tshmem.TimeoutError, also a builtins one
    """A wait passed its bound (TSHMEM_ERR_TIMEOUT)."""

    code = 12


class UnfreedWarning(UserWarning):
    """Symmetric allocations that were never freed, listed (and released) by tshmem.finalize."""


# Index = tshmem_status_t; 0 (success) is never raised.
BY_CODE = (Error, AsymmetricError, InvalidPEError, InvalidArgumentError, OutOfMemoryError, NotInitializedError,
           ConfigError, CudaError, MpiError, SystemCallError, UnreachablePEError, InternalError, TimeoutError)

__all__ = ['Error', 'AsymmetricError', 'AsymmetricAllocationError', 'InvalidPEError', 'InvalidArgumentError',
           'ArgumentTypeError', 'OutOfMemoryError', 'NotInitializedError', 'ConfigError', 'CudaError', 'MpiError',
           'SystemCallError', 'UnreachablePEError', 'InternalError', 'TimeoutError', 'UnfreedWarning']
