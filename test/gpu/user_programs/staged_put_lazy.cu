// A user's program, built with plain nvcc, in the arrangement where the origin's proxy must make no CUDA call:
// CUDA started before tshmem_init (so it loads modules lazily), and while PE 0's sender kernel (putmem_signal_nbi
// + quiet to PE 1, on another node) waits for its proxy, PE 0's host thread launches for the first time a kernel
// of a unit that does not include tshmem (plain_kernel.cu). That launch loads its module, and the load waits for
// the sender kernel to end: a proxy that copied the put's payload out of the GPU heap with CUDA would be held by
// the load until TSHMEM_PROXY_TIMEOUT_MS; a payload the kernel staged itself (up to TSHMEM_PROXY_STAGE_MAX) is
// sent with none. PE 1 waits for the signal and checks every byte (its process loads nothing meanwhile). With
// `get`, PE 0's kernel gets the bytes from PE 1 instead (a get the kernel reads out of the staging) and checks them.
//   staged_put_lazy <put|get> <thread|warp|block> <bytes> <source offset>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <tshmem/tshmem.h>
#include <tshmem/device/tshmem_device.cuh>

cudaError_t launch_plain(int *counter, cudaStream_t stream);  // plain_kernel.cu

/// Lets the host thread reach the plain kernel's launch (and its module load) before the put is posted.
__device__ void pause_ns(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

template <typename Scope>
__global__ void send(char *dst, const char *src, size_t bytes, uint64_t *sig, int pe) {
  pause_ns(300ull * 1000 * 1000);
  tshmem::putmem_signal_nbi<Scope>(dst, src, bytes, sig, 1, TSHMEM_SIGNAL_SET, pe);
  tshmem::quiet();
}

template <typename Scope>
__global__ void fetch(char *dst, const char *src, size_t bytes, int pe) {
  pause_ns(300ull * 1000 * 1000);
  tshmem::getmem<Scope>(dst, src, bytes, pe);
}

__global__ void wait_for(uint64_t *sig) {
  if (threadIdx.x == 0) tshmem::signal_wait_until(sig, TSHMEM_CMP_EQ, 1);
}

__global__ void fill(char *p, size_t bytes) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x)
    p[i] = static_cast<char>(i * 7 + 3);
}

__global__ void check(const char *p, size_t bytes, int *bad) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x)
    if (p[i] != static_cast<char>(i * 7 + 3)) atomicAdd(bad, 1);
}

#define CHECK(call)                                                                            \
  do {                                                                                         \
    cudaError_t rc_ = (call);                                                                  \
    if (rc_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "PE %d: %s: %s\n", tshmem_my_pe(), #call, cudaGetErrorString(rc_)); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: staged_put_lazy <put|get> <thread|warp|block> <bytes> <source offset>\n");
    return 2;
  }
  const bool get = std::strcmp(argv[1], "get") == 0;
  const char *scope = argv[2];
  const size_t bytes = std::strtoull(argv[3], nullptr, 10), offset = std::strtoull(argv[4], nullptr, 10);
  cudaFree(nullptr);  // CUDA starts before tshmem, loading lazily (CUDA_MODULE_LOADING unset or LAZY)
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "%s\n", tshmemx_last_error());
    return 1;
  }
  const int me = tshmem_my_pe();
  if (tshmem_n_pes() != 2 || tshmem_team_n_pes(TSHMEMX_TEAM_NODE) != 1) {
    std::fprintf(stderr, "needs 2 PEs on 2 nodes (TSHMEM_DEBUG_NODE_SIZE=1)\n");
    return 1;
  }
  char *dst = static_cast<char *>(tshmem_malloc(bytes));
  char *src = static_cast<char *>(tshmem_malloc(bytes + offset));
  uint64_t *sig = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  int *counter = nullptr;
  CHECK(cudaMalloc(&counter, sizeof(int)));
  CHECK(cudaMemset(counter, 0, sizeof(int)));
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  fill<<<8, 256, 0, a>>>(src + offset, bytes);
  CHECK(cudaStreamSynchronize(a));
  tshmem_barrier_all();  // waits for this PE's kernels (tshmem_quiet): the waiting kernel starts after it
  if (me == 1 && !get) wait_for<<<1, 32, 0, a>>>(sig);
  int wrong = 0;
  if (get && me == 0) {  // PE 0 gets PE 1's source into dst, with the same first launch meanwhile
    if (std::strcmp(scope, "thread") == 0) fetch<tshmem::thread_scope><<<1, 1, 0, a>>>(dst, src + offset, bytes, 1);
    if (std::strcmp(scope, "warp") == 0) fetch<tshmem::warp_scope><<<1, 32, 0, a>>>(dst, src + offset, bytes, 1);
    if (std::strcmp(scope, "block") == 0) fetch<tshmem::block_scope><<<1, 256, 0, a>>>(dst, src + offset, bytes, 1);
    CHECK(launch_plain(counter, b));
    CHECK(cudaDeviceSynchronize());
    int *bad = nullptr;
    CHECK(cudaMalloc(&bad, sizeof(int)));
    CHECK(cudaMemset(bad, 0, sizeof(int)));
    check<<<8, 256, 0, a>>>(dst, bytes, bad);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(&wrong, bad, sizeof(int), cudaMemcpyDeviceToHost));
  } else if (get) {
    // PE 1 serves the get with its proxy; its process launches nothing meanwhile
  } else if (me == 0) {
    if (std::strcmp(scope, "thread") == 0) send<tshmem::thread_scope><<<1, 1, 0, a>>>(dst, src + offset, bytes, sig, 1);
    if (std::strcmp(scope, "warp") == 0) send<tshmem::warp_scope><<<1, 32, 0, a>>>(dst, src + offset, bytes, sig, 1);
    if (std::strcmp(scope, "block") == 0) send<tshmem::block_scope><<<1, 256, 0, a>>>(dst, src + offset, bytes, sig, 1);
    CHECK(launch_plain(counter, b));  // the first launch: its module loads while the sender waits
    CHECK(cudaDeviceSynchronize());
    int plain = 0;
    CHECK(cudaMemcpy(&plain, counter, sizeof(int), cudaMemcpyDeviceToHost));
    if (plain != 1) wrong = 1;
  } else {
    int *bad = counter;
    check<<<8, 256, 0, a>>>(dst, bytes, bad);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(&wrong, bad, sizeof(int), cudaMemcpyDeviceToHost));
  }
  std::printf("PE %d: %s %s of %zu bytes (source offset %zu) done, %d bytes wrong\n", me, scope, argv[1], bytes, offset,
              wrong);
  tshmem_barrier_all();
  tshmem_free(sig);
  tshmem_free(src);
  tshmem_free(dst);
  tshmem_finalize();
  return wrong == 0 ? 0 : 1;
}
