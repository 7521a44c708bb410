// The limits of the off-node proxy's staged path, measured in the same run as the across-node benchmarks:
// the copies between the heap and pinned staging (device->host and host->device on a GPU; memcpy on a host
// without one, where the shm heap is host memory) and MPI's host-to-host bandwidth between PE 0 and PE 1,
// each at the proxy's chunk size and at 16 MiB. A put or get across nodes moves at most the smallest of the
// three at 16 MiB. `--sweep` adds MPI's bandwidth at every power of two from 64 KiB to 16 MiB (to choose a
// chunk size). Run with 2 PEs:  tshmemrun -np 2 -- tshmem_staged_limits [--sweep]
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kRepeats = 5;

// Best of kRepeats copies of `bytes` on `stream`, in GB/s.
double copy_bw(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  cudaEvent_t start, stop;
  PERF_CUDA(cudaEventCreate(&start));
  PERF_CUDA(cudaEventCreate(&stop));
  float best_ms = 1e30f;
  for (int r = 0; r < kRepeats; ++r) {
    PERF_CUDA(cudaEventRecord(start, stream));
    PERF_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, stream));
    PERF_CUDA(cudaEventRecord(stop, stream));
    PERF_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    PERF_CUDA(cudaEventElapsedTime(&ms, start, stop));
    best_ms = std::min(best_ms, ms);
  }
  PERF_CUDA(cudaEventDestroy(start));
  PERF_CUDA(cudaEventDestroy(stop));
  return static_cast<double>(bytes) / (best_ms * 1e-3) / 1e9;
}

// Without a GPU: best of kRepeats memcpy of `bytes` (what the proxy does between the shm heap and staging).
double memcpy_bw(void *dst, const void *src, size_t bytes) {
  double best = 1e30;
  const int iters = std::max<int>(1, static_cast<int>((size_t{64} << 20) / bytes));
  for (int r = 0; r < kRepeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      std::memcpy(dst, src, bytes);
      asm volatile("" ::: "memory");
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  return static_cast<double>(bytes) / best / 1e9;
}

// PE 0 sends `bytes` to PE 1 `iters` times (PE 1 answers with one byte at the end); best of kRepeats, GB/s.
double mpi_bw(char *buffer, size_t bytes, int iters, int me) {
  double best = 1e30;
  for (int r = 0; r < kRepeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      if (me == 0) MPI_Send(buffer, static_cast<int>(bytes), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      if (me == 1) MPI_Recv(buffer, static_cast<int>(bytes), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    char ack = 0;
    if (me == 1) MPI_Send(&ack, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    if (me == 0) MPI_Recv(&ack, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    best = std::min(best, MPI_Wtime() - t0);
  }
  MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return static_cast<double>(bytes) * iters / best / 1e9;
}

// TSHMEM_PROXY_CHUNK as the library reads it (a number with an optional K/M/G), 512 KiB when unset (the default).
size_t proxy_chunk() {
  const char *text = std::getenv("TSHMEM_PROXY_CHUNK");
  if (text == nullptr || *text == '\0') return size_t{512} << 10;
  char *end = nullptr;
  size_t value = std::strtoull(text, &end, 0);
  if (*end == 'K' || *end == 'k') value <<= 10;
  if (*end == 'M' || *end == 'm') value <<= 20;
  if (*end == 'G' || *end == 'g') value <<= 30;
  return value;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;  // as the across-node benchmarks: the proxy's thread level
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const bool sweep = argc > 1 && std::strcmp(argv[1], "--sweep") == 0;
  int me = 0, n = 0, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const bool has_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  int all_gpu = has_gpu ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const bool gpu = all_gpu != 0;
  if (n < 2) {
    if (me == 0) std::printf("SKIP: staged_limits needs 2 PEs (PEs %d)\n", n);
    MPI_Finalize();
    return 0;
  }
  const size_t chunk = proxy_chunk();
  const size_t large = size_t{16} << 20;
  double d2h = 0, h2d = 0, d2h_chunk = 0, h2d_chunk = 0;
  void *device = nullptr, *pinned = nullptr;
  cudaStream_t stream = nullptr;
  if (gpu) {
    PERF_CUDA(cudaSetDevice(me % devices));
    PERF_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PERF_CUDA(cudaMalloc(&device, large));
    PERF_CUDA(cudaHostAlloc(&pinned, large, cudaHostAllocDefault));
    d2h = copy_bw(pinned, device, large, cudaMemcpyDeviceToHost, stream);
    h2d = copy_bw(device, pinned, large, cudaMemcpyHostToDevice, stream);
    d2h_chunk = copy_bw(pinned, device, chunk, cudaMemcpyDeviceToHost, stream);
    h2d_chunk = copy_bw(device, pinned, chunk, cudaMemcpyHostToDevice, stream);
  } else {
    device = std::malloc(large);  // the shm heap's side: host memory
    pinned = std::malloc(large);
    std::memset(device, 1, large);
    std::memset(pinned, 2, large);
    d2h = memcpy_bw(pinned, device, large);
    h2d = memcpy_bw(device, pinned, large);
    d2h_chunk = memcpy_bw(pinned, device, chunk);
    h2d_chunk = memcpy_bw(device, pinned, chunk);
  }
  const double mpi_chunk =
      mpi_bw(static_cast<char *>(pinned), chunk, std::max<int>(8, static_cast<int>((size_t{64} << 20) / chunk)), me);
  const double mpi_large = mpi_bw(static_cast<char *>(pinned), large, 8, me);
  std::vector<std::pair<size_t, double>> swept;
  if (sweep)
    for (size_t bytes = size_t{64} << 10; bytes <= large; bytes *= 2)
      swept.emplace_back(bytes, mpi_bw(static_cast<char *>(pinned), bytes,
                                       std::max<int>(8, static_cast<int>((size_t{128} << 20) / bytes)), me));
  if (me == 0) {
    std::printf("#staged path limits (off-node proxy, %s): GB/s, best of %d\n", gpu ? "GPU heap" : "host heap, no GPU",
                kRepeats);
    std::printf("%-28s %12s %12s\n", "path", "chunk", "16 MiB");
    std::printf("%-28s %12.2f %12.2f\n", gpu ? "device->host (pinned)" : "heap->staging (memcpy)", d2h_chunk, d2h);
    std::printf("%-28s %12.2f %12.2f\n", gpu ? "host->device (pinned)" : "staging->heap (memcpy)", h2d_chunk, h2d);
    std::printf("%-28s %12.2f %12.2f\n", "MPI host->host (PE 0->1)", mpi_chunk, mpi_large);
    for (const auto &row : swept) std::printf("MPI host->host %10zu B %12.2f\n", row.first, row.second);
    const double floor = std::min({d2h, h2d, mpi_large});
    std::printf("smallest at 16 MiB: %.2f GB/s; the off-node put_bw/get_bw target (70 %%): %.2f GB/s (chunk %zu B)\n",
                floor, 0.7 * floor, chunk);
    // One line for scripts (scripts/offnode-perf.sh): the three limits at 16 MiB and the smallest.
    std::printf("limits_16MiB copy_out=%.3f copy_in=%.3f mpi=%.3f smallest=%.3f\n", d2h, h2d, mpi_large, floor);
  }
  if (gpu) {
    PERF_CUDA(cudaFreeHost(pinned));
    PERF_CUDA(cudaFree(device));
    PERF_CUDA(cudaStreamDestroy(stream));
  } else {
    std::free(pinned);
    std::free(device);
  }
  MPI_Finalize();
  return 0;
}
