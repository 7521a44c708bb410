// put_signal: the data is visible when the signal is (SET and ADD, every scope, blocking and _nbi), in a
// ping-pong of many rounds where each round overwrites the previous data; wait_until with every comparison
// operator on int32, uint32, int64 and uint64.
#include "device_test_util.h"
#include "tshmem/device/tshmem_device.cuh"

namespace {

constexpr int kRounds = 200;
constexpr int kRoundsAcrossNodes = 12;  // see job_spans_nodes()
constexpr size_t kWords = 4099;         // odd: a tail after the vector body

__device__ unsigned word_of(size_t i, int round, int pe) {
  return static_cast<unsigned>(i * 2654435761u + round * 97 + pe);
}

/// Block 0 sends rounds to `next`; block 1 receives rounds from `prev`, checks every word, and acks. The
/// ack (an atomic add on the sender's ack word) lets the sender overwrite the data in the next round.
template <class Scope>
__global__ void ping_pong(unsigned *data, unsigned *staging, uint64_t *sig, uint64_t *ack, int sig_op, bool nbi,
                          int next, int prev, int round_count, int *errors) {
  const int me = tshmem::my_pe();
  const bool warp_only = std::is_same_v<Scope, tshmem::warp_scope>;
  const bool thread_only = std::is_same_v<Scope, tshmem::thread_scope>;
  if (blockIdx.x == 0) {
    if ((warp_only && threadIdx.x >= 32) || (thread_only && threadIdx.x != 0)) return;
    for (int r = 1; r <= round_count; ++r) {
      if (r > 1) tshmem::signal_wait_until(ack, TSHMEM_CMP_GE, static_cast<uint64_t>(r - 1));
      if (std::is_same_v<Scope, tshmem::block_scope>) __syncthreads();
      const unsigned rank = thread_only ? 0 : threadIdx.x, size = thread_only ? 1 : (warp_only ? 32 : blockDim.x);
      for (size_t i = rank; i < kWords; i += size) staging[i] = word_of(i, r, me);
      if (!thread_only) {
        if (warp_only)
          __syncwarp();
        else
          __syncthreads();
      }
      const uint64_t value = sig_op == TSHMEM_SIGNAL_SET ? static_cast<uint64_t>(r) : 1;
      if (nbi)
        tshmem::put_signal_nbi<Scope>(data, staging, kWords, sig, value, sig_op, next);
      else
        tshmem::put_signal<Scope>(data, staging, kWords, sig, value, sig_op, next);
    }
  } else if (threadIdx.x == 0) {
    for (int r = 1; r <= round_count; ++r) {
      tshmem::signal_wait_until(sig, TSHMEM_CMP_GE, static_cast<uint64_t>(r));
      int bad = 0;
      for (size_t i = 0; i < kWords; ++i) bad += data[i] != word_of(i, r, prev);
      if (bad) atomicAdd(errors, bad);
      tshmem::atomic_add(ack, uint64_t{1}, prev);  // the ack word lives on the sender
    }
  }
}

class DeviceSignal : public ::testing::TestWithParam<int> {};  // scope * 4 + op * 2 + nbi

TEST_P(DeviceSignal, DataVisibleWithSignal) {
  TSHMEM_REQUIRE_GPU();
  const int scope = GetParam() / 4, sig_op = (GetParam() / 2) % 2 ? TSHMEM_SIGNAL_ADD : TSHMEM_SIGNAL_SET;
  const bool nbi = GetParam() % 2;
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  tshmem_device_test::SymBuffer data(kWords * 4), staging(kWords * 4), sig(8), ack(8), errors(4);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  auto *d = data.get<unsigned>();
  auto *s = staging.get<unsigned>();
  auto *g = sig.get<uint64_t>();
  auto *a = ack.get<uint64_t>();
  auto *e = errors.get<int>();
  const int round_count = tshmem_device_test::job_spans_nodes() ? kRoundsAcrossNodes : kRounds;
  if (scope == 0) ping_pong<tshmem::thread_scope><<<2, 128>>>(d, s, g, a, sig_op, nbi, next, prev, round_count, e);
  if (scope == 1) ping_pong<tshmem::warp_scope><<<2, 128>>>(d, s, g, a, sig_op, nbi, next, prev, round_count, e);
  if (scope == 2) ping_pong<tshmem::block_scope><<<2, 128>>>(d, s, g, a, sig_op, nbi, next, prev, round_count, e);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  int host_errors = -1;
  uint64_t host_sig = 0;
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&host_errors, e, 4, cudaMemcpyDeviceToHost));
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&host_sig, g, 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host_errors, 0) << "words seen before their signal";
  EXPECT_EQ(host_sig, static_cast<uint64_t>(round_count));
  tshmem_barrier_all();
}

