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
  CUDA_OK(cudaStreamDestroy(stream));

  nvshmem_barrier_all();
  for (void *p : {(void *)slot, (void *)block_dst, (void *)block_src, (void *)sig, (void *)counter, (void *)out,
                  (void *)src, (void *)fc_thread, (void *)fc_block, (void *)sum_thread, (void *)sum_block,
                  (void *)max_warp, (void *)bcast, (void *)a, (void *)b, (void *)fa, (void *)fb})
    nvshmem_free(p);
  nvshmem_finalize();
  if (failures == 0) std::printf("PASS: PE %d of %d\n", me, n);
  return failures == 0 ? 0 : 1;
}
