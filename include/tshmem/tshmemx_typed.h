/*
 * Typed names of the team collectives (OpenSHMEM/NVSHMEM style), as static inline C functions over the byte- and
 * dtype-based calls of tshmemx.h. Same rules, checks and messages as those calls.
 *
 *   tshmemx_<T>_<op>_reduce_on_stream(team, dst, src, nreduce, stream)   -> tshmemx_allreduce_on_stream
 *   tshmemx_<T>_fcollect_on_stream(team, dst, src, nelems, stream)        -> tshmemx_allgather_on_stream
 *   tshmemx_<T>_alltoall_on_stream(team, dst, src, nelems, stream)        -> tshmemx_alltoall_on_stream
 *   tshmemx_<T>_broadcast_on_stream(team, dst, src, nelems, root, stream) -> tshmemx_broadcast_on_stream
 *   tshmem_<T>_<op>_reduce(team, dst, src, nreduce), tshmem_<T>_fcollect/alltoall(team, dst, src, nelems),
 *   tshmem_<T>_broadcast(team, dst, src, nelems, root)                     -> host-blocking (tshmemi_host_*)
 *
 * The host-blocking names are defined here for C and C++ units; in CUDA units tshmem/device/c_coll.cuh defines
 * them as one name on host and device (the host branch calls the same functions, kernels get the thread form).
 * Reductions: sum, prod, min, max for the 32/64-bit integers (signed and unsigned: unsigned min/max compare
 * unsigned), float, double and, in CUDA units, half and bfloat16; and, or, xor for the 32/64-bit integers.
 * Other combinations are absent (a compile error), never a stub. Moves exist for every RMA type. A count whose
 * byte size overflows size_t is passed on as SIZE_MAX, which the call rejects.
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
/* X(C type, name, tshmemx_dtype_t): the types with sum, prod, min and max. */
#define TSHMEMI_REPT_FOR_REDUCE_TYPES(X)                                                   \
  X(int, int, TSHMEMX_DTYPE_INT32) X(int32_t, int32, TSHMEMX_DTYPE_INT32)                  \
  X(long, long, TSHMEMX_DTYPE_INT64) X(long long, longlong, TSHMEMX_DTYPE_INT64)           \
  X(int64_t, int64, TSHMEMX_DTYPE_INT64) X(ptrdiff_t, ptrdiff, TSHMEMX_DTYPE_INT64)        \
  X(float, float, TSHMEMX_DTYPE_FLOAT) X(double, double, TSHMEMX_DTYPE_DOUBLE)             \
  X(unsigned int, uint, TSHMEMX_DTYPE_UINT32) X(uint32_t, uint32, TSHMEMX_DTYPE_UINT32)    \
  X(unsigned long, ulong, TSHMEMX_DTYPE_UINT64) X(unsigned long long, ulonglong, TSHMEMX_DTYPE_UINT64) \
  X(uint64_t, uint64, TSHMEMX_DTYPE_UINT64) X(size_t, size, TSHMEMX_DTYPE_UINT64)
/* The types with and, or, xor. */
#define TSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES(X)                                           \
  X(int, int, TSHMEMX_DTYPE_INT32) X(int32_t, int32, TSHMEMX_DTYPE_INT32)                  \
  X(long, long, TSHMEMX_DTYPE_INT64) X(long long, longlong, TSHMEMX_DTYPE_INT64)           \
  X(int64_t, int64, TSHMEMX_DTYPE_INT64)                                                   \
  X(unsigned int, uint, TSHMEMX_DTYPE_UINT32) X(uint32_t, uint32, TSHMEMX_DTYPE_UINT32)    \
  X(unsigned long, ulong, TSHMEMX_DTYPE_UINT64) X(unsigned long long, ulonglong, TSHMEMX_DTYPE_UINT64) \
  X(uint64_t, uint64, TSHMEMX_DTYPE_UINT64) X(size_t, size, TSHMEMX_DTYPE_UINT64)
/* X(C type, name, tshmemx_dtype_t, op suffix, tshmemx_redop_t) for every reduction of the lists above. */
#define TSHMEMI_REDUCE_ARITH_OPS(T, N, DTYPE)                                                  \
  TSHMEMI_REDUCE_X(T, N, DTYPE, _sum, TSHMEMX_OP_SUM) TSHMEMI_REDUCE_X(T, N, DTYPE, _prod, TSHMEMX_OP_PROD) \
  TSHMEMI_REDUCE_X(T, N, DTYPE, _min, TSHMEMX_OP_MIN) TSHMEMI_REDUCE_X(T, N, DTYPE, _max, TSHMEMX_OP_MAX)
