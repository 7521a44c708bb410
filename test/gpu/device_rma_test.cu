// put/get/p/g on the device: every scope, blocking and _nbi, sizes from 1 B to 64 MiB with odd sizes and
// misaligned heads and tails, the standard types, and a few C names. Each PE writes to (or reads from) the
// next PE, so with 2 PEs every transfer crosses NVLink and with 1 PE it is a local copy.
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "device_test_util.h"
#include "tshmem/device/tshmem_device.cuh"

namespace {

enum class Op { kPut, kPutNbi, kGet, kGetNbi };

/// Byte `i` of the pattern that PE `pe` sends.
__host__ __device__ unsigned char pattern(size_t i, int pe) {
  return static_cast<unsigned char>((i * 131u + static_cast<size_t>(pe) * 71u + 7u) & 0xffu);
}

__global__ void fill_pattern(unsigned char *p, size_t n, int pe) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern(i, pe);
}

template <class Scope>
__device__ void transfer(Op op, void *dst, const void *src, size_t n, int pe) {
  switch (op) {
    case Op::kPut: tshmem::putmem<Scope>(dst, src, n, pe); break;
    case Op::kPutNbi:
      tshmem::putmem_nbi<Scope>(dst, src, n, pe);
      tshmem::quiet();
      break;
    case Op::kGet: tshmem::getmem<Scope>(dst, src, n, pe); break;
    case Op::kGetNbi:
      tshmem::getmem_nbi<Scope>(dst, src, n, pe);
      tshmem::quiet();
      break;
  }
}

/// Thread scope: every thread of the grid moves its own slice (odd slice length: misaligned starts).
__global__ void rma_thread(Op op, unsigned char *dst, const unsigned char *src, size_t n, int pe) {
  const size_t threads = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t slice = (n + threads - 1) / threads | 1;  // odd
  const size_t begin = tid * slice;
  if (begin >= n) return;
  const size_t len = begin + slice > n ? n - begin : slice;
  transfer<tshmem::thread_scope>(op, dst + begin, src + begin, len, pe);
}

/// Warp scope: warp w of the grid moves slice w; block scope: block b moves slice b.
template <class Scope>
__global__ void rma_group(Op op, unsigned char *dst, const unsigned char *src, size_t n, int pe) {
  const size_t groups = std::is_same_v<Scope, tshmem::warp_scope> ? gridDim.x * (blockDim.x / 32) : gridDim.x;
  const size_t g =
      std::is_same_v<Scope, tshmem::warp_scope> ? blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32 : blockIdx.x;
  const size_t slice = (n + groups - 1) / groups;
  const size_t begin = g * slice;
  if (begin >= n) return;
  const size_t len = begin + slice > n ? n - begin : slice;
  transfer<Scope>(op, dst + begin, src + begin, len, pe);
}

struct Case {
  size_t bytes;
  size_t src_off;
  size_t dst_off;
};

/// Every size class with misaligned heads and tails; across nodes (job_spans_nodes) a subset of each class.
std::vector<Case> cases(bool across_nodes) {
  std::vector<Case> out;
  const std::vector<size_t> sizes =
      across_nodes ? std::vector<size_t>{1, 3, 17, 4097, 65537, (1u << 20) + 3}
                   : std::vector<size_t>{1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 255, 256, 4097, 65537, (1u << 20) + 3};
  const std::vector<std::pair<size_t, size_t>> offs =
      across_nodes ? std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 1}, {0, 5}}
                   : std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 1}, {3, 0}, {8, 8}, {0, 5}, {4, 12}};
  for (size_t s : sizes)
    for (auto &o : offs) out.push_back({s, o.first, o.second});
  out.push_back({64u << 20, 0, 0});
  out.push_back({(64u << 20) - 13, 5, 3});
  return out;
}

constexpr size_t kMaxBytes = (64u << 20) + 64;

class DeviceRma : public ::testing::TestWithParam<int> {};  // parameter: scope 0 thread, 1 warp, 2 block

