"""The exception hierarchy against the C status codes, and errors before init."""
import builtins

import numpy as np
import pytest

import tshmem
from tshmem import _C


def test_every_status_code_has_its_class():
    codes = range(1, _C.num_status())
    for code in codes:
        name = _C.strerror(code)
        assert name.startswith('TSHMEM_ERR_'), (code, name)
        cls = tshmem._errors.BY_CODE[code]
        assert issubclass(cls, tshmem.Error) and cls.code == code, (code, cls)
    assert len(tshmem._errors.BY_CODE) == _C.num_status()
    assert _C.strerror(_C.num_status()) == 'not a tshmem status'
    assert _C.strerror(12) == 'TSHMEM_ERR_TIMEOUT' and tshmem.TimeoutError.code == 12


def test_classes_are_also_the_builtin_kinds():
    assert issubclass(tshmem.InvalidPEError, IndexError)
    assert issubclass(tshmem.InvalidArgumentError, ValueError)
    assert issubclass(tshmem.ArgumentTypeError, TypeError) and issubclass(tshmem.ArgumentTypeError, ValueError)
    assert issubclass(tshmem.OutOfMemoryError, MemoryError)
    assert issubclass(tshmem.TimeoutError, builtins.TimeoutError)
    assert issubclass(tshmem.SystemCallError, OSError)
    assert issubclass(tshmem.AsymmetricAllocationError, tshmem.AsymmetricError)
    for cls in (tshmem.ConfigError, tshmem.UnreachablePEError, tshmem.NotInitializedError, tshmem.CudaError,
                tshmem.MpiError, tshmem.InternalError):
        assert issubclass(cls, tshmem.Error) and issubclass(cls, RuntimeError)


def test_calls_before_init_raise_not_initialized():
    assert tshmem.my_pe() == -1 and tshmem.n_pes() == -1 and not tshmem.is_initialized()
    for call in (lambda: tshmem.empty(4), lambda: tshmem.barrier_all(), lambda: tshmem.free(np.zeros(1)),
                 lambda: tshmem.peer(np.zeros(1), 0), lambda: tshmem.put(np.zeros(1), np.zeros(1), 0)):
        with pytest.raises(tshmem.NotInitializedError, match='not initialised'):
            call()
    tshmem.finalize()  # not initialised: nothing to do


def test_info_is_what_tshmem_info_prints():
    text = tshmem.info()
    assert text.startswith('tshmem ') and 'TSHMEM_SYMMETRIC_SIZE' in text and 'NVLink multicast policy' in text
    data = tshmem.info(json=True)
    assert {v['name'] for v in data['variables']} >= {'TSHMEM_SYMMETRIC_SIZE', 'TSHMEM_MEM_BACKEND'}
    assert 'multicast_policy' in data
