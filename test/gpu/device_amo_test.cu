// Atomics hammered by every thread of every PE, each lane naming a different PE: exact totals for add,
// inc, fetch_add (every fetched value distinct), compare_swap loops, or/and/xor bit patterns, and swap
// (the values are conserved); fetch/set on float and double.
#include <algorithm>
#include <vector>

#include "device_test_util.h"
#include "tshmem/device/tshmem_device.cuh"

namespace {

constexpr int kBlocks = 8, kThreads = 128, kIters = 64;

/// counters[0..5] on every PE: add, inc, fetch_add, compare_swap-increment, or, xor. `seen` counts how
/// often each fetch_add ticket was handed out (local, per target PE slot).
template <class T>
__global__ void hammer(T *counters, unsigned *seen, size_t seen_len) {
  const int n = tshmem::n_pes(), me = tshmem::my_pe();
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int it = 0; it < kIters; ++it) {
    const int pe = static_cast<int>((tid + it + me) % n);  // lanes name different PEs
    tshmem::atomic_add(counters + 0, T(2), pe);
    tshmem::atomic_inc(counters + 1, pe);
    const T ticket = tshmem::atomic_fetch_add(counters + 2, T(1), pe);
    if (pe == me && static_cast<size_t>(ticket) < seen_len) atomicAdd(seen + ticket, 1u);
    T old = tshmem::atomic_fetch(counters + 3, pe);
    for (;;) {
      const T prev = tshmem::atomic_compare_swap(counters + 3, old, T(old + 1), pe);
      if (prev == old) break;
      old = prev;
    }
    const T bit = T(T(1) << ((tid + static_cast<unsigned>(it)) % (8 * sizeof(T))));
    tshmem::atomic_or(counters + 4, bit, pe);
    tshmem::atomic_fetch_xor(counters + 5, T(tid + 1), pe);
  }
}

template <class T>
class DeviceAmo : public ::testing::Test {};
using AmoTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t>;
TYPED_TEST_SUITE(DeviceAmo, AmoTypes);

TYPED_TEST(DeviceAmo, HammeredByAllPesGivesExactTotals) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const long long total_threads = kBlocks * kThreads;
  tshmem_device_test::SymBuffer counters(8 * sizeof(T)), seen(sizeof(unsigned) * total_threads * kIters * 2);
  tshmem_barrier_all();
  hammer<T><<<kBlocks, kThreads>>>(counters.get<T>(), seen.get<unsigned>(), total_threads * kIters * 2);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  // Operations landing on me: for each source PE s, threads t and iterations i with (t + i + s) % n == me.
  long long hits = 0;
  unsigned long long xor_expect = 0;
  for (int s = 0; s < n; ++s)
    for (long long t = 0; t < total_threads; ++t)
      for (int i = 0; i < kIters; ++i)
        if ((t + i + s) % n == me) {
          ++hits;
          xor_expect ^= static_cast<unsigned long long>(t + 1);
        }
  std::vector<T> host(8);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(host.data(), counters.get(), 8 * sizeof(T), cudaMemcpyDeviceToHost));
  EXPECT_EQ(host[0], T(2 * hits));
  EXPECT_EQ(host[1], T(hits));
  EXPECT_EQ(host[2], T(hits));
  EXPECT_EQ(host[3], T(hits));
  EXPECT_EQ(host[4], T(~T(0))) << "every bit set once at least";
  EXPECT_EQ(host[5], T(xor_expect));
  // The tickets that my own threads drew from my counter are distinct.
  std::vector<unsigned> tickets(static_cast<size_t>(total_threads * kIters * 2));
  TSHMEM_CUDA_EXPECT(cudaMemcpy(tickets.data(), seen.get(), tickets.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  size_t duplicates = 0;
  for (unsigned c : tickets) duplicates += c > 1;
  EXPECT_EQ(duplicates, 0u);
  tshmem_barrier_all();
}

/// Swap conserves values: every thread swaps its id+1 into one word on PE 0; the values fetched plus the
/// final value are exactly the ids 1..N and the initial 0.
template <class T>
__global__ void swapper(T *word, T *fetched) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned global = static_cast<unsigned>(tshmem::my_pe()) * gridDim.x * blockDim.x + tid;
  fetched[tid] = tshmem::atomic_swap(word, T(global + 1), 0);
}

