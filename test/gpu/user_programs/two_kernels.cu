// A user's program, built with plain nvcc: each PE sends to the next PE and waits for the previous one in two
// kernels (a sender kernel, then a receiver kernel), the way an expert-parallel dispatch is written. Every size,
// every scope (each a kernel launched for the first time while the other PEs' kernels run), on the legacy
// stream and on two non-blocking streams. Across nodes (TSHMEM_DEBUG_NODE_SIZE) this hung before tshmem loaded
// kernels ahead of the proxy's waits.
//   two_kernels [cuda-first]   cuda-first: the program starts CUDA before tshmem_init (CUDA loads lazily then)
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include <tshmem/tshmem.h>
#include <tshmem/device/tshmem_device.cuh>

template <typename Scope>
__global__ void send(char *dst, const char *src, size_t bytes, uint64_t *sig, uint64_t v, int pe) {
  tshmem::putmem_signal_nbi<Scope>(dst, src, bytes, sig, v, TSHMEM_SIGNAL_SET, pe);
  tshmem::quiet();
}

__global__ void wait_for(uint64_t *sig, uint64_t v) {
  if (threadIdx.x == 0) tshmem::signal_wait_until(sig, TSHMEM_CMP_EQ, v);
}

__global__ void fill(char *p, size_t bytes, int pe, uint64_t round) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x)
    p[i] = static_cast<char>(pe * 31 + round * 7 + i);
}

__global__ void check(const char *p, size_t bytes, int pe, uint64_t round, int *bad) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes; i += gridDim.x * blockDim.x)
    if (p[i] != static_cast<char>(pe * 31 + round * 7 + i)) atomicAdd(bad, 1);
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
  if (argc > 1 && std::strcmp(argv[1], "cuda-first") == 0) cudaFree(nullptr);  // CUDA starts before tshmem
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "%s\n", tshmemx_last_error());
    return 1;
  }
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int node = tshmem_team_n_pes(TSHMEMX_TEAM_NODE);
  const int stride = node < n ? node : 1;  // the next PE on another node where there is one
  const int next = (me + stride) % n, prev = (me - stride + n) % n;
  const size_t sizes[] = {8, 4096, 1 << 20, (1 << 20) + 3};
  char *dst = static_cast<char *>(tshmem_malloc((1 << 20) + 3));
  char *src = static_cast<char *>(tshmem_malloc((1 << 20) + 3));
  uint64_t *sig = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  int *bad = nullptr;
  CHECK(cudaMalloc(&bad, sizeof(int)));
  CHECK(cudaMemset(bad, 0, sizeof(int)));
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  tshmem_barrier_all();
  uint64_t round = 0;
  int rounds = 0;
  for (int streams = 0; streams < 2; ++streams)
    for (int scope = 0; scope < 3; ++scope)
      for (size_t bytes : sizes) {
        ++round;
        cudaStream_t s1 = streams ? a : cudaStreamLegacy, s2 = streams ? b : cudaStreamLegacy;
        fill<<<8, 256, 0, s1>>>(src, bytes, me, round);
        if (scope == 0) send<tshmem::thread_scope><<<1, 1, 0, s1>>>(dst, src, bytes, sig, round, next);
        if (scope == 1) send<tshmem::warp_scope><<<1, 32, 0, s1>>>(dst, src, bytes, sig, round, next);
        if (scope == 2) send<tshmem::block_scope><<<1, 256, 0, s1>>>(dst, src, bytes, sig, round, next);
        wait_for<<<1, 32, 0, s2>>>(sig, round);
        check<<<8, 256, 0, s2>>>(dst, bytes, prev, round, bad);
        CHECK(cudaDeviceSynchronize());
        tshmem_barrier_all();  // the next round overwrites dst: everyone has checked this one
        ++rounds;
      }
  int host_bad = -1;
  CHECK(cudaMemcpy(&host_bad, bad, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("PE %d of %d (next %d): %d rounds done, %d bytes wrong%s\n", me, n, next, rounds, host_bad,
              argc > 1 ? " (CUDA started first)" : "");
  tshmem_free(sig);
  tshmem_free(src);
  tshmem_free(dst);
  tshmem_finalize();
  return host_bad == 0 ? 0 : 1;
}
