/*
 * Typed team collectives in kernels, by their OpenSHMEM/NVSHMEM-style C names, in thread, warp and block form:
 *
 *   tshmem_<T>_<op>_reduce[_warp|_block](team, dst, src, nreduce)   (op: sum, prod, min, max, and, or, xor;
 *                                                                     see the type lists of tshmemx_typed.h)
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
 * barrier_all of every PE (sync.cuh) when their team holds every PE, else through the team's own thread row of
 * barrier words; the block form through the team's block rows. Every form takes any node-local team, split
 * teams included (their barrier words are their own). Reductions accumulate in team-index order like the block
 * form (floats in f32, rounded once), so every member gets the same bits.
 * Element types: reductions as tshmem/tshmemx_typed.h; moves: every RMA type.
 * One name on host and device: in CUDA units the thread-form names (tshmem_<T>_<op>_reduce, tshmem_<T>_fcollect,
 * _alltoall, _broadcast, tshmem_barrier) are static inline __host__ __device__; on the host they are the
 * host-blocking collectives (tshmemx.h, tshmemi_host_reduce). TSHMEM_HOST_NAMES_ONLY keeps them device-only
 * (tshmem_barrier: host-only).
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

/// Synchronises one thread per member of `team`: the every-PE device barrier when the team holds every PE, else
/// the team's own thread row (quiet first: this thread's puts are complete before the others pass).
TSHMEMI_DEVICE void team_sync_thread(tshmem_team_t team, const tshmem::team_view &t, const char *call,
                                     const tshmemi_device_state &st = state()) {
  if (t.size == st.n_pes) {
    tshmem::barrier_all<tshmem::thread_scope>();
    return;
  }
  tshmem::quiet();
  coll_detail::thread_barrier(team, t, call, st);
}

/// One thread: every member's dst[op over members k of src_k[i]] for i < n, in team-index order.
template <class T>
TSHMEMI_DEVICE void reduce_thread(tshmem_team_t team, T *dst, const T *src, size_t n, tshmem::redop op,
                                  const char *call) {
  const tshmem::team_view t = tshmem::team_of(team);
  team_sync_thread(team, t, call);  // every member's src is ready
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
  team_sync_thread(team, t, call);  // nobody overwrites a src that another member still reads
}

enum class move_kind { fcollect, alltoall, broadcast };

/// One thread: the byte moves, pushed by stores (broadcast: pulled from the root).
TSHMEMI_DEVICE void move_thread(move_kind kind, tshmem_team_t team, void *dst_v, const void *src_v, size_t nbytes,
                                int root, const char *call) {
  const tshmem::team_view t = tshmem::team_of(team);
  char *dst = static_cast<char *>(dst_v);
  const char *src = static_cast<const char *>(src_v);
  team_sync_thread(team, t, call);  // every member's dst is free and src ready
  if (kind == move_kind::broadcast) {
    if (root < 0 || root >= t.size) tshmemi::trap_bad_operator(call, root, t.my_index);
    tshmem::getmem<tshmem::thread_scope>(dst, src, nbytes, t.pe(root));
  } else {
    for (int k = 0; k < t.size; ++k) {
      const char *from = kind == move_kind::fcollect ? src : src + static_cast<size_t>(k) * nbytes;
      tshmem::putmem_nbi<tshmem::thread_scope>(dst + static_cast<size_t>(t.my_index) * nbytes, from, nbytes, t.pe(k));
    }
  }
  team_sync_thread(team, t, call);  // quiet + sync: every member's dst is complete
}

/// tshmem::coll is instantiated for fixed-width element types only: long and friends run as their twin.
template <class T>
struct coll_elem {
  using type = T;
};
template <>
struct coll_elem<unsigned long> {
  using type = uint64_t;
};
template <>
struct coll_elem<unsigned long long> {
  using type = uint64_t;
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

static_assert(static_cast<int>(tshmem::redop::bxor) == TSHMEMX_OP_XOR &&
                  static_cast<int>(tshmem::redop::prod) == TSHMEMX_OP_PROD,
              "tshmem::redop and tshmemx_redop_t number the operators alike");

/// The thread form of tshmem_barrier(team).
TSHMEMI_DEVICE void barrier_thread(tshmem_team_t team, const char *call) {
  team_sync_thread(team, tshmem::team_of(team), call);
}

#ifdef TSHMEMI_HOST_DEVICE_NAMES
static inline __host__ __device__ int move_hd(move_kind kind, tshmem_team_t team, void *d, const void *s, size_t nbytes,
                                              int root, const char *call) {
#ifdef __CUDA_ARCH__
  move_thread(kind, team, d, s, nbytes, root, call);
  return 0;
#else
  (void)call;
  if (kind == move_kind::fcollect) return tshmemi_host_fcollect(team, d, s, nbytes);
  if (kind == move_kind::alltoall) return tshmemi_host_alltoall(team, d, s, nbytes);
  return tshmemi_host_broadcast(team, d, s, nbytes, root);
#endif
}

/// The thread form in kernels, the host-blocking call on the host: one name on host and device.
template <class T>
static inline __host__ __device__ int reduce_hd(tshmem_team_t team, T *d, const T *s, size_t n, tshmemx_dtype_t dtype,
                                                tshmemx_redop_t op, const char *call) {
#ifdef __CUDA_ARCH__
  (void)dtype;
  reduce_thread<T>(team, d, s, n, static_cast<tshmem::redop>(op), call);
  return 0;
#else
  (void)call;
  return tshmemi_host_reduce(team, d, s, n, dtype, op);
#endif
}
#endif

}  // namespace c_coll
}  // namespace tshmemi

#define TSHMEMI_C_COLL static __device__ __forceinline__
#define TSHMEMI_C_COLL_HD static inline __host__ __device__

// ---- Reductions ----------------------------------------------------------------------------------------------
#define TSHMEMI_DEV_REDUCE_FORMS(T, N, DTYPE, OPNAME, OP)                                                \
  TSHMEMI_C_COLL int tshmem_##N##OPNAME##_reduce_warp(tshmem_team_t team, T *d, const T *s, size_t n) {  \
    if ((threadIdx.x & 31) == 0)                                                                         \
      tshmemi::c_coll::reduce_thread<T>(team, d, s, n, static_cast<tshmem::redop>(OP),                   \
                                        "tshmem_" #N #OPNAME "_reduce_warp");                            \
    __syncwarp();                                                                                        \
    return 0;                                                                                            \
  }                                                                                                      \
  TSHMEMI_C_COLL int tshmem_##N##OPNAME##_reduce_block(tshmem_team_t team, T *d, const T *s, size_t n) { \
    tshmemi::c_coll::reduce_block<T>(team, d, s, n, static_cast<tshmem::redop>(OP));                     \
    return 0;                                                                                            \
  }
#ifdef TSHMEMI_HOST_DEVICE_NAMES
// One name on host and device: the thread form in kernels, the host-blocking collective on the host.
#define TSHMEMI_REDUCE_X(T, N, DTYPE, OPNAME, OP)                                                     \
  TSHMEMI_C_COLL_HD int tshmem_##N##OPNAME##_reduce(tshmem_team_t team, T *d, const T *s, size_t n) { \
    return tshmemi::c_coll::reduce_hd<T>(team, d, s, n, DTYPE, OP, "tshmem_" #N #OPNAME "_reduce");   \
  }                                                                                                   \
  TSHMEMI_DEV_REDUCE_FORMS(T, N, DTYPE, OPNAME, OP)
#else
// TSHMEM_HOST_NAMES_ONLY: the plain name is the device thread form only.
#define TSHMEMI_REDUCE_X(T, N, DTYPE, OPNAME, OP)                                                                     \
  TSHMEMI_C_COLL int tshmem_##N##OPNAME##_reduce(tshmem_team_t team, T *d, const T *s, size_t n) {                    \
    tshmemi::c_coll::reduce_thread<T>(team, d, s, n, static_cast<tshmem::redop>(OP), "tshmem_" #N #OPNAME "_reduce"); \
    return 0;                                                                                                         \
  }                                                                                                                   \
  TSHMEMI_DEV_REDUCE_FORMS(T, N, DTYPE, OPNAME, OP)
#endif
TSHMEMI_REPT_FOR_REDUCTIONS
TSHMEMI_REDUCE_ARITH_OPS(__half, half, TSHMEMX_DTYPE_HALF)
TSHMEMI_REDUCE_ARITH_OPS(__nv_bfloat16, bfloat16, TSHMEMX_DTYPE_BFLOAT16)
#undef TSHMEMI_REDUCE_X
#undef TSHMEMI_DEV_REDUCE_FORMS

// ---- Moves -----------------------------------------------------------------------------------------------------
#define TSHMEMI_DEV_MOVE_FORMS(T, N, NAME, KIND, ROOT_PARAM, ROOT, ROOT_ARG)                                  \
  TSHMEMI_DEV_MOVE_THREAD(T, N, NAME, KIND, ROOT)                                                             \
  TSHMEMI_C_COLL int tshmem_##N##_##NAME##_warp(tshmem_team_t team, T *d, const T *s, size_t n ROOT_PARAM) {  \
    if ((threadIdx.x & 31) == 0)                                                                              \
      tshmemi::c_coll::move_thread(KIND, team, d, s, tshmemi_bytes_of(n, sizeof(T)), ROOT,                    \
                                   "tshmem_" #N "_" #NAME "_warp");                                           \
    __syncwarp();                                                                                             \
    return 0;                                                                                                 \
  }                                                                                                           \
  TSHMEMI_C_COLL int tshmem_##N##_##NAME##_block(tshmem_team_t team, T *d, const T *s, size_t n ROOT_PARAM) { \
    tshmem::coll::NAME##_block(team, d, s, tshmemi_bytes_of(n, sizeof(T)) ROOT_ARG);                          \
    return 0;                                                                                                 \
  }
#define TSHMEMI_DEV_MOVE(T, N)                                                                                     \
  TSHMEMI_DEV_MOVE_FORMS(T, N, fcollect, tshmemi::c_coll::move_kind::fcollect, , 0, )                              \
  TSHMEMI_DEV_MOVE_FORMS(T, N, alltoall, tshmemi::c_coll::move_kind::alltoall, , 0, )                              \
  TSHMEMI_DEV_MOVE_FORMS(T, N, broadcast, tshmemi::c_coll::move_kind::broadcast, TSHMEMI_DEV_COMMA int root, root, \
                         TSHMEMI_DEV_COMMA root)
#ifdef TSHMEMI_HOST_DEVICE_NAMES
#define TSHMEMI_DEV_MOVE_THREAD(T, N, NAME, KIND, ROOT)                                                              \
  TSHMEMI_C_COLL_HD int tshmem_##N##_##NAME(tshmem_team_t team, T *d, const T *s,                                    \
                                            size_t n TSHMEMI_DEV_ROOT_PARAM_##NAME) {                                \
    return tshmemi::c_coll::move_hd(KIND, team, d, s, tshmemi_bytes_of(n, sizeof(T)), ROOT, "tshmem_" #N "_" #NAME); \
  }
#else
#define TSHMEMI_DEV_MOVE_THREAD(T, N, NAME, KIND, ROOT)                                                           \
  TSHMEMI_C_COLL int tshmem_##N##_##NAME(tshmem_team_t team, T *d, const T *s,                                    \
                                         size_t n TSHMEMI_DEV_ROOT_PARAM_##NAME) {                                \
    tshmemi::c_coll::move_thread(KIND, team, d, s, tshmemi_bytes_of(n, sizeof(T)), ROOT, "tshmem_" #N "_" #NAME); \
    return 0;                                                                                                     \
  }
#endif
#define TSHMEMI_DEV_ROOT_PARAM_fcollect
#define TSHMEMI_DEV_ROOT_PARAM_alltoall
#define TSHMEMI_DEV_ROOT_PARAM_broadcast , int root
#define TSHMEMI_DEV_COMMA ,
TSHMEMI_REPT_FOR_MOVE_TYPES(TSHMEMI_DEV_MOVE)
#undef TSHMEMI_DEV_COMMA
#undef TSHMEMI_DEV_MOVE_THREAD
#undef TSHMEMI_DEV_ROOT_PARAM_fcollect
#undef TSHMEMI_DEV_ROOT_PARAM_alltoall
#undef TSHMEMI_DEV_ROOT_PARAM_broadcast

// ---- Team barrier and queries ----------------------------------------------------------------------------------
#ifdef TSHMEMI_HOST_DEVICE_NAMES
// One name on host and device (TSHMEM_HOST_NAMES_ONLY: the host function of tshmemx.h only).
TSHMEMI_C_COLL_HD int tshmem_barrier(tshmem_team_t team) {
#ifdef __CUDA_ARCH__
  tshmemi::c_coll::barrier_thread(team, "tshmem_barrier");
  return 0;
#else
  return tshmemi_host_barrier(team);
#endif
}
#endif
TSHMEMI_C_COLL void tshmem_barrier_warp(tshmem_team_t team) {
  if ((threadIdx.x & 31) == 0) tshmemi::c_coll::barrier_thread(team, "tshmem_barrier_warp");
  __syncwarp();
}
TSHMEMI_C_COLL void tshmem_barrier_block(tshmem_team_t team) {
  tshmem::quiet();
  tshmem::coll::barrier_block(team);
}

#undef TSHMEMI_C_COLL
#undef TSHMEMI_C_COLL_HD
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_C_COLL_CUH
