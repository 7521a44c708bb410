// An NVSHMEM-style program, built against tshmem's compat headers only (nvshmem.h, nvshmemx.h; no -rdc): the
// mapped names on the host and in kernels, at any PE count. Prints "PASS" on every PE, "FAIL: <what>" on a
// wrong result, "SKIPPED: no GPU" where tshmem runs without a GPU heap.
#include <cstdio>
#include <cstring>
#include <vector>

#include "nvshmem.h"
#include "nvshmemx.h"

namespace {

int failures = 0;
#define EXPECT(cond, ...)                               \
  do {                                                  \
    if (!(cond)) {                                      \
      std::printf("FAIL: PE %d: ", nvshmem_my_pe());    \
      std::printf(__VA_ARGS__);                         \
      std::printf(" (%s, line %d)\n", #cond, __LINE__); \
      ++failures;                                       \
    }                                                   \
  } while (0)

#define CUDA_OK(call) EXPECT((call) == cudaSuccess, "%s", #call)

constexpr int kThreads = 128;

struct Out {
  int my_pe, n_pes, team_my_pe, team_n_pes, translated, ptr_self, p_got, g_got, signal_got;
  unsigned long long fetch_add_old;
};

// Point-to-point names: one block of kThreads threads per PE, launched collectively.
__global__ void p2p_kernel(int *slot, int *block_dst, const int *block_src, uint64_t *sig, unsigned long long *counter,
                           Out *out) {
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
  if (threadIdx.x == 0) {
    out->my_pe = me;
    out->n_pes = n;
    out->team_my_pe = nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE);
    out->team_n_pes = nvshmem_team_n_pes(NVSHMEM_TEAM_WORLD);
    out->translated = nvshmem_team_translate_pe(NVSHMEMX_TEAM_NODE, out->team_my_pe, NVSHMEM_TEAM_WORLD);
    out->ptr_self = nvshmem_ptr(slot, me) == slot;
    nvshmem_int_p(slot, 100 + me, next);
    nvshmem_fence();
    out->fetch_add_old = nvshmem_ulonglong_atomic_fetch_add(counter, 1ull, 0);
  }
  nvshmemx_barrier_all_block();
  if (threadIdx.x == 0) {
    out->p_got = *slot;
    out->g_got = nvshmem_int_g(slot, next);  // next's slot holds my own number
  }
  nvshmemx_int_put_nbi_block(block_dst, block_src, kThreads, next);
  nvshmem_quiet();
  if (threadIdx.x == 0) {
    nvshmem_int_put_signal_nbi(slot, slot, 0, sig, 1, NVSHMEM_SIGNAL_ADD, next);
    nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, next);
    out->signal_got = static_cast<int>(nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, 2));
  }
  nvshmemx_barrier_all_block();
  (void)prev;
}