std::string signal_case_name(const ::testing::TestParamInfo<int> &i) {
  const char *scope[] = {"Thread", "Warp", "Block"};
  return std::string(scope[i.param / 4]) + ((i.param / 2) % 2 ? "Add" : "Set") + (i.param % 2 ? "Nbi" : "");
}
INSTANTIATE_TEST_SUITE_P(ScopesOpsNbi, DeviceSignal, ::testing::Range(0, 12), signal_case_name);

// ---- wait_until ------------------------------------------------------------------------------------------

/// Block 1 sets `*ivar = final` (after a delay) on this PE; block 0 waits for `*ivar cmp target`.
template <class T>
__global__ void wait_kernel(T *ivar, int cmp, T target, T final, T *found) {
  if (blockIdx.x == 1 && threadIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < 100000) {
    }
    tshmem::atomic_set(ivar, final, tshmem::my_pe());
  } else if (blockIdx.x == 0 && threadIdx.x == 0) {
    const bool before = tshmem::test(ivar, cmp, target);
    *found = tshmem::wait_until(ivar, cmp, target);
    if (before) *found = T(0);  // the condition must not hold before block 1 writes
  }
}

template <class T>
class DeviceWait : public ::testing::Test {};
using WaitTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t>;
TYPED_TEST_SUITE(DeviceWait, WaitTypes);

TYPED_TEST(DeviceWait, EveryComparison) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  struct Cmp {
    int op;
    T init, target, final;
  };
  std::vector<Cmp> cmps = {{TSHMEM_CMP_EQ, 0, 5, 5}, {TSHMEM_CMP_NE, 0, 0, 7},  {TSHMEM_CMP_GT, 0, 4, 5},
                           {TSHMEM_CMP_GE, 0, 5, 5}, {TSHMEM_CMP_LT, 10, 5, 3}, {TSHMEM_CMP_LE, 10, 5, 5}};
  if constexpr (std::is_signed_v<T>) {
    cmps.push_back({TSHMEM_CMP_LT, 0, -1, -5});  // signed comparison, not unsigned
    cmps.push_back({TSHMEM_CMP_GT, -9, -3, -2});
  } else {
    cmps.push_back({TSHMEM_CMP_GT, 1, T(~T(0) - 2), T(~T(0))});  // full width
  }
  tshmem_device_test::SymBuffer ivar(sizeof(T)), found(sizeof(T));
  for (const Cmp &c : cmps) {
    TSHMEM_CUDA_EXPECT(cudaMemcpy(ivar.get(), &c.init, sizeof(T), cudaMemcpyHostToDevice));
    wait_kernel<T><<<2, 32>>>(ivar.get<T>(), c.op, c.target, c.final, found.get<T>());
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    T host = 0;
    TSHMEM_CUDA_EXPECT(cudaMemcpy(&host, found.get(), sizeof(T), cudaMemcpyDeviceToHost));
    EXPECT_EQ(host, c.final) << "cmp " << c.op << " target " << +c.target;
  }
  tshmem_barrier_all();
}

}  // namespace