#define TSHMEMI_REDUCE_BITWISE_OPS(T, N, DTYPE)                                                \
  TSHMEMI_REDUCE_X(T, N, DTYPE, _and, TSHMEMX_OP_AND) TSHMEMI_REDUCE_X(T, N, DTYPE, _or, TSHMEMX_OP_OR) \
  TSHMEMI_REDUCE_X(T, N, DTYPE, _xor, TSHMEMX_OP_XOR)
/* Every (type, op) pair, as TSHMEMI_REDUCE_X(...) calls; define TSHMEMI_REDUCE_X before expanding. */
#define TSHMEMI_REPT_FOR_REDUCTIONS                                          \
  TSHMEMI_REPT_FOR_REDUCE_TYPES(TSHMEMI_REDUCE_ARITH_OPS)                    \
  TSHMEMI_REPT_FOR_BITWISE_REDUCE_TYPES(TSHMEMI_REDUCE_BITWISE_OPS)
/* X(C type, name): the element types of the moving collectives. */
#define TSHMEMI_REPT_FOR_MOVE_TYPES(X)                                                     \
  X(float, float) X(double, double) X(char, char) X(signed char, schar) X(short, short)    \
  X(int, int) X(long, long) X(long long, longlong) X(unsigned char, uchar)                 \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)                  \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)     \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)              \
  X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
/* clang-format on */

#define TSHMEMI_REDUCE_X(T, N, DTYPE, OPNAME, OP)                                                                    \
  static inline int tshmemx_##N##OPNAME##_reduce_on_stream(tshmem_team_t team, T *dst, const T *src, size_t nreduce, \
                                                           tshmemx_stream_t stream) {                                \
    return tshmemx_allreduce_on_stream(team, dst, src, nreduce, DTYPE, OP, stream);                                  \
  }
TSHMEMI_REPT_FOR_REDUCTIONS
#if defined(__CUDACC__)
TSHMEMI_REDUCE_ARITH_OPS(__half, half, TSHMEMX_DTYPE_HALF)
TSHMEMI_REDUCE_ARITH_OPS(__nv_bfloat16, bfloat16, TSHMEMX_DTYPE_BFLOAT16)
#endif
#undef TSHMEMI_REDUCE_X

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

#if !defined(__CUDACC__)
/* Host-blocking typed names for C and C++ units (CUDA units: tshmem/device/c_coll.cuh). */
#define TSHMEMI_REDUCE_X(T, N, DTYPE, OPNAME, OP)                                                           \
  static inline int tshmem_##N##OPNAME##_reduce(tshmem_team_t team, T *dst, const T *src, size_t nreduce) { \
    return tshmemi_host_reduce(team, dst, src, nreduce, DTYPE, OP);                                         \
  }
TSHMEMI_REPT_FOR_REDUCTIONS
#undef TSHMEMI_REDUCE_X
#define TSHMEMI_MOVE_HOST(T, N)                                                                                 \
  static inline int tshmem_##N##_fcollect(tshmem_team_t team, T *dst, const T *src, size_t nelems) {            \
    return tshmemi_host_fcollect(team, dst, src, tshmemi_bytes_of(nelems, sizeof(T)));                          \
  }                                                                                                             \
  static inline int tshmem_##N##_alltoall(tshmem_team_t team, T *dst, const T *src, size_t nelems) {            \
    return tshmemi_host_alltoall(team, dst, src, tshmemi_bytes_of(nelems, sizeof(T)));                          \
  }                                                                                                             \
  static inline int tshmem_##N##_broadcast(tshmem_team_t team, T *dst, const T *src, size_t nelems, int root) { \
    return tshmemi_host_broadcast(team, dst, src, tshmemi_bytes_of(nelems, sizeof(T)), root);                   \
  }
TSHMEMI_REPT_FOR_MOVE_TYPES(TSHMEMI_MOVE_HOST)
#undef TSHMEMI_MOVE_HOST
#endif

#undef TSHMEMI_MOVE_ON_STREAM

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TSHMEM_TSHMEMX_TYPED_H */
