/*
 * The comparison and signal operators, shared by the C API and the device API (OpenSHMEM's SHMEM_CMP_* and
 * SHMEM_SIGNAL_*). Plain C, no CUDA: tshmem/tshmemx.h includes it, so a C host program has them from tshmem/tshmem.h
 * as shmem.h gives SHMEM_CMP_*; the device API includes it from tshmem/device/defines.cuh.
 */
#ifndef TSHMEM_DEVICE_OP_TYPES_H
#define TSHMEM_DEVICE_OP_TYPES_H

/** Comparison operators of wait_until / signal_wait_until (OpenSHMEM SHMEM_CMP_*). */
enum tshmem_cmp_op {
  TSHMEM_CMP_EQ = 0, /**< ivar == value */
  TSHMEM_CMP_NE = 1, /**< ivar != value */
  TSHMEM_CMP_GT = 2, /**< ivar >  value */
  TSHMEM_CMP_LE = 3, /**< ivar <= value */
  TSHMEM_CMP_LT = 4, /**< ivar <  value */
  TSHMEM_CMP_GE = 5, /**< ivar >= value */
};

/** Signal operators of put_signal (OpenSHMEM SHMEM_SIGNAL_*). */
enum tshmem_signal_op {
  TSHMEM_SIGNAL_SET = 0, /**< The signal word becomes the value. */
  TSHMEM_SIGNAL_ADD = 1, /**< The value is added to the signal word (atomically). */
};

#endif /* TSHMEM_DEVICE_OP_TYPES_H */
