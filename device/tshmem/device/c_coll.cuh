/*
 * Typed team collectives in kernels, by their OpenSHMEM/NVSHMEM-style C names, in thread, warp and block form:
 *
 *   tshmem_<T>_<op>_reduce[_warp|_block](team, dst, src, nreduce)   (op: sum, min, max; see the type lists)
 *   tshmem_<T>_fcollect[_warp|_block](team, dst, src, nelems)
 *   tshmem_<T>_alltoall[_warp|_block](team, dst, src, nelems)
 *   tshmem_<T>_broadcast[_warp|_block](team, dst, src, nelems, root)
 *   tshmem_barrier[_warp|_block](team)
 *
 * Every member calls once with the same arguments; each call starts and ends with a team barrier, so dst is
 * complete on every member and src may be reused when it returns. The block form (all threads of one block per
 * PE, blockIdx.x < TSHMEMI_COLL_MAX_ROWS) is tshmem::coll::*_block: it pairs with the block of the same
 * blockIdx.x on every member. The thread form is one thread per PE; the warp form is the thread form run by
 * lane 0 with the warp waiting (__syncwarp). Thread and warp forms synchronise through the device
 * barrier_all of every PE (sync.cuh): their team must hold every PE (TSHMEM_TEAM_WORLD, or TSHMEMX_TEAM_NODE
 * on one node); another team traps with a message. Reductions accumulate in team-index order like the block
 * form (floats in f32, rounded once), so every member gets the same bits.
 * Element types: reductions as tshmem/tshmemx_typed.h (signed 32/64-bit and float: sum, min, max; unsigned:
 * sum; half and bfloat16); moves: every RMA type.
 */
#ifndef TSHMEM_DEVICE_C_COLL_CUH
#define TSHMEM_DEVICE_C_COLL_CUH

#include "tshmem/device/c_api.cuh"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/pe.cuh"
#include "tshmem/device/sync.cuh"
#include "tshmem/tshmemx_typed.h"