TEST_P(DeviceRma, AllSizesAlignmentsAndOps) {
  TSHMEM_REQUIRE_GPU();
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  tshmem_device_test::SymBuffer src(kMaxBytes), dst(kMaxBytes);
  std::vector<unsigned char> host(kMaxBytes);
  const int scope = GetParam();
  // Across nodes every thread's transfer is a proxy request: fewer threads keep the request count small.
  const bool across_nodes = tshmem_device_test::job_spans_nodes();
  for (Op op : {Op::kPut, Op::kPutNbi, Op::kGet, Op::kGetNbi}) {
    const bool is_put = op == Op::kPut || op == Op::kPutNbi;
    for (const Case &c : cases(across_nodes)) {
      const size_t span = std::min(kMaxBytes, c.dst_off + c.bytes + 64);  // what is written, and a margin
      TSHMEM_CUDA_EXPECT(cudaMemset(dst.get(), 0, span));
      fill_pattern<<<256, 256>>>(src.get<unsigned char>() + c.src_off, c.bytes, me);
      TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      tshmem_barrier_all();
      // A put writes next's dst from my src; a get reads prev's src into my dst. Either way my dst ends up
      // holding prev's pattern.
      unsigned char *d = dst.get<unsigned char>() + c.dst_off;
      const unsigned char *s = src.get<unsigned char>() + c.src_off;
      const int pe = is_put ? next : prev;
      const unsigned blocks = across_nodes ? 1 : c.bytes > (1u << 20) ? 32 : 2;
      if (scope == 0) rma_thread<<<blocks, across_nodes ? 32 : 128>>>(op, d, s, c.bytes, pe);
      if (scope == 1) rma_group<tshmem::warp_scope><<<blocks, 128>>>(op, d, s, c.bytes, pe);
      if (scope == 2) rma_group<tshmem::block_scope><<<blocks, 256>>>(op, d, s, c.bytes, pe);
      TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      tshmem_barrier_all();
      TSHMEM_CUDA_EXPECT(cudaMemcpy(host.data(), dst.get(), span, cudaMemcpyDeviceToHost));
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < span; ++i) {
        const bool inside = i >= c.dst_off && i < c.dst_off + c.bytes;
        const unsigned char want = inside ? pattern(i - c.dst_off, prev) : 0;
        if (host[i] != want && bad++ == 0) first = i;
      }
      EXPECT_EQ(bad, 0u) << "op " << static_cast<int>(op) << " scope " << scope << " bytes " << c.bytes << " src_off "
                         << c.src_off << " dst_off " << c.dst_off << ": first wrong byte at " << first;
      tshmem_barrier_all();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scopes, DeviceRma, ::testing::Values(0, 1, 2), [](const ::testing::TestParamInfo<int> &i) {
  return std::string(i.param == 0 ? "Thread" : i.param == 1 ? "Warp" : "Block");
});

// ---- a full block of thread-scope gets -------------------------------------------------------------------

/// Every thread gets its own slice `rounds` times, the shape of a latency kernel: the kernel's register count
/// must let it launch with 1,024 threads (at most 64 registers a thread).
__global__ void get_rounds_thread(unsigned char *dst, const unsigned char *src, size_t slice, int pe, int rounds) {
  const size_t begin = (blockIdx.x * blockDim.x + threadIdx.x) * slice;
  for (int r = 0; r < rounds; ++r) tshmem::getmem<tshmem::thread_scope>(dst + begin, src + begin, slice, pe);
}

TEST(DeviceRmaLaunch, ThreadScopeGetsFillA1024ThreadBlock) {
  TSHMEM_REQUIRE_GPU();
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int prev = (me + n - 1) % n;
  // Across nodes each get is a proxy request, 1,024 of them at once from one block: as many as the ring holds (the
  // suite also runs through a ring of 2), so every get must complete without a further ticket. Shorter slices and
  // one round there.
  const bool across_nodes = tshmem_device_test::job_spans_nodes();
  const unsigned threads = 1024;
  const size_t slice = across_nodes ? 19 : 1041, bytes = slice * threads;  // odd slices: misaligned starts
  const int rounds = across_nodes ? 1 : 3;
  tshmem_device_test::SymBuffer src(bytes + 16), dst(bytes + 16);
  fill_pattern<<<256, 256>>>(src.get<unsigned char>() + 1, bytes, me);
  TSHMEM_CUDA_EXPECT(cudaMemset(dst.get(), 0, bytes + 16));
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  get_rounds_thread<<<1, threads>>>(dst.get<unsigned char>() + 1, src.get<unsigned char>() + 1, slice, prev, rounds);
  const cudaError_t launched = cudaGetLastError();
  ASSERT_EQ(launched, cudaSuccess) << "a " << threads << "-thread kernel of thread-scope getmem did not launch: "
                                   << cudaGetErrorString(launched);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  std::vector<unsigned char> host(bytes + 16);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(host.data(), dst.get(), bytes + 16, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < bytes + 16; ++i) {
    const bool inside = i >= 1 && i < 1 + bytes;
    if (host[i] != (inside ? pattern(i - 1, prev) : 0)) ++bad;
  }
  EXPECT_EQ(bad, 0u) << "bytes of " << bytes << " wrong after the " << threads << " threads' gets";
  tshmem_barrier_all();
}

// ---- p/g and typed put/get over the standard types ---------------------------------------------------------

template <class T>
__host__ __device__ T value_of(size_t i, int pe) {
  return static_cast<T>((i * 7 + static_cast<size_t>(pe) * 3 + 1) % 100);
}

/// Thread i: p of element i to `pe`, typed put of the second half, then (after the host barrier) g back.
template <class T>
__global__ void typed_put(T *dst, T *src, size_t n, int me, int pe) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    src[i] = value_of<T>(i, me);
    tshmem::p(dst + i, value_of<T>(i, me), pe);
  }
  __syncthreads();
  tshmem::put<tshmem::block_scope>(dst + n, src, n, pe);
  tshmem::quiet();
}