// Collectives in kernels: thread, warp and block forms on the world team.
__global__ void coll_kernel(int *src, int *fc_thread, int *fc_block, int *sum_thread, int *sum_block, int *max_warp,
                            int *bcast) {
  const int me = nvshmem_my_pe();
  if (threadIdx.x == 0) {
    src[0] = me + 1;
    src[1] = 10 * (me + 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_int_fcollect(NVSHMEM_TEAM_WORLD, fc_thread, src, 2);
  __syncthreads();
  nvshmemx_int_fcollect_block(NVSHMEM_TEAM_WORLD, fc_block, src, 2);
  if (threadIdx.x == 0) nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, sum_thread, src, 2);
  __syncthreads();
  nvshmemx_int_sum_reduce_block(NVSHMEM_TEAM_WORLD, sum_block, src, 2);
  if (threadIdx.x < 32) nvshmemx_int_max_reduce_warp(NVSHMEM_TEAM_WORLD, max_warp, src, 2);
  __syncthreads();
  nvshmemx_int_broadcast_block(NVSHMEM_TEAM_WORLD, bcast, src, 2, 0);
  nvshmemx_barrier_block(NVSHMEM_TEAM_WORLD);
}

// The reductions added later (double, prod, and/or/xor, unsigned min/max) and the team barrier, in kernels: thread,
// warp and block forms on the world team; the block form also on a split team (`part`, members only).
struct RedOut {
  double dsum, dprod;
  unsigned umax, umin;
  int ixor, iand, ior;
  long long llprod;
  uint64_t u64or;
  float fprod;
  int part_sum, part_max;
  int part_fc[8];
};
__global__ void more_reduce_kernel(const double *dsrc, const unsigned *usrc, const int *isrc, const long long *llsrc,
                                   const uint64_t *u64src, const float *fsrc, RedOut *out, nvshmem_team_t part,
                                   const int *part_src) {
  if (threadIdx.x == 0) {
    nvshmem_double_sum_reduce(NVSHMEM_TEAM_WORLD, &out->dsum, dsrc, 1);
    nvshmem_double_prod_reduce(NVSHMEM_TEAM_WORLD, &out->dprod, dsrc, 1);
    nvshmem_uint_max_reduce(NVSHMEM_TEAM_WORLD, &out->umax, usrc, 1);
    nvshmem_int_xor_reduce(NVSHMEM_TEAM_WORLD, &out->ixor, isrc, 1);
    nvshmem_barrier(NVSHMEM_TEAM_WORLD);
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    nvshmemx_uint_min_reduce_warp(NVSHMEM_TEAM_WORLD, &out->umin, usrc, 1);
    nvshmemx_int_and_reduce_warp(NVSHMEM_TEAM_WORLD, &out->iand, isrc, 1);
    nvshmemx_uint64_or_reduce_warp(NVSHMEM_TEAM_WORLD, &out->u64or, u64src, 1);
  }
  __syncthreads();
  nvshmemx_int_or_reduce_block(NVSHMEM_TEAM_WORLD, &out->ior, isrc, 1);
  nvshmemx_longlong_prod_reduce_block(NVSHMEM_TEAM_WORLD, &out->llprod, llsrc, 1);
  nvshmemx_float_prod_reduce_block(NVSHMEM_TEAM_WORLD, &out->fprod, fsrc, 1);
  if (part != NVSHMEM_TEAM_INVALID) {  // the split team in every form: its own block and thread rows
    nvshmemx_int_sum_reduce_block(part, &out->part_sum, part_src, 1);
    if (threadIdx.x == 0) {
      nvshmem_int_max_reduce(part, &out->part_max, part_src, 1);
      nvshmem_barrier(part);
    }
    __syncthreads();
    if (threadIdx.x < 32) nvshmemx_int_fcollect_warp(part, out->part_fc, part_src, 1);
    __syncthreads();
  }
  nvshmemx_barrier_block(NVSHMEM_TEAM_WORLD);
}

// A driver function through the runtime's entry-point table (no libcuda link, like the library).
template <class F>
F driver(const char *name) {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<F>(fn);
}

/// An application's own VMM buffer (cuMemCreate, reserve, map, access), as NVSHMEM's user-buffer example makes one.
struct UserBuffer {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  size_t bytes = 0;
};

bool make_user_buffer(size_t bytes, bool exportable, UserBuffer *out) {
  static const auto create = driver<decltype(&cuMemCreate)>("cuMemCreate");
  static const auto reserve = driver<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  static const auto map = driver<decltype(&cuMemMap)>("cuMemMap");
  static const auto access = driver<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  int device = 0;
  if (!create || !reserve || !map || !access || cudaGetDevice(&device) != cudaSuccess) return false;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = exportable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  out->bytes = bytes;
  if (create(&out->handle, bytes, &prop, 0) != CUDA_SUCCESS) return false;
  if (reserve(&out->va, bytes, bytes, 0, 0) != CUDA_SUCCESS) return false;
  if (map(out->va, bytes, 0, out->handle, 0) != CUDA_SUCCESS) return false;
  CUmemAccessDesc desc{};
  desc.location = prop.location;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access(out->va, bytes, &desc, 1) == CUDA_SUCCESS;
}

void free_user_buffer(UserBuffer &b) {
  static const auto unmap = driver<decltype(&cuMemUnmap)>("cuMemUnmap");
  static const auto address_free = driver<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  static const auto release = driver<decltype(&cuMemRelease)>("cuMemRelease");
  if (b.va != 0 && unmap && address_free) {
    unmap(b.va, b.bytes);
    address_free(b.va, b.bytes);
  }
  if (b.handle != 0 && release) release(b.handle);
  b = UserBuffer{};
}

size_t vmm_granularity() {
  static const auto granularity = driver<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  int device = 0;
  cudaGetDevice(&device);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t g = 0;
  return granularity && granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS ? g : 0;
}

// Every PE writes into the next PE's registered buffer through the symmetric address.
__global__ void registered_kernel(int *sym) {
  const int me = nvshmem_my_pe(), next = (me + 1) % nvshmem_n_pes();
  if (threadIdx.x == 0) {
    nvshmem_int_p(sym, 500 + me, next);
    nvshmem_quiet();
  }
}

bool has_text(const char *part) { return std::strstr(tshmemx_last_error(), part) != nullptr; }

/// nvshmemx_buffer_register_symmetric / _unregister_symmetric: on vmm the whole path, on another backend the
/// refusal. Collective: every PE runs it.
void registered_buffers(int me, int n) {
  const int prev = (me + n - 1) % n;
  const size_t g = vmm_granularity();
  EXPECT(g != 0, "granularity");
  UserBuffer user, second, plain;
  EXPECT(
      make_user_buffer(g, true, &user) && make_user_buffer(2 * g, true, &second) && make_user_buffer(g, false, &plain),
      "application's VMM buffers");
  void *buf = reinterpret_cast<void *>(user.va);
  if (std::strcmp(tshmemx_backend_name(), "vmm") != 0) {
    EXPECT(nvshmemx_buffer_register_symmetric(buf, g, 0) == nullptr && has_text("backend cannot register buffers"),
           "%s backend: %s", tshmemx_backend_name(), tshmemx_last_error());
  } else {
    int *sym = static_cast<int *>(nvshmemx_buffer_register_symmetric(buf, g, 0));
    EXPECT(sym != nullptr, "register: %s", tshmemx_last_error());
    if (sym != nullptr) {
      EXPECT(nvshmem_ptr(sym, me) == sym, "nvshmem_ptr(self) of a registered buffer");
      EXPECT(n == 1 || nvshmem_ptr(sym, (me + 1) % n) != nullptr, "nvshmem_ptr(next) of a registered buffer");
      CUDA_OK(cudaMemset(sym, 0, g));
      CUDA_OK(cudaDeviceSynchronize());
      nvshmem_barrier_all();
      registered_kernel<<<1, 32>>>(sym);
      CUDA_OK(cudaDeviceSynchronize());
      nvshmem_barrier_all();
      int got = -1;
      CUDA_OK(cudaMemcpy(&got, buf, sizeof got, cudaMemcpyDeviceToHost));  // the application's own address
      EXPECT(got == 500 + prev, "registered buffer after the device p: %d", got);
      const int note = 600 + me;
      EXPECT(nvshmem_putmem(sym + 1, &note, sizeof note, (me + 1) % n) == 0, "putmem: %s", tshmemx_last_error());
      nvshmem_quiet();
      nvshmem_barrier_all();
      EXPECT(nvshmem_getmem(&got, sym + 1, sizeof got, me) == 0 && got == 600 + prev, "host put/get: %d", got);
      // Refusals, each on every PE with the same message; nothing changes.
      EXPECT(
          nvshmemx_buffer_register_symmetric(buf, g, 0) == nullptr && has_text("overlaps a buffer registered before"),
          "twice: %s", tshmemx_last_error());
      EXPECT(nvshmemx_buffer_register_symmetric(reinterpret_cast<void *>(second.va), g / 2, 0) == nullptr &&
                 has_text("not a multiple of the allocation granularity"),
             "half a granule: %s", tshmemx_last_error());
      EXPECT(nvshmemx_buffer_register_symmetric(reinterpret_cast<void *>(plain.va), g, 0) == nullptr &&
                 has_text("without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"),
             "not exportable: %s", tshmemx_last_error());
      void *dev = nullptr;
      CUDA_OK(cudaMalloc(&dev, 3 * g));
      void *aligned = reinterpret_cast<void *>((reinterpret_cast<uintptr_t>(dev) + g - 1) / g * g);
      EXPECT(nvshmemx_buffer_register_symmetric(aligned, g, 0) == nullptr &&
                 (has_text("is not a CUDA VMM allocation") || has_text("without CU_MEM_HANDLE_TYPE_POSIX")),
             "cudaMalloc memory: %s", tshmemx_last_error());
      CUDA_OK(cudaFree(dev));
      if (n > 1) {
        void *r = nvshmemx_buffer_register_symmetric(reinterpret_cast<void *>(second.va), me == n - 1 ? 2 * g : g, 0);
        char expect[64];
        std::snprintf(expect, sizeof expect, "divergent PE %d.", n - 1);
        EXPECT(r == nullptr && tshmemx_last_error_code() == TSHMEM_ERR_ASYMMETRIC && has_text(expect),
               "divergent sizes: %s", tshmemx_last_error());
      }
      EXPECT(nvshmemx_buffer_unregister_symmetric(sym, 2 * g) == TSHMEM_ERR_INVALID_ARG && has_text("differs from the"),
             "unregister, wrong size: %s", tshmemx_last_error());
      EXPECT(nvshmemx_buffer_unregister_symmetric(sym + 64, g) == TSHMEM_ERR_INVALID_ARG &&
                 has_text("is no registered buffer"),
             "unregister, not the start: %s", tshmemx_last_error());
      // A second buffer beside the first, then both gone; the range is free again.
      int *sym2 = static_cast<int *>(nvshmemx_buffer_register_symmetric(reinterpret_cast<void *>(second.va), 2 * g, 0));
      EXPECT(sym2 != nullptr && reinterpret_cast<char *>(sym2) == reinterpret_cast<char *>(sym) + g,
             "second registration %p after %p: %s", (void *)sym2, (void *)sym, tshmemx_last_error());
      EXPECT(nvshmemx_buffer_unregister_symmetric(sym, g) == 0, "unregister: %s", tshmemx_last_error());
      EXPECT(nvshmem_ptr(sym, me) == nullptr, "nvshmem_ptr of an unregistered buffer");
      if (sym2 != nullptr) EXPECT(nvshmemx_buffer_unregister_symmetric(sym2, 2 * g) == 0, "%s", tshmemx_last_error());
      int *again = static_cast<int *>(nvshmemx_buffer_register_symmetric(buf, g, 0));
      EXPECT(again == sym, "registered again at %p (first at %p): %s", (void *)again, (void *)sym,
             tshmemx_last_error());
      if (again != nullptr) EXPECT(nvshmemx_buffer_unregister_symmetric(again, g) == 0, "%s", tshmemx_last_error());
    }
  }
  nvshmem_barrier_all();
  free_user_buffer(user);
  free_user_buffer(second);
  free_user_buffer(plain);
}

// ---- Every reduction name of the compat headers (nvshmem_<T>_<op>_reduce on the host, its thread, warp and
// block forms in a kernel, nvshmemx_<T>_<op>_reduce_on_stream on the kernel's stream after it), generated from
// tshmem's own type/operator lists: PE k contributes k + 2, and the result is checked against the operator applied in
// team order.
template <class T>
__host__ __device__ T value_of(int pe) {
  return T(static_cast<float>(pe + 2));
}
template <class T>
double to_double(T x) {
  return static_cast<double>(x);
}
template <>
double to_double<__half>(__half x) {
  return __half2float(x);
}
template <>
double to_double<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

double reference(tshmemx_redop_t op, int n) {
  double acc = 2;
  long long bits = 2;
  for (int k = 1; k < n; ++k) {
    const double v = k + 2;
    if (op == TSHMEMX_OP_SUM) acc += v;
    if (op == TSHMEMX_OP_PROD) acc *= v;
    if (op == TSHMEMX_OP_MIN) acc = v < acc ? v : acc;
    if (op == TSHMEMX_OP_MAX) acc = v > acc ? v : acc;
    if (op == TSHMEMX_OP_AND) bits &= k + 2;
    if (op == TSHMEMX_OP_OR) bits |= k + 2;
    if (op == TSHMEMX_OP_XOR) bits ^= k + 2;
  }
  return op == TSHMEMX_OP_AND || op == TSHMEMX_OP_OR || op == TSHMEMX_OP_XOR ? static_cast<double>(bits) : acc;
}

#define TSHMEMI_REDUCE_X(T, N, DTYPE, OPNAME, OP)                                                   \
  __global__ void every_##N##OPNAME(T *thread_dst, T *warp_dst, T *block_dst, const T *src) {       \
    if (threadIdx.x == 0) nvshmem_##N##OPNAME##_reduce(NVSHMEM_TEAM_WORLD, thread_dst, src, 1);     \
    __syncthreads();                                                                                \
    if (threadIdx.x < 32) nvshmemx_##N##OPNAME##_reduce_warp(NVSHMEM_TEAM_WORLD, warp_dst, src, 1); \
    __syncthreads();                                                                                \
    nvshmemx_##N##OPNAME##_reduce_block(NVSHMEM_TEAM_WORLD, block_dst, src, 1);                     \
  }
