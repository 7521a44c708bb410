"""The operator enums of the C API (tshmem.h, tshmemx.h): signal operations, comparisons, reductions."""

import enum


class SignalOp(enum.IntEnum):
    """How put_signal updates the signal word (TSHMEM_SIGNAL_*)."""
    SET = 0
    ADD = 1


class Cmp(enum.IntEnum):
    """Comparisons of signal_wait_until (TSHMEM_CMP_*)."""
    EQ = 0
    NE = 1
    GT = 2
    LE = 3
    LT = 4
    GE = 5


class ReduceOp(enum.IntEnum):
    """Reduction operators (tshmemx_redop_t); the collectives also take their names as strings."""
    SUM = 0
    MIN = 1
    MAX = 2
    PROD = 3
    AND = 4
    OR = 5
    XOR = 6
