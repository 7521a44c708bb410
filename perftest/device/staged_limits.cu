// The limits of the off-node proxy's staged path, measured in the same run as the across-node benchmarks:
// pinned device->host and host->device copy bandwidth on this PE's GPU, and MPI's host-to-host bandwidth
// between PE 0 and PE 1 (both at the proxy's chunk size and at 16 MiB). A put or get across nodes moves at
// most the smallest of the three. Run with 2 PEs:  tshmemrun -np 2 -- tshmem_staged_limits
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kRepeats = 5;

#define CHECK_CUDA(call)                                                \
  do {                                                                  \
    const cudaError_t rc_ = (call);                                     \
    if (rc_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(rc_)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                     \
    }                                                                   \
  } while (0)

// Best of kRepeats copies of `bytes` on `stream`, in GB/s.
double copy_bw(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  float best_ms = 1e30f;
  for (int r = 0; r < kRepeats; ++r) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    best_ms = std::min(best_ms, ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return static_cast<double>(bytes) / (best_ms * 1e-3) / 1e9;
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

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;  // as the across-node benchmarks: the proxy's thread level
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int me = 0, n = 0, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  int all_gpu = gpu ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (n < 2 || !all_gpu) {
    if (me == 0)
      std::printf("SKIP: staged_limits needs 2 PEs with a GPU each (PEs %d, GPU %s)\n", n, gpu ? "yes" : "no");
    MPI_Finalize();
    return 0;
  }
  const char *chunk_env = std::getenv("TSHMEM_PROXY_CHUNK");
  const size_t chunk = chunk_env != nullptr ? std::strtoull(chunk_env, nullptr, 0) : size_t{256} << 10;
  const size_t large = size_t{16} << 20;
  CHECK_CUDA(cudaSetDevice(me % devices));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *device = nullptr, *pinned = nullptr;
  CHECK_CUDA(cudaMalloc(&device, large));
  CHECK_CUDA(cudaHostAlloc(&pinned, large, cudaHostAllocDefault));
  const double d2h = copy_bw(pinned, device, large, cudaMemcpyDeviceToHost, stream);
  const double h2d = copy_bw(device, pinned, large, cudaMemcpyHostToDevice, stream);
  const double d2h_chunk = copy_bw(pinned, device, chunk, cudaMemcpyDeviceToHost, stream);
  const double h2d_chunk = copy_bw(device, pinned, chunk, cudaMemcpyHostToDevice, stream);
  const double mpi_chunk = mpi_bw(static_cast<char *>(pinned), chunk, 64, me);
  const double mpi_large = mpi_bw(static_cast<char *>(pinned), large, 8, me);
  if (me == 0) {
    std::printf("#staged path limits (off-node proxy): GB/s, best of %d\n", kRepeats);
    std::printf("%-28s %12s %12s\n", "path", "chunk", "16 MiB");
    std::printf("%-28s %12.2f %12.2f\n", "device->host (pinned)", d2h_chunk, d2h);
    std::printf("%-28s %12.2f %12.2f\n", "host->device (pinned)", h2d_chunk, h2d);
    std::printf("%-28s %12.2f %12.2f\n", "MPI host->host (PE 0->1)", mpi_chunk, mpi_large);
    const double floor = std::min({d2h, h2d, mpi_large});
    std::printf("smallest at 16 MiB: %.2f GB/s; issue 13's put_bw/get_bw target (70 %%): %.2f GB/s (chunk %zu B)\n",
                floor, 0.7 * floor, chunk);
  }
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaStreamDestroy(stream));
  MPI_Finalize();
  return 0;
}