TSHMEMI_REPT_FOR_REDUCTIONS
TSHMEMI_REDUCE_ARITH_OPS(__half, half, TSHMEMX_DTYPE_HALF)
TSHMEMI_REDUCE_ARITH_OPS(__nv_bfloat16, bfloat16, TSHMEMX_DTYPE_BFLOAT16)
#undef TSHMEMI_REDUCE_X

template <class T>
void check_every(const char *name, tshmemx_redop_t op, int (*host)(nvshmem_team_t, T *, const T *, size_t),
                 int (*on_stream)(nvshmem_team_t, T *, const T *, size_t, cudaStream_t),
                 void (*kernel)(T *, T *, T *, const T *), char *scratch, cudaStream_t stream, int me, int n) {
  T *src = reinterpret_cast<T *>(scratch), *dst[5];
  for (int i = 0; i < 5; ++i) dst[i] = reinterpret_cast<T *>(scratch + 64 * (i + 1));
  const T mine = value_of<T>(me);
  CUDA_OK(cudaMemcpy(src, &mine, sizeof mine, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dst[0], 0, 5 * 64));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT(host(NVSHMEM_TEAM_WORLD, dst[0], src, 1) == 0, "%s on the host: %s", name, tshmemx_last_error());
  kernel<<<1, 64, 0, stream>>>(dst[1], dst[2], dst[3], src);
  EXPECT(on_stream(NVSHMEM_TEAM_WORLD, dst[4], src, 1, stream) == 0, "%s on stream: %s", name, tshmemx_last_error());
  CUDA_OK(cudaDeviceSynchronize());
  const double want = reference(op, n);
  static const char *const form[5] = {"host", "thread", "warp", "block", "on-stream"};
  for (int i = 0; i < 5; ++i) {
    T got{};
    CUDA_OK(cudaMemcpy(&got, dst[i], sizeof got, cudaMemcpyDeviceToHost));
    EXPECT(to_double(got) == want, "%s (%s form) = %g, want %g", name, form[i], to_double(got), want);
  }
}