TEST(DeviceAmoSwap, ConservesValues) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const int count = kBlocks * kThreads;
  tshmem_device_test::SymBuffer word(8), fetched(8 * count);
  swapper<uint64_t><<<kBlocks, kThreads>>>(word.get<uint64_t>(), fetched.get<uint64_t>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  std::vector<uint64_t> mine(count);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(mine.data(), fetched.get(), 8 * count, cudaMemcpyDeviceToHost));
  unsigned long long sum = 0;
  for (uint64_t v : mine) sum += v;
  std::vector<long long> sums = tshmem_test::allgather(static_cast<long long>(sum));
  uint64_t final_value = 0;
  if (me == 0) TSHMEM_CUDA_EXPECT(cudaMemcpy(&final_value, word.get(), 8, cudaMemcpyDeviceToHost));
  if (me == 0) {
    long long total = static_cast<long long>(final_value);
    for (long long s : sums) total += s;
    const long long all = static_cast<long long>(n) * count;
    EXPECT_EQ(total, all * (all + 1) / 2);
  }
  tshmem_barrier_all();
}

/// Every thread of every PE counts on PE 0: fetch_add (tickets must come out 0 .. total-1, each once) and a
/// non-fetching add. Light enough for the off-node runs, where each atomic is a proxy round trip.
__global__ void count_on_pe0(unsigned long long *counters, unsigned long long *fetched, int per_thread) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < per_thread; ++i) {
    fetched[tid * per_thread + i] = tshmem::atomic_fetch_add(counters, 1ull, 0);
    tshmem::atomic_add(counters + 1, 2ull, 0);
  }
  tshmem::quiet();
}

TEST(DeviceAmoCount, EveryPeCountsOnPe0Exactly) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  constexpr int kBlocksHere = 4, kThreadsHere = 64, kPerThread = 4;
  const int count = kBlocksHere * kThreadsHere * kPerThread;
  tshmem_device_test::SymBuffer counters(16), fetched(8 * count);
  tshmem_barrier_all();
  count_on_pe0<<<kBlocksHere, kThreadsHere>>>(counters.get<unsigned long long>(), fetched.get<unsigned long long>(),
                                              kPerThread);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  const unsigned long long total = static_cast<unsigned long long>(n) * count;
  if (me == 0) {
    unsigned long long host[2] = {};
    TSHMEM_CUDA_EXPECT(cudaMemcpy(host, counters.get(), 16, cudaMemcpyDeviceToHost));
    EXPECT_EQ(host[0], total) << "fetch_add from every thread of every PE";
    EXPECT_EQ(host[1], 2 * total) << "add from every thread of every PE";
  }
  std::vector<unsigned long long> mine(static_cast<size_t>(count)), all(static_cast<size_t>(total));
  TSHMEM_CUDA_EXPECT(cudaMemcpy(mine.data(), fetched.get(), 8 * static_cast<size_t>(count), cudaMemcpyDeviceToHost));
  MPI_Allgather(mine.data(), count, MPI_UNSIGNED_LONG_LONG, all.data(), count, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  size_t wrong = 0;
  for (size_t i = 0; i < all.size(); ++i) wrong += all[i] != i;
  EXPECT_EQ(wrong, 0u) << "fetched tickets are not 0 .. " << total - 1 << " once each";
  tshmem_barrier_all();
}

__global__ void extended(float *f, double *d, int pe, int *ok) {
  tshmem::atomic_set(f, 1.5f, pe);
  tshmem::atomic_set(d, -2.25, pe);
  tshmem::quiet();
  const float old_f = tshmem_float_atomic_swap(f, 3.0f, pe);
  const double old_d = tshmem_double_atomic_swap(d, 4.0, pe);
  *ok = old_f == 1.5f && old_d == -2.25 && tshmem::atomic_fetch(f, pe) == 3.0f &&
        tshmem_double_atomic_fetch(d, pe) == 4.0;
}

TEST(DeviceAmoExtended, FloatAndDoubleFetchSetSwap) {
  TSHMEM_REQUIRE_GPU();
  tshmem_device_test::SymBuffer f(4), d(8), ok(4);
  extended<<<1, 1>>>(f.get<float>(), d.get<double>(), tshmem_my_pe(), ok.get<int>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  int host = 0;
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&host, ok.get(), 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host, 1);
  tshmem_barrier_all();
}

}  // namespace