#ifdef TSHMEM_DEVICE_COMPILE
namespace tshmemi {
namespace c_coll {

TSHMEMI_DEVICE_COLD void trap_team_not_world(const char *call, int team, int me) {
  printf(
      "tshmem: %s: team %d does not hold every PE: the thread and warp forms synchronise all PEs; use the "
      "block form (PE %d, block (%u,%u,%u), thread (%u,%u,%u))\n",
      call, team, me, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
}

/// The team's view, checked to hold every PE (the thread-scope barrier is every PE's).
TSHMEMI_DEVICE tshmem::team_view world_team(tshmem_team_t team, const char *call,
                                            const tshmemi_device_state &st = state()) {
  const tshmem::team_view t = tshmem::team_of(team, st);
  if (t.size != st.n_pes) trap_team_not_world(call, team, st.my_pe);
  return t;
}

/// One thread: every member's dst[op over members k of src_k[i]] for i < n, in team-index order.
template <class T>
TSHMEMI_DEVICE void reduce_thread(tshmem_team_t team, T *dst, const T *src, size_t n, tshmem::redop op,
                                  const char *call) {
  const tshmem::team_view t = world_team(team, call);
  tshmem::barrier_all<tshmem::thread_scope>();  // every member's src is ready
  for (size_t i = 0; i < n; ++i) {
    using acc_t = coll_detail::acc_t<T>;
    acc_t acc{};
    for (int k = 0; k < t.size; ++k) {
      // After the barrier: a plain load on this node, a proxy round trip to another (coll_spanning.cuh).
      const T x = coll_spanning::load_elem(src + i, t.pe(k), call, state());
      acc = k == 0 ? coll_detail::to_acc<T>(x) : coll_detail::combine(op, acc, coll_detail::to_acc<T>(x));
    }
    dst[i] = coll_detail::from_acc<T>(acc);
  }
  tshmem::barrier_all<tshmem::thread_scope>();  // nobody overwrites a src that another member still reads
}

enum class move_kind { fcollect, alltoall, broadcast };

/// One thread: the byte moves, pushed by stores (broadcast: pulled from the root).
TSHMEMI_DEVICE void move_thread(move_kind kind, tshmem_team_t team, void *dst_v, const void *src_v, size_t nbytes,
                                int root, const char *call) {
  const tshmem::team_view t = world_team(team, call);
  char *dst = static_cast<char *>(dst_v);
  const char *src = static_cast<const char *>(src_v);
  tshmem::barrier_all<tshmem::thread_scope>();  // every member's dst is free and src ready
  if (kind == move_kind::broadcast) {
    if (root < 0 || root >= t.size) tshmemi::trap_bad_operator(call, root, t.my_index);
    tshmem::getmem<tshmem::thread_scope>(dst, src, nbytes, t.pe(root));
  } else {
    for (int k = 0; k < t.size; ++k) {
      const char *from = kind == move_kind::fcollect ? src : src + static_cast<size_t>(k) * nbytes;
      tshmem::putmem_nbi<tshmem::thread_scope>(dst + static_cast<size_t>(t.my_index) * nbytes, from, nbytes, t.pe(k));
    }
  }
  tshmem::barrier_all<tshmem::thread_scope>();  // quiet + sync: every member's dst is complete
}

/// tshmem::coll has kernels for these element types only; unsigned sums run as the signed twin.
template <class T>
struct coll_elem {
  using type = T;
};
template <>
struct coll_elem<unsigned int> {
  using type = int32_t;
};
template <>
struct coll_elem<unsigned long> {
  using type = int64_t;
};
template <>
struct coll_elem<unsigned long long> {
  using type = int64_t;
};
template <>
struct coll_elem<long> {
  using type = int64_t;
};
template <>
struct coll_elem<long long> {
  using type = int64_t;
};

template <class T>
TSHMEMI_DEVICE void reduce_block(tshmem_team_t team, T *dst, const T *src, size_t n, tshmem::redop op) {
  using E = typename coll_elem<T>::type;
  static_assert(sizeof(E) == sizeof(T), "the kernel's element type has the size of T");
  tshmem::coll::allreduce_block<E>(team, reinterpret_cast<E *>(dst), reinterpret_cast<const E *>(src), n, op, false);
}

}  // namespace c_coll
}  // namespace tshmemi

#define TSHMEMI_C_COLL static __device__ __forceinline__

// ---- Reductions ----------------------------------------------------------------------------------------------
#define TSHMEMI_DEV_REDUCE(T, N, OPNAME, OP)                                                                \
  TSHMEMI_C_COLL int tshmem_##N##_##OPNAME##_reduce(tshmem_team_t team, T *d, const T *s, size_t n) {       \
    tshmemi::c_coll::reduce_thread<T>(team, d, s, n, OP, "tshmem_" #N "_" #OPNAME "_reduce");               \
    return 0;                                                                                               \
  }                                                                                                         \
  TSHMEMI_C_COLL int tshmem_##N##_##OPNAME##_reduce_warp(tshmem_team_t team, T *d, const T *s, size_t n) {  \
    if ((threadIdx.x & 31) == 0)                                                                            \
      tshmemi::c_coll::reduce_thread<T>(team, d, s, n, OP, "tshmem_" #N "_" #OPNAME "_reduce_warp");        \
    __syncwarp();                                                                                           \
    return 0;                                                                                               \
  }                                                                                                         \
  TSHMEMI_C_COLL int tshmem_##N##_##OPNAME##_reduce_block(tshmem_team_t team, T *d, const T *s, size_t n) { \
    tshmemi::c_coll::reduce_block<T>(team, d, s, n, OP);                                                    \
    return 0;                                                                                               \
  }
#define TSHMEMI_DEV_REDUCE_ALL_OPS(T, N, DTYPE)     \
  TSHMEMI_DEV_REDUCE(T, N, sum, tshmem::redop::sum) \
  TSHMEMI_DEV_REDUCE(T, N, min, tshmem::redop::min) \
  TSHMEMI_DEV_REDUCE(T, N, max, tshmem::redop::max)