/// Runs every reduction name; returns how many ran.
int every_reduction(int me, int n) {
  char *scratch = static_cast<char *>(nvshmem_calloc(6, 64));
  EXPECT(scratch != nullptr, "scratch: %s", tshmemx_last_error());
  if (scratch == nullptr) return 0;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int cases = 0;
#define TSHMEMI_REDUCE_X(T, N, DTYPE, OPNAME, OP)                                                            \
  check_every<T>(                                                                                            \
      "nvshmem_" #N #OPNAME "_reduce", OP,                                                                   \
      [](nvshmem_team_t t, T *d, const T *s, size_t k) { return nvshmem_##N##OPNAME##_reduce(t, d, s, k); }, \
      [](nvshmem_team_t t, T *d, const T *s, size_t k, cudaStream_t st) {                                    \
        return nvshmemx_##N##OPNAME##_reduce_on_stream(t, d, s, k, st);                                      \
      },                                                                                                     \
      every_##N##OPNAME, scratch, stream, me, n);                                                            \
  ++cases;
  TSHMEMI_REPT_FOR_REDUCTIONS
  TSHMEMI_REDUCE_ARITH_OPS(__half, half, TSHMEMX_DTYPE_HALF)
  TSHMEMI_REDUCE_ARITH_OPS(__nv_bfloat16, bfloat16, TSHMEMX_DTYPE_BFLOAT16)
#undef TSHMEMI_REDUCE_X
  CUDA_OK(cudaStreamDestroy(stream));
  nvshmem_barrier_all();
  nvshmem_free(scratch);
  return cases;
}

template <class T>
std::vector<T> to_host(const T *dev, size_t n) {
  std::vector<T> h(n);
  CUDA_OK(cudaMemcpy(h.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

int main() {
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;  // the MPI_COMM_WORLD default, through attr
  if (nvshmemx_init_attr(0, &attr) != NVSHMEMX_SUCCESS) {
    // More PEs than GPUs without TSHMEM_ALLOW_SHARED_GPU=1: skip on every PE, as the other GPU tests do.
    if (std::strstr(tshmemx_last_error(), "TSHMEM_ALLOW_SHARED_GPU") != nullptr) {
      std::printf("SKIPPED: no GPU per PE: %s\n", tshmemx_last_error());
      return 0;
    }
    // A GPU backend asked for (TSHMEM_MEM_BACKEND=ipc) on a host without a GPU.
    if (std::strstr(tshmemx_last_error(), "no CUDA device is usable") != nullptr) {
      std::printf("SKIPPED: no GPU: %s\n", tshmemx_last_error());
      return 0;
    }
    std::printf("FAIL: nvshmemx_init_attr: %s\n", tshmemx_last_error());
    return 1;
  }
  if (std::strcmp(tshmemx_backend_name(), "shm") == 0) {
    std::printf("SKIPPED: no GPU (tshmem runs on the shm backend)\n");
    nvshmem_finalize();
    return 0;
  }
  const int me = nvshmem_my_pe(), n = nvshmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
  nvshmem_team_t world = NVSHMEM_TEAM_WORLD;

  // ---- point to point, launched collectively ------------------------------------------------------------
  int *slot = static_cast<int *>(nvshmem_calloc(1, sizeof(int)));
  int *block_dst = static_cast<int *>(nvshmem_malloc(kThreads * sizeof(int)));
  int *block_src = static_cast<int *>(nvshmem_align(1024, kThreads * sizeof(int)));
  uint64_t *sig = static_cast<uint64_t *>(nvshmem_calloc(1, sizeof(uint64_t)));
  unsigned long long *counter = static_cast<unsigned long long *>(nvshmem_calloc(1, sizeof(unsigned long long)));
  Out *out = static_cast<Out *>(nvshmem_calloc(1, sizeof(Out)));
  EXPECT(slot && block_dst && block_src && sig && counter && out, "allocation: %s", tshmemx_last_error());
  std::vector<int> src_h(kThreads);
  for (int i = 0; i < kThreads; ++i) src_h[i] = me * 1000 + i;
  CUDA_OK(cudaMemcpy(block_src, src_h.data(), kThreads * sizeof(int), cudaMemcpyHostToDevice));
  nvshmem_barrier_all();

  int grid_max = 0;
  EXPECT(nvshmemx_collective_launch_query_gridsize((const void *)p2p_kernel, dim3(kThreads), nullptr, 0, &grid_max) ==
                 NVSHMEMX_SUCCESS &&
             grid_max >= 1,
         "query_gridsize gave %d: %s", grid_max, tshmemx_last_error());
  void *args[] = {&slot, &block_dst, &block_src, &sig, &counter, &out};
  EXPECT(nvshmemx_collective_launch((const void *)p2p_kernel, dim3(1), dim3(kThreads), args, 0, 0) == 0, "launch: %s",
         tshmemx_last_error());
  CUDA_OK(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  Out o{};
  CUDA_OK(cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost));
  EXPECT(o.my_pe == me && o.n_pes == n, "kernel my_pe/n_pes %d/%d", o.my_pe, o.n_pes);
  EXPECT(o.team_my_pe == nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE), "kernel team_my_pe %d", o.team_my_pe);
  EXPECT(o.team_n_pes == nvshmem_team_n_pes(world), "kernel team_n_pes %d", o.team_n_pes);
  EXPECT(o.translated == me, "kernel team_translate_pe(node index -> world) %d", o.translated);
  EXPECT(nvshmem_team_translate_pe(NVSHMEM_TEAM_WORLD, me, NVSHMEMX_TEAM_NODE) == o.team_my_pe, "host translate");
  EXPECT(o.ptr_self == 1, "nvshmem_ptr(self)");
  EXPECT(o.p_got == 100 + prev, "p: got %d", o.p_got);
  EXPECT(o.g_got == 100 + me, "g: got %d", o.g_got);
  EXPECT(o.signal_got >= 2, "signal %d", o.signal_got);
  const std::vector<int> got = to_host(block_dst, kThreads);
  for (int i = 0; i < kThreads; ++i) EXPECT(got[i] == prev * 1000 + i, "put_nbi_block[%d] = %d", i, got[i]);
  unsigned long long total = 0;
  if (me == 0) {
    CUDA_OK(cudaMemcpy(&total, counter, sizeof total, cudaMemcpyDeviceToHost));
    EXPECT(total == static_cast<unsigned long long>(n), "atomic counter %llu", total);
  }

  // A grid that cannot be co-resident is refused, with a message, and nothing is launched.
  void *none[] = {&slot, &block_dst, &block_src, &sig, &counter, &out};
  const int too_big =
      nvshmemx_collective_launch((const void *)p2p_kernel, dim3(grid_max + 1), dim3(kThreads), none, 0, 0);
  EXPECT(too_big == TSHMEM_ERR_INVALID_ARG && std::strstr(tshmemx_last_error(), "cannot be co-resident") != nullptr,
         "oversized grid: %d %s", too_big, tshmemx_last_error());

  // ---- host put/get by the shared names ----------------------------------------------------------------
  const int note = 7000 + me;
  EXPECT(nvshmem_putmem(slot, &note, sizeof note, next) == 0, "putmem: %s", tshmemx_last_error());
  nvshmem_quiet();
  nvshmem_sync_all();
  int back = -1;
  EXPECT(nvshmem_getmem(&back, slot, sizeof back, me) == 0 && back == 7000 + prev, "getmem: %d", back);
  nvshmem_barrier_all();

  // ---- collectives in kernels ----------------------------------------------------------------------------
  int *src = static_cast<int *>(nvshmem_calloc(2, sizeof(int)));
  int *fc_thread = static_cast<int *>(nvshmem_calloc(2 * n, sizeof(int)));
  int *fc_block = static_cast<int *>(nvshmem_calloc(2 * n, sizeof(int)));
  int *sum_thread = static_cast<int *>(nvshmem_calloc(2, sizeof(int)));
  int *sum_block = static_cast<int *>(nvshmem_calloc(2, sizeof(int)));
  int *max_warp = static_cast<int *>(nvshmem_calloc(2, sizeof(int)));
  int *bcast = static_cast<int *>(nvshmem_calloc(2, sizeof(int)));
  void *cargs[] = {&src, &fc_thread, &fc_block, &sum_thread, &sum_block, &max_warp, &bcast};
  EXPECT(nvshmemx_collective_launch((const void *)coll_kernel, dim3(1), dim3(kThreads), cargs, 0, 0) == 0, "launch: %s",
         tshmemx_last_error());
  CUDA_OK(cudaDeviceSynchronize());
  const int tri = n * (n + 1) / 2;
  const std::vector<int> fct = to_host(fc_thread, 2 * n), fcb = to_host(fc_block, 2 * n);
  for (int k = 0; k < n; ++k) {
    EXPECT(fct[2 * k] == k + 1 && fct[2 * k + 1] == 10 * (k + 1), "fcollect thread [%d] = %d %d", k, fct[2 * k],
           fct[2 * k + 1]);
    EXPECT(fcb[2 * k] == k + 1 && fcb[2 * k + 1] == 10 * (k + 1), "fcollect block [%d] = %d %d", k, fcb[2 * k],
           fcb[2 * k + 1]);
  }
  const std::vector<int> st = to_host(sum_thread, 2), sb = to_host(sum_block, 2), mw = to_host(max_warp, 2),
                         bc = to_host(bcast, 2);
  EXPECT(st[0] == tri && st[1] == 10 * tri, "sum thread %d %d", st[0], st[1]);
  EXPECT(sb[0] == tri && sb[1] == 10 * tri, "sum block %d %d", sb[0], sb[1]);
  EXPECT(mw[0] == n && mw[1] == 10 * n, "max warp %d %d", mw[0], mw[1]);
  EXPECT(bc[0] == 1 && bc[1] == 10, "broadcast %d %d", bc[0], bc[1]);

  // ---- on-stream collectives by their typed names ----------------------------------------------------------
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int *a = static_cast<int *>(nvshmem_malloc(n * sizeof(int)));
  int *b = static_cast<int *>(nvshmem_malloc(n * sizeof(int)));
  float *fa = static_cast<float *>(nvshmem_malloc(4 * sizeof(float)));
  float *fb = static_cast<float *>(nvshmem_malloc(4 * sizeof(float)));
  std::vector<int> ah(n);
  for (int k = 0; k < n; ++k) ah[k] = 100 * me + k;
  const float fh[4] = {1.0f * me, -1.0f * me, 0.5f, 2.0f * me};
  CUDA_OK(cudaMemcpy(a, ah.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(fa, fh, sizeof fh, cudaMemcpyHostToDevice));
  EXPECT(nvshmemx_barrier_all_on_stream(stream) == 0, "%s", tshmemx_last_error());
  EXPECT(nvshmemx_int_sum_reduce_on_stream(world, b, a, 1, stream) == 0, "%s", tshmemx_last_error());
  EXPECT(nvshmemx_float_max_reduce_on_stream(world, fb, fa, 4, stream) == 0, "%s", tshmemx_last_error());
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(to_host(b, 1)[0] == 100 * tri - 100 * n, "int sum on stream %d", to_host(b, 1)[0]);
  const std::vector<float> fm = to_host(fb, 4);
  EXPECT(fm[0] == n - 1.0f && fm[1] == 0.0f && fm[2] == 0.5f && fm[3] == 2.0f * (n - 1), "float max %g %g %g %g", fm[0],
         fm[1], fm[2], fm[3]);
  EXPECT(nvshmemx_sync_all_on_stream(stream) == 0, "%s", tshmemx_last_error());
  EXPECT(nvshmemx_int_alltoall_on_stream(world, b, a, 1, stream) == 0, "%s", tshmemx_last_error());
  CUDA_OK(cudaStreamSynchronize(stream));
  const std::vector<int> at = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(at[k] == 100 * k + me, "alltoall [%d] = %d", k, at[k]);
  EXPECT(nvshmemx_int_fcollect_on_stream(world, b, a, 1, stream) == 0, "%s", tshmemx_last_error());
  CUDA_OK(cudaStreamSynchronize(stream));
  const std::vector<int> ft = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(ft[k] == 100 * k, "fcollect on stream [%d] = %d", k, ft[k]);
  EXPECT(nvshmemx_int_broadcast_on_stream(world, b, a, n, n - 1, stream) == 0, "%s", tshmemx_last_error());
  EXPECT(nvshmemx_barrier_on_stream(world, stream) == 0, "%s", tshmemx_last_error());
  CUDA_OK(cudaStreamSynchronize(stream));
  const std::vector<int> bt = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(bt[k] == 100 * (n - 1) + k, "broadcast on stream [%d] = %d", k, bt[k]);
  // A bad argument is refused with tshmem's message (a count of 0 elements).
  EXPECT(nvshmemx_int_sum_reduce_on_stream(world, b, a, 0, stream) == TSHMEM_ERR_INVALID_ARG, "count 0 accepted");
  // A bitwise operator on a float type is refused with the rule.
  EXPECT(tshmemx_allreduce_on_stream(world, fb, fa, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_XOR, stream) ==
                 TSHMEM_ERR_INVALID_ARG &&
             std::strstr(tshmemx_last_error(), "needs an integer dtype") != nullptr,
         "xor on float: %s", tshmemx_last_error());
  CUDA_OK(cudaStreamDestroy(stream));

  // ---- reductions added later: double, prod, and/or/xor, unsigned min/max ------------------------------------
  // Values whose results tell the operators apart; unsigned values above INT_MAX, where a signed compare errs.
  const double dval = 1.5 + me;
  const unsigned uval = 0x80000000u + static_cast<unsigned>(me);
  const int ival = (1 << me) | 0x100;
  const long long llval = -2 - me;
  const uint64_t u64val = uint64_t{1} << (40 + me);
  const float fval = 0.5f * static_cast<float>(me + 1);
  double dprod_ref = 1, dsum_ref = 0;
  long long llprod_ref = 1;
  float fprod_ref = 1;
  int xor_ref = 0, or_ref = 0, and_ref = -1;
  uint64_t u64or_ref = 0;
  for (int k = 0; k < n; ++k) {
    dsum_ref += 1.5 + k;
    dprod_ref *= 1.5 + k;
    llprod_ref *= -2 - k;
    fprod_ref *= 0.5f * static_cast<float>(k + 1);
    xor_ref ^= (1 << k) | 0x100;
    or_ref |= (1 << k) | 0x100;
    and_ref &= (1 << k) | 0x100;
    u64or_ref |= uint64_t{1} << (40 + k);
  }
  double *dsrc = static_cast<double *>(nvshmem_malloc(sizeof(double)));
  unsigned *usrc = static_cast<unsigned *>(nvshmem_malloc(sizeof(unsigned)));
  int *isrc = static_cast<int *>(nvshmem_malloc(sizeof(int)));
  long long *llsrc = static_cast<long long *>(nvshmem_malloc(sizeof(long long)));
  uint64_t *u64src = static_cast<uint64_t *>(nvshmem_malloc(sizeof(uint64_t)));
  float *fsrc = static_cast<float *>(nvshmem_malloc(sizeof(float)));
  RedOut *rout = static_cast<RedOut *>(nvshmem_calloc(1, sizeof(RedOut)));
  int *part_src = static_cast<int *>(nvshmem_malloc(sizeof(int)));
  EXPECT(dsrc && usrc && isrc && llsrc && u64src && fsrc && rout && part_src, "allocation: %s", tshmemx_last_error());
  CUDA_OK(cudaMemcpy(dsrc, &dval, sizeof dval, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(usrc, &uval, sizeof uval, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(isrc, &ival, sizeof ival, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(llsrc, &llval, sizeof llval, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(u64src, &u64val, sizeof u64val, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(fsrc, &fval, sizeof fval, cudaMemcpyHostToDevice));
  const int part_val = 10 + me;
  CUDA_OK(cudaMemcpy(part_src, &part_val, sizeof part_val, cudaMemcpyHostToDevice));
  // A split team of PEs 1 .. n-1 (PE 0 alone at 1 PE): members run a block-form collective on it in the same
  // kernel as world ones; its barrier words are its own, so the two never mix.
  nvshmem_team_t part = NVSHMEM_TEAM_INVALID;
  const int part_start = n > 1 ? 1 : 0, part_size = n > 1 ? n - 1 : 1;
  EXPECT(nvshmem_team_split_strided(world, part_start, 1, part_size, nullptr, 0, &part) == 0, "split: %s",
         tshmemx_last_error());
  nvshmem_barrier_all();
  void *rargs[] = {&dsrc, &usrc, &isrc, &llsrc, &u64src, &fsrc, &rout, &part, &part_src};
  EXPECT(nvshmemx_collective_launch((const void *)more_reduce_kernel, dim3(1), dim3(kThreads), rargs, 0, 0) == 0,
         "launch: %s", tshmemx_last_error());
  CUDA_OK(cudaDeviceSynchronize());
  RedOut r{};
  CUDA_OK(cudaMemcpy(&r, rout, sizeof r, cudaMemcpyDeviceToHost));
  EXPECT(r.dsum == dsum_ref && r.dprod == dprod_ref, "double sum/prod %g %g", r.dsum, r.dprod);
  EXPECT(r.umax == 0x80000000u + static_cast<unsigned>(n - 1) && r.umin == 0x80000000u, "uint max/min %x %x", r.umax,
         r.umin);
  EXPECT(r.ixor == xor_ref && r.iand == and_ref && r.ior == or_ref, "int xor/and/or %x %x %x", r.ixor, r.iand, r.ior);
  EXPECT(r.llprod == llprod_ref && r.u64or == u64or_ref && r.fprod == fprod_ref, "prod/or %lld %llx %g", r.llprod,
         static_cast<unsigned long long>(r.u64or), r.fprod);
  int part_ref = 0;
  for (int k = part_start; k < part_start + part_size; ++k) part_ref += 10 + k;
  if (part != NVSHMEM_TEAM_INVALID) {
    EXPECT(r.part_sum == part_ref, "split-team block sum %d", r.part_sum);
    EXPECT(r.part_max == 10 + part_start + part_size - 1, "split-team thread max %d", r.part_max);
    for (int k = 0; k < part_size; ++k)
      EXPECT(r.part_fc[k] == 10 + part_start + k, "split-team warp fcollect [%d] = %d", k, r.part_fc[k]);
  }

  // ---- on-stream: new operators, and split teams interleaved with the world team ------------------------------
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double *ddst = static_cast<double *>(nvshmem_malloc(sizeof(double)));
  unsigned *udst = static_cast<unsigned *>(nvshmem_malloc(sizeof(unsigned)));
  int *idst = static_cast<int *>(nvshmem_malloc(sizeof(int)));
  int *part_dst = static_cast<int *>(nvshmem_calloc(static_cast<size_t>(n) + 1, sizeof(int)));
  EXPECT(nvshmemx_double_min_reduce_on_stream(world, ddst, dsrc, 1, stream) == 0, "%s", tshmemx_last_error());
  if (part != NVSHMEM_TEAM_INVALID) {
    EXPECT(nvshmemx_int_sum_reduce_on_stream(part, part_dst, part_src, 1, stream) == 0, "%s", tshmemx_last_error());
    EXPECT(nvshmemx_barrier_on_stream(part, stream) == 0, "%s", tshmemx_last_error());
  }
  EXPECT(nvshmemx_uint32_max_reduce_on_stream(world, udst, usrc, 1, stream) == 0, "%s", tshmemx_last_error());
  if (part != NVSHMEM_TEAM_INVALID) {
    EXPECT(nvshmemx_int_fcollect_on_stream(part, part_dst + 1, part_src, 1, stream) == 0, "%s", tshmemx_last_error());
  }
  EXPECT(nvshmemx_int_and_reduce_on_stream(world, idst, isrc, 1, stream) == 0, "%s", tshmemx_last_error());
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT(to_host(ddst, 1)[0] == 1.5, "double min on stream %g", to_host(ddst, 1)[0]);
  EXPECT(to_host(udst, 1)[0] == 0x80000000u + static_cast<unsigned>(n - 1), "uint32 max on stream %x",
         to_host(udst, 1)[0]);
  EXPECT(to_host(idst, 1)[0] == and_ref, "int and on stream %x", to_host(idst, 1)[0]);
  if (part != NVSHMEM_TEAM_INVALID) {
    const std::vector<int> pd = to_host(part_dst, static_cast<size_t>(part_size) + 1);
    EXPECT(pd[0] == part_ref, "split-team sum on stream %d", pd[0]);
    for (int k = 0; k < part_size; ++k)
      EXPECT(pd[1 + k] == 10 + part_start + k, "split-team fcollect [%d] = %d", k, pd[1 + k]);
  }
  // The split team destroyed and split again reuses the handle: its barrier words start from zero again.
  if (part != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(part);
  nvshmem_team_t again = NVSHMEM_TEAM_INVALID;
  EXPECT(nvshmem_team_split_strided(world, part_start, 1, part_size, nullptr, 0, &again) == 0, "split again: %s",
         tshmemx_last_error());
  EXPECT(again == part, "handle reused: %d then %d", part, again);
  if (again != NVSHMEM_TEAM_INVALID) {
    EXPECT(nvshmemx_int_sum_reduce_on_stream(again, part_dst, part_src, 1, stream) == 0, "%s", tshmemx_last_error());
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT(to_host(part_dst, 1)[0] == part_ref, "split-team sum after reuse %d", to_host(part_dst, 1)[0]);
    nvshmem_team_destroy(again);
  }
  CUDA_OK(cudaStreamDestroy(stream));

  // ---- registered buffers ----------------------------------------------------------------------------------------
  registered_buffers(me, n);

  // ---- every reduction name, host and device forms ----------------------------------------------------------------
  const int reductions = every_reduction(me, n);
  EXPECT(reductions == 97, "%d reduction names ran, 97 expected", reductions);

  // ---- host-blocking collectives by the shared names -----------------------------------------------------------
  nvshmem_barrier_all();
  EXPECT(nvshmem_barrier(world) == 0, "host barrier: %s", tshmemx_last_error());
  EXPECT(nvshmem_double_prod_reduce(world, ddst, dsrc, 1) == 0, "%s", tshmemx_last_error());
  EXPECT(to_host(ddst, 1)[0] == dprod_ref, "host double prod %g", to_host(ddst, 1)[0]);
  EXPECT(nvshmem_uint_min_reduce(world, udst, usrc, 1) == 0, "%s", tshmemx_last_error());
  EXPECT(to_host(udst, 1)[0] == 0x80000000u, "host uint min %x", to_host(udst, 1)[0]);
  EXPECT(nvshmem_int_xor_reduce(world, idst, isrc, 1) == 0, "%s", tshmemx_last_error());
  EXPECT(to_host(idst, 1)[0] == xor_ref, "host int xor %x", to_host(idst, 1)[0]);
  EXPECT(nvshmem_int_sum_reduce(world, b, a, n) == 0, "%s", tshmemx_last_error());
  const std::vector<int> hs = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(hs[k] == 100 * (tri - n) + n * k, "host int sum [%d] = %d", k, hs[k]);
  EXPECT(nvshmem_int_fcollect(world, b, a, 1) == 0, "%s", tshmemx_last_error());
  const std::vector<int> hf = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(hf[k] == 100 * k, "host fcollect [%d] = %d", k, hf[k]);
  EXPECT(nvshmem_int_alltoall(world, b, a, 1) == 0, "%s", tshmemx_last_error());
  const std::vector<int> ha = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(ha[k] == 100 * k + me, "host alltoall [%d] = %d", k, ha[k]);
  EXPECT(nvshmem_int_broadcast(world, b, a, n, n - 1) == 0, "%s", tshmemx_last_error());
  const std::vector<int> hb = to_host(b, n);
  for (int k = 0; k < n; ++k) EXPECT(hb[k] == 100 * (n - 1) + k, "host broadcast [%d] = %d", k, hb[k]);
  // A split team of every PE takes the host forms too.
  nvshmem_team_t all = NVSHMEM_TEAM_INVALID;
  EXPECT(nvshmem_team_split_strided(world, 0, 1, n, nullptr, 0, &all) == 0, "split: %s", tshmemx_last_error());
  EXPECT(nvshmem_int_max_reduce(all, idst, isrc, 1) == 0, "%s", tshmemx_last_error());
  EXPECT(to_host(idst, 1)[0] == ((1 << (n - 1)) | 0x100), "host max on a split team %x", to_host(idst, 1)[0]);
  EXPECT(nvshmem_barrier(all) == 0, "%s", tshmemx_last_error());
  nvshmem_team_destroy(all);
  // Bad input: the same error on every PE, nothing launched, and the next call works.
  EXPECT(nvshmem_int_sum_reduce(world, nullptr, a, 1) == TSHMEM_ERR_INVALID_ARG &&
             std::strstr(tshmemx_last_error(), "dst is NULL") != nullptr,
         "NULL dst: %s", tshmemx_last_error());
  EXPECT(nvshmem_int_sum_reduce(world, b, a, 0) == TSHMEM_ERR_INVALID_ARG &&
             std::strstr(tshmemx_last_error(), "count is 0") != nullptr,
         "count 0: %s", tshmemx_last_error());
  if (n > 1) {  // divergent counts: every PE names the last PE
    const int rc = nvshmem_int_sum_reduce(world, b, a, me == n - 1 ? 2 : 1);
    char expect[64];
    std::snprintf(expect, sizeof expect, "divergent PE %d.", n - 1);
    EXPECT(rc == TSHMEM_ERR_ASYMMETRIC && std::strstr(tshmemx_last_error(), expect) != nullptr, "divergent: %d %s", rc,
           tshmemx_last_error());
  }
  EXPECT(nvshmem_barrier(world) == 0, "host barrier after the errors: %s", tshmemx_last_error());

  nvshmem_barrier_all();
  for (void *p : {(void *)dsrc, (void *)usrc, (void *)isrc, (void *)llsrc, (void *)u64src, (void *)fsrc, (void *)rout,
                  (void *)part_src, (void *)ddst, (void *)udst, (void *)idst, (void *)part_dst})
    nvshmem_free(p);
  for (void *p : {(void *)slot, (void *)block_dst, (void *)block_src, (void *)sig, (void *)counter, (void *)out,
                  (void *)src, (void *)fc_thread, (void *)fc_block, (void *)sum_thread, (void *)sum_block,
                  (void *)max_warp, (void *)bcast, (void *)a, (void *)b, (void *)fa, (void *)fb})
    nvshmem_free(p);
  nvshmem_finalize();
  if (failures == 0) std::printf("PASS: PE %d of %d\n", me, n);
  return failures == 0 ? 0 : 1;
}
