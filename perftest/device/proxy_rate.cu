// proxy_rate: how many 8-byte p per second PE 0 delivers to PE 1 when many threads issue them at once:
// every thread of the grid p's -n values into its own word of PE 1, then each block's thread 0 calls quiet
// (time = the kernel, all p's delivered). Rows double the blocks from 1 to -c (-t threads each). Across
// nodes (TSHMEM_DEBUG_NODE_SIZE=1) every p is a request to PE 0's off-node proxy: this is the rate one proxy
// thread sustains (the off-node path's target: >= 500 k/s). On one node it is the p rate over load/store. PE 1 checks
// that every word holds its last value.
#include <algorithm>
#include <vector>

#include "device_harness.cuh"

using namespace tshmem_perf;

namespace {

template <class O>
__global__ void p_rate_kernel(unsigned long long *words, int peer, int iters, unsigned long long base) {
  const size_t word = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int i = 0; i < iters; ++i) O::p(words + word, base + static_cast<unsigned long long>(i) + 1, peer);
  __syncthreads();
  if (threadIdx.x == 0) O::quiet();
}

// Counts the words (of `count`) of this PE that do not hold `expected`.
__global__ void count_wrong(const unsigned long long *words, size_t count, unsigned long long expected,
                            unsigned long long *wrong) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (words[i] != expected) atomicAdd(wrong, 1ull);
}

}  // namespace

int main(int argc, char **argv) {
  DeviceBench b;
  b.iterations(64, 4);  // -n: the p of each thread per launch
  b.config.ctas = 16;
  b.config.threads_per_cta = 256;
  if (!b.start(argc, argv, "proxy_rate")) return b.exit_code;

  const size_t most_words = static_cast<size_t>(b.config.ctas) * static_cast<size_t>(b.config.threads_per_cta);
  auto *words = b.alloc<unsigned long long>(most_words * sizeof(unsigned long long));
  unsigned long long *wrong = nullptr;
  PERF_CUDA(cudaMalloc(&wrong, sizeof(unsigned long long)));
  Reporter &report = b.report();
  const bool remote = Ops::host_ptr(words, b.peer) == nullptr;
  report.note(std::string(Ops::kName) + ", 8-byte p from every thread to PE 1, " + std::to_string(b.config.iters) +
              " per thread, then quiet per block (" +
              (remote ? "PE 1 on another node: every p goes through the off-node proxy" : "PE 1 on this node") + ")");
  report.header("p request rate", {"blocks x threads", "p per launch", "rate (M p/s)"});
  unsigned long long base = 0;
  bool verified = true;
  std::vector<int> shapes;  // 1, 2, 4, ... blocks, and -c itself
  for (int ctas = 1; ctas < b.config.ctas; ctas *= 2) shapes.push_back(ctas);
  shapes.push_back(b.config.ctas);
  const int warmup = std::max(b.config.warmup_iters, 0);
  for (int ctas : shapes) {
    const size_t threads = static_cast<size_t>(ctas) * static_cast<size_t>(b.config.threads_per_cta);
    const double count = static_cast<double>(threads) * b.config.iters;
    b.sync_pes();
    double rate = 0;
    if (b.me == 0) {
      if (warmup > 0) b.launch(p_rate_kernel<Ops>, ctas, b.config.threads_per_cta, words, b.peer, warmup, base);
      const float ms = b.launch(p_rate_kernel<Ops>, ctas, b.config.threads_per_cta, words, b.peer, b.config.iters,
                                base + static_cast<unsigned long long>(warmup));
      rate = ms > 0 ? count / (ms * 1e-3) / 1e6 : 0;
    }
    base += static_cast<unsigned long long>(warmup + b.config.iters);  // every word's last value, on every PE
    b.sync_pes();                                                      // PE 0's quiets: everything is in PE 1's heap
    if (b.me == 1) {
      PERF_CUDA(cudaMemsetAsync(wrong, 0, sizeof(unsigned long long), b.stream));
      count_wrong<<<32, 256, 0, b.stream>>>(words, threads, base, wrong);
      PERF_CUDA(cudaGetLastError());
      unsigned long long bad = 0;
      PERF_CUDA(cudaMemcpyAsync(&bad, wrong, sizeof(bad), cudaMemcpyDeviceToHost, b.stream));
      PERF_CUDA(cudaStreamSynchronize(b.stream));
      if (bad != 0) {
        std::fprintf(stderr, "proxy_rate: PE 1: %llu of %zu words do not hold their last p (%llu)\n", bad, threads,
                     base);
        verified = false;
      }
    }
    report.row({std::to_string(ctas) + "x" + std::to_string(b.config.threads_per_cta),
                std::to_string(static_cast<unsigned long long>(count)), fmt_double(rate, 3)});
  }
  int ok = verified ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (b.me == 0) std::printf("proxy_rate: every word verified at PE 1: %s\n", ok ? "yes" : "NO");
  PERF_CUDA(cudaFree(wrong));
  b.finish();
  return ok ? 0 : 1;
}
