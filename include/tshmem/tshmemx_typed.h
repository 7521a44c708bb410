/*
 * Typed names of the on-stream team collectives (OpenSHMEM/NVSHMEM style), as static inline C functions over
 * the byte- and dtype-based calls of tshmemx.h. Same rules, checks and messages as those calls.
 *
 *   tshmemx_<T>_<op>_reduce_on_stream(team, dst, src, nreduce, stream)   -> tshmemx_allreduce_on_stream
 *   tshmemx_<T>_fcollect_on_stream(team, dst, src, nelems, stream)        -> tshmemx_allgather_on_stream
 *   tshmemx_<T>_alltoall_on_stream(team, dst, src, nelems, stream)        -> tshmemx_alltoall_on_stream
 *   tshmemx_<T>_broadcast_on_stream(team, dst, src, nelems, root, stream) -> tshmemx_broadcast_on_stream
 *
 * Reductions exist for the element types the kernels reduce: 32- and 64-bit signed integers (sum, min, max),
 * float (sum, min, max), unsigned 32/64-bit integers (sum only: two's-complement sums are the signed ones; an
 * unsigned min/max would need its own kernel), and, in CUDA units, half and bfloat16. No double, no prod,
 * and/or/xor: those names are absent (a compile error), never a stub. Moves exist for every RMA type.
 * A count whose byte size overflows size_t is passed on as SIZE_MAX, which the call rejects.
 */
#ifndef TSHMEM_TSHMEMX_TYPED_H
#define TSHMEM_TSHMEMX_TYPED_H

#include <stddef.h>
#include <stdint.h>

#include "tshmem/tshmemx.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
__host__ __device__
#endif
    static inline size_t
    tshmemi_bytes_of(size_t nelems, size_t elem) {
  return nelems > SIZE_MAX / elem ? SIZE_MAX : nelems * elem;
}

/* clang-format off */
/* X(C type, name, tshmemx_dtype_t): the reducible types with sum, min and max. */
#define TSHMEMI_REPT_FOR_REDUCE_TYPES(X)                                                   \
  X(int, int, TSHMEMX_DTYPE_INT32) X(int32_t, int32, TSHMEMX_DTYPE_INT32)                  \
  X(long, long, TSHMEMX_DTYPE_INT64) X(long long, longlong, TSHMEMX_DTYPE_INT64)           \
  X(int64_t, int64, TSHMEMX_DTYPE_INT64) X(ptrdiff_t, ptrdiff, TSHMEMX_DTYPE_INT64)        \
  X(float, float, TSHMEMX_DTYPE_FLOAT)
/* Unsigned: sum only. */
#define TSHMEMI_REPT_FOR_REDUCE_SUM_ONLY_TYPES(X)                                          \
  X(unsigned int, uint, TSHMEMX_DTYPE_INT32) X(uint32_t, uint32, TSHMEMX_DTYPE_INT32)      \
  X(unsigned long, ulong, TSHMEMX_DTYPE_INT64) X(unsigned long long, ulonglong, TSHMEMX_DTYPE_INT64) \
  X(uint64_t, uint64, TSHMEMX_DTYPE_INT64) X(size_t, size, TSHMEMX_DTYPE_INT64)
/* X(C type, name): the element types of the moving collectives. */
#define TSHMEMI_REPT_FOR_MOVE_TYPES(X)                                                     \
  X(float, float) X(double, double) X(char, char) X(signed char, schar) X(short, short)    \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned char, uchar)                 \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)                  \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)     \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)              \
  X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
/* clang-format on */

#define TSHMEMI_REDUCE_ON_STREAM(T, N, DTYPE, OPNAME, OP)                                                \
  static inline int tshmemx_##N##_##OPNAME##_reduce_on_stream(tshmem_team_t team, T *dst, const T *src,  \
                                                              size_t nreduce, tshmemx_stream_t stream) { \
    return tshmemx_allreduce_on_stream(team, dst, src, nreduce, DTYPE, OP, stream);                      \
  }
#define TSHMEMI_REDUCE_ALL_OPS(T, N, DTYPE)                  \
  TSHMEMI_REDUCE_ON_STREAM(T, N, DTYPE, sum, TSHMEMX_OP_SUM) \
  TSHMEMI_REDUCE_ON_STREAM(T, N, DTYPE, min, TSHMEMX_OP_MIN) \
  TSHMEMI_REDUCE_ON_STREAM(T, N, DTYPE, max, TSHMEMX_OP_MAX)
#define TSHMEMI_REDUCE_SUM(T, N, DTYPE) TSHMEMI_REDUCE_ON_STREAM(T, N, DTYPE, sum, TSHMEMX_OP_SUM)
TSHMEMI_REPT_FOR_REDUCE_TYPES(TSHMEMI_REDUCE_ALL_OPS)
TSHMEMI_REPT_FOR_REDUCE_SUM_ONLY_TYPES(TSHMEMI_REDUCE_SUM)
#if defined(__CUDACC__)
TSHMEMI_REDUCE_ALL_OPS(__half, half, TSHMEMX_DTYPE_HALF)
TSHMEMI_REDUCE_ALL_OPS(__nv_bfloat16, bfloat16, TSHMEMX_DTYPE_BFLOAT16)
#endif

#define TSHMEMI_MOVE_ON_STREAM(T, N)                                                                           \
  static inline int tshmemx_##N##_fcollect_on_stream(tshmem_team_t team, T *dst, const T *src, size_t nelems,  \
                                                     tshmemx_stream_t stream) {                                \
    return tshmemx_allgather_on_stream(team, dst, src, tshmemi_bytes_of(nelems, sizeof(T)), stream);           \
  }                                                                                                            \
  static inline int tshmemx_##N##_alltoall_on_stream(tshmem_team_t team, T *dst, const T *src, size_t nelems,  \
                                                     tshmemx_stream_t stream) {                                \
    return tshmemx_alltoall_on_stream(team, dst, src, tshmemi_bytes_of(nelems, sizeof(T)), stream);            \
  }                                                                                                            \
  static inline int tshmemx_##N##_broadcast_on_stream(tshmem_team_t team, T *dst, const T *src, size_t nelems, \
                                                      int root, tshmemx_stream_t stream) {                     \
    return tshmemx_broadcast_on_stream(team, dst, src, tshmemi_bytes_of(nelems, sizeof(T)), root, stream);     \
  }
TSHMEMI_REPT_FOR_MOVE_TYPES(TSHMEMI_MOVE_ON_STREAM)

#undef TSHMEMI_REDUCE_ON_STREAM
#undef TSHMEMI_REDUCE_ALL_OPS
#undef TSHMEMI_REDUCE_SUM
#undef TSHMEMI_MOVE_ON_STREAM

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSHMEM_TSHMEMX_TYPED_H */