#define TSHMEMI_DEV_REDUCE_SUM(T, N, DTYPE) TSHMEMI_DEV_REDUCE(T, N, sum, tshmem::redop::sum)
TSHMEMI_REPT_FOR_REDUCE_TYPES(TSHMEMI_DEV_REDUCE_ALL_OPS)
TSHMEMI_REPT_FOR_REDUCE_SUM_ONLY_TYPES(TSHMEMI_DEV_REDUCE_SUM)
TSHMEMI_DEV_REDUCE_ALL_OPS(__half, half, )
TSHMEMI_DEV_REDUCE_ALL_OPS(__nv_bfloat16, bfloat16, )

// ---- Moves -----------------------------------------------------------------------------------------------------
#define TSHMEMI_DEV_MOVE_FORMS(T, N, NAME, KIND, ROOT_PARAM, ROOT, ROOT_ARG)                                      \
  TSHMEMI_C_COLL int tshmem_##N##_##NAME(tshmem_team_t team, T *d, const T *s, size_t n ROOT_PARAM) {             \
    tshmemi::c_coll::move_thread(KIND, team, d, s, tshmemi_bytes_of(n, sizeof(T)), ROOT, "tshmem_" #N "_" #NAME); \
    return 0;                                                                                                     \
  }                                                                                                               \
  TSHMEMI_C_COLL int tshmem_##N##_##NAME##_warp(tshmem_team_t team, T *d, const T *s, size_t n ROOT_PARAM) {      \
    if ((threadIdx.x & 31) == 0)                                                                                  \
      tshmemi::c_coll::move_thread(KIND, team, d, s, tshmemi_bytes_of(n, sizeof(T)), ROOT,                        \
                                   "tshmem_" #N "_" #NAME "_warp");                                               \
    __syncwarp();                                                                                                 \
    return 0;                                                                                                     \
  }                                                                                                               \
  TSHMEMI_C_COLL int tshmem_##N##_##NAME##_block(tshmem_team_t team, T *d, const T *s, size_t n ROOT_PARAM) {     \
    tshmem::coll::NAME##_block(team, d, s, tshmemi_bytes_of(n, sizeof(T)) ROOT_ARG);                              \
    return 0;                                                                                                     \
  }
#define TSHMEMI_DEV_MOVE(T, N)                                                                                     \
  TSHMEMI_DEV_MOVE_FORMS(T, N, fcollect, tshmemi::c_coll::move_kind::fcollect, , 0, )                              \
  TSHMEMI_DEV_MOVE_FORMS(T, N, alltoall, tshmemi::c_coll::move_kind::alltoall, , 0, )                              \
  TSHMEMI_DEV_MOVE_FORMS(T, N, broadcast, tshmemi::c_coll::move_kind::broadcast, TSHMEMI_DEV_COMMA int root, root, \
                         TSHMEMI_DEV_COMMA root)
#define TSHMEMI_DEV_COMMA ,
TSHMEMI_REPT_FOR_MOVE_TYPES(TSHMEMI_DEV_MOVE)
#undef TSHMEMI_DEV_COMMA

// ---- Team barrier and queries ----------------------------------------------------------------------------------
TSHMEMI_C_COLL void tshmem_barrier(tshmem_team_t team) {
  tshmemi::c_coll::world_team(team, "tshmem_barrier");
  tshmem::barrier_all<tshmem::thread_scope>();
}
TSHMEMI_C_COLL void tshmem_barrier_warp(tshmem_team_t team) {
  if ((threadIdx.x & 31) == 0) tshmem_barrier(team);
  __syncwarp();
}
TSHMEMI_C_COLL void tshmem_barrier_block(tshmem_team_t team) {
  tshmem::quiet();
  tshmem::coll::barrier_block(team);
}

#undef TSHMEMI_C_COLL
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_C_COLL_CUH