template <class T>
__global__ void typed_get(T *out, const T *dst, size_t n, int pe, int *mismatches) {
  for (size_t i = threadIdx.x; i < 2 * n; i += blockDim.x) {
    const T v = tshmem::g(dst + i, pe);  // `pe` (the next PE) holds what I put there
    out[i] = v;
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < 2 * n; i += blockDim.x)
    if (out[i] != value_of<T>(i % n, tshmem::my_pe())) atomicAdd(mismatches, 1);
}

template <class T>
class DeviceTyped : public ::testing::Test {};
using StandardTypes = ::testing::Types<char, signed char, unsigned char, short, unsigned short, int, unsigned int, long,
                                       unsigned long, long long, unsigned long long, float, double>;
TYPED_TEST_SUITE(DeviceTyped, StandardTypes);

TYPED_TEST(DeviceTyped, PutGetPG) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  const int me = tshmem_my_pe(), n = tshmem_n_pes(), next = (me + 1) % n;
  constexpr size_t kCount = 333;
  tshmem_device_test::SymBuffer dst(2 * kCount * sizeof(T)), src(kCount * sizeof(T)), out(2 * kCount * sizeof(T)),
      bad(sizeof(int));
  typed_put<T><<<1, 128>>>(dst.get<T>(), src.get<T>(), kCount, me, next);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  typed_get<T><<<1, 128>>>(out.get<T>(), dst.get<T>(), kCount, next, bad.get<int>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  int mismatches = -1;
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&mismatches, bad.get(), sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(mismatches, 0);
  tshmem_barrier_all();
}

// ---- C names ---------------------------------------------------------------------------------------------

__global__ void c_names(int *ints, float *floats, char *bytes, int pe, int *result) {
  if (threadIdx.x == 0) {
    tshmem_int_p(ints, 41, pe);
    tshmem_float_p(floats, 2.5f, pe);
    tshmem::quiet();
    result[0] = tshmem_int_g(ints, pe);
    result[1] = static_cast<int>(tshmem_float_g(floats, pe) * 2);
    tshmem_int32_put(ints + 1, ints, 1, pe);
  }
  __syncthreads();
  tshmem_putmem_block(bytes + 1, "tshmem", 7, pe);
  tshmem_getmem_block(bytes + 16, bytes + 1, 7, pe);
  if (threadIdx.x == 0) result[2] = bytes[16] == 't' && bytes[22] == 0 ? 1 : 0;
}

TEST(DeviceCNames, PutGetP) {
  TSHMEM_REQUIRE_GPU();
  const int me = tshmem_my_pe();
  tshmem_device_test::SymBuffer ints(64), floats(64), bytes(64), result(64);
  c_names<<<1, 64>>>(ints.get<int>(), floats.get<float>(), bytes.get(), me, result.get<int>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  int host[3] = {};
  TSHMEM_CUDA_EXPECT(cudaMemcpy(host, result.get(), sizeof(host), cudaMemcpyDeviceToHost));
  EXPECT_EQ(host[0], 41);
  EXPECT_EQ(host[1], 5);
  EXPECT_EQ(host[2], 1);
  tshmem_barrier_all();
}

}  // namespace
