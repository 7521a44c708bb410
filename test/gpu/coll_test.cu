// Collectives (tshmemx_*_on_stream) and the multimem unicast twins against CPU references, at 1 and 2 PEs,
// with multicast OFF (TSHMEM_DISABLE_NVLS=1, as on every GPU test host): every collective x dtype x op x
// size (1 element .. 256 MiB, odd counts, unaligned offsets, in place and out of place); repeated runs give
// identical bytes; collectives captured in a CUDA graph; bad arguments fail with a message and launch nothing.
//
// The CPU reference follows the documented order exactly: team index 0..n-1, floats accumulated in f32,
// rounded once to the element type; integers wrap. Comparisons are therefore bitwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "coll_reference.h"
#include "device_test_util.h"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/multimem.cuh"
#include "tshmem/device/pe.cuh"
#include "tshmem/device/sync.cuh"

namespace {

using tshmem_device_test::SymBuffer;

using namespace tshmem_coll_reference;

/// The inputs: varied signs and fractions, large integers to exercise wrap-around.
constexpr InputPattern kInputs{0.0f};

/// This PE's inputs first .. first + count - 1.
template <class T>
std::vector<T> mine(size_t first, size_t count) {
  return kInputs.values<T>(tshmem_my_pe(), first, count);
}

template <class T>
bool same_bytes(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

const size_t kCounts[] = {1, 3, 17, 1000, 4099, 65537, (1u << 20) + 3};

// ---- reducing collectives -----------------------------------------------------------------------------------
template <class T>
class CollReduce : public ::testing::Test {};
TYPED_TEST_SUITE(CollReduce, ReduceTypes);

TYPED_TEST(CollReduce, AllreduceEveryOpSizeOffsetInPlaceAndNot) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  const int n = tshmem_n_pes();
  const size_t max_count = kCounts[sizeof(kCounts) / sizeof(kCounts[0]) - 1] + 1;
  SymBuffer src(max_count * sizeof(T) + 64), dst(max_count * sizeof(T) + 64);
  for (tshmemx_redop_t op : kOps)
    for (size_t count : kCounts)
      for (size_t offset : {size_t{0}, size_t{1}})
        for (bool in_place : {false, true}) {
          T *s = src.get<T>() + offset;
          T *d = in_place ? s : dst.get<T>() + offset;
          upload(s, mine<T>(0, count));
          tshmem_barrier_all();
          const std::vector<T> want = kInputs.reference<T>(op, n, 0, count);
          ASSERT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, d, s, count, Traits<T>::kDtype, op, nullptr), 0)
              << tshmemx_last_error();
          TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
          const std::vector<T> got = download(d, count);
          EXPECT_TRUE(same_bytes(got, want))
              << op_name(op) << " count " << count << " offset " << offset << (in_place ? " in place" : "");
          if (!in_place) {  // a second run over the same input gives the same bytes
            ASSERT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, d, s, count, Traits<T>::kDtype, op, nullptr), 0);
            TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
            EXPECT_TRUE(same_bytes(download(d, count), got)) << "repeat differs: " << op_name(op) << " " << count;
          }
          tshmem_barrier_all();
        }
}

TYPED_TEST(CollReduce, ReduceScatterEveryOpAndSize) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t counts[] = {1, 5, 1001, 70001};
  SymBuffer src(counts[3] * n * sizeof(T) + 64), dst(counts[3] * sizeof(T) + 64);
  for (tshmemx_redop_t op : kOps)
    for (size_t count : counts)
      for (size_t offset : {size_t{0}, size_t{1}}) {
        T *s = src.get<T>() + offset;
        T *d = dst.get<T>() + offset;
        upload(s, mine<T>(0, count * n));
        tshmem_barrier_all();
        ASSERT_EQ(tshmemx_reduce_scatter_on_stream(TSHMEM_TEAM_WORLD, d, s, count, Traits<T>::kDtype, op, nullptr), 0)
            << tshmemx_last_error();
        TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
        EXPECT_TRUE(same_bytes(download(d, count), kInputs.reference<T>(op, n, static_cast<size_t>(me) * count, count)))
            << op_name(op) << " count " << count << " offset " << offset;
        tshmem_barrier_all();
      }
}

// Many all-reduces back to back on one stream, no host sync in between, each on its own input (so a line
// left over from an earlier call cannot pass for a fresh one): exercises the LL one-shot's per-row call
// counters, both parities and slot reuse, interleaved with two-shot calls and with in-place calls.
TEST(CollReduceLL, ManyBackToBackCallsEachOnItsOwnInput) {
  TSHMEM_REQUIRE_GPU();
  using T = __nv_bfloat16;
  const int n = tshmem_n_pes();
  // 131072 bf16 = 256 KiB, 262144 = 512 KiB (the LL capacity of 32 rows at 2 PEs); one more: two-shot
  const size_t counts[] = {1, 5, 1000, 4097, 40000, 131072, 131075, 262144, 262147};
  constexpr int kReps = 12;
  size_t total = 0;
  for (size_t c : counts) total += c + 1;
  SymBuffer src(total * kReps * sizeof(T) + 64), dst(total * kReps * sizeof(T) + 64);
  struct Call {
    T *d;
    size_t first, count;
    tshmemx_redop_t op;
  };
  std::vector<Call> calls;
  size_t at = 0;
  for (int rep = 0; rep < kReps; ++rep)
    for (size_t c : counts) {
      const size_t first = static_cast<size_t>(rep) * 1000003 + c;  // a different input for every call
      T *s = src.get<T>() + at + (rep & 1);
      upload(s, mine<T>(first, c));
      const bool in_place = rep % 3 == 2;
      calls.push_back(
          {in_place ? s : dst.get<T>() + at + (rep & 1), first, c, rep % 4 == 1 ? TSHMEMX_OP_MAX : TSHMEMX_OP_SUM});
      at += c + 1;
    }
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  at = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const int rep = static_cast<int>(i / (sizeof(counts) / sizeof(counts[0])));
    T *s = src.get<T>() + at + (rep & 1);
    ASSERT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, calls[i].d, s, calls[i].count, TSHMEMX_DTYPE_BFLOAT16,
                                          calls[i].op, nullptr),
              0)
        << tshmemx_last_error();
    at += calls[i].count + 1;
  }
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  for (const Call &c : calls)
    EXPECT_TRUE(same_bytes(download(c.d, c.count), kInputs.reference<T>(c.op, n, c.first, c.count)))
        << "count " << c.count << " first " << c.first << " " << op_name(c.op);
  tshmem_barrier_all();
}

TEST(CollReduceLarge, Allreduce256MiBFloatSumInPlace) {
  TSHMEM_REQUIRE_GPU();
  const size_t count = (256u << 20) / sizeof(float);
  SymBuffer buf(count * sizeof(float));
  upload(buf.get<float>(), mine<float>(0, count));
  tshmem_barrier_all();
  ASSERT_EQ(tshmemx_allreduce_on_stream(TSHMEMX_TEAM_NODE, buf.get(), buf.get(), count, TSHMEMX_DTYPE_FLOAT,
                                        TSHMEMX_OP_SUM, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_TRUE(same_bytes(download(buf.get<float>(), count),
                         kInputs.reference<float>(TSHMEMX_OP_SUM, tshmem_n_pes(), 0, count)));
  tshmem_barrier_all();
}

// Out of place at 2 PEs this is the store-only two-shot (allreduce_pair_push); the halves and the block slices
// are uneven here (count is odd, so the tail goes element by element).
TEST(CollReduceLarge, Allreduce256MiBBf16SumOutOfPlace) {
  TSHMEM_REQUIRE_GPU();
  using T = __nv_bfloat16;
  const size_t count = (256u << 20) / sizeof(T) - 5;
  SymBuffer src(count * sizeof(T)), dst(count * sizeof(T));
  upload(src.get<T>(), mine<T>(7, count));
  tshmem_barrier_all();
  ASSERT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, dst.get(), src.get(), count, TSHMEMX_DTYPE_BFLOAT16,
                                        TSHMEMX_OP_SUM, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_TRUE(
      same_bytes(download(dst.get<T>(), count), kInputs.reference<T>(TSHMEMX_OP_SUM, tshmem_n_pes(), 7, count)));
  EXPECT_TRUE(same_bytes(download(src.get<T>(), count), mine<T>(7, count))) << "the source must be left as it was";
  tshmem_barrier_all();
}

// ---- byte moves ---------------------------------------------------------------------------------------------
std::vector<unsigned char> pattern(int pe, size_t bytes, size_t salt = 0) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i)
    v[i] = static_cast<unsigned char>((i * 31 + static_cast<size_t>(pe) * 97 + salt) & 0xff);
  return v;
}

const size_t kByteSizes[] = {1, 7, 16, 4097, 1u << 20, (8u << 20) + 5};

TEST(CollMove, AllgatherAlltoallBroadcastEverySizeAndOffset) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t max_bytes = kByteSizes[5];
  SymBuffer src(max_bytes * n + 64), dst(max_bytes * n + 64);
  for (size_t bytes : kByteSizes)
    for (size_t offset : {size_t{0}, size_t{3}}) {
      unsigned char *s = src.get<unsigned char>() + offset, *d = dst.get<unsigned char>() + offset;
      // all-gather
      upload(s, pattern(me, bytes));
      tshmem_barrier_all();
      ASSERT_EQ(tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, d, s, bytes, nullptr), 0) << tshmemx_last_error();
      TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      std::vector<unsigned char> want;
      for (int pe = 0; pe < n; ++pe) {
        const auto p = pattern(pe, bytes);
        want.insert(want.end(), p.begin(), p.end());
      }
      EXPECT_TRUE(download(d, bytes * n) == want) << "allgather " << bytes << " offset " << offset;
      tshmem_barrier_all();
      // all-to-all: PE pe's block j is pattern(pe, bytes, j)
      std::vector<unsigned char> blocks;
      for (int j = 0; j < n; ++j) {
        const auto p = pattern(me, bytes, static_cast<size_t>(j) + 1);
        blocks.insert(blocks.end(), p.begin(), p.end());
      }
      upload(s, blocks);
      tshmem_barrier_all();
      ASSERT_EQ(tshmemx_alltoall_on_stream(TSHMEM_TEAM_WORLD, d, s, bytes, nullptr), 0) << tshmemx_last_error();
      TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      want.clear();
      for (int pe = 0; pe < n; ++pe) {
        const auto p = pattern(pe, bytes, static_cast<size_t>(me) + 1);
        want.insert(want.end(), p.begin(), p.end());
      }
      EXPECT_TRUE(download(d, bytes * n) == want) << "alltoall " << bytes << " offset " << offset;
      tshmem_barrier_all();
      // broadcast from the last PE, out of place and in place
      for (bool in_place : {false, true}) {
        const int root = n - 1;
        upload(s, pattern(me, bytes, 7));
        tshmem_barrier_all();
        ASSERT_EQ(tshmemx_broadcast_on_stream(TSHMEM_TEAM_WORLD, in_place ? s : d, s, bytes, root, nullptr), 0)
            << tshmemx_last_error();
        TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
        EXPECT_TRUE(download(in_place ? s : d, bytes) == pattern(root, bytes, 7)) << "broadcast " << bytes;
        tshmem_barrier_all();
      }
    }
}

TEST(CollMove, BarrierOnStreamOrdersWrites) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  SymBuffer slots(4 * 1024);
  for (int round = 1; round <= 20; ++round) {
    for (int pe = 0; pe < n; ++pe) ASSERT_EQ(tshmem_putmem(slots.get<int>() + me, &round, sizeof(int), pe), 0);
    tshmem_quiet();
    ASSERT_EQ(tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, nullptr), 0) << tshmemx_last_error();
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    const std::vector<int> got = download(slots.get<int>(), static_cast<size_t>(n));
    for (int pe = 0; pe < n; ++pe) EXPECT_EQ(got[pe], round) << "slot of PE " << pe;
    ASSERT_EQ(tshmemx_barrier_on_stream(TSHMEMX_TEAM_NODE, nullptr), 0);
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  }
}

/// Many device barriers in ONE kernel (one block per PE), as the barrier benchmark runs them: in round r the
/// LAST thread of the block (not one of the announcing threads) writes r into its slot on every PE; after a
/// barrier every thread must see r in every PE's slot; a second barrier keeps the next round's writes out
/// until everyone has read. The two barriers are coll::barrier_block and barrier_all<block>, alternating.
__global__ void barrier_loop_kernel(int *slots, int rounds, int *errors) {
  const int me = tshmem::my_pe(), n = tshmem::n_pes();
  for (int r = 1; r <= rounds; ++r) {
    if (threadIdx.x == blockDim.x - 1)
      for (int pe = 0; pe < n; ++pe) *static_cast<volatile int *>(tshmem::ptr(slots + me, pe)) = r;
    if (r & 1)
      tshmem::coll::barrier_block(TSHMEM_TEAM_WORLD);
    else
      tshmem::barrier_all<tshmem::block_scope>();
    for (int pe = 0; pe < n; ++pe)
      if (static_cast<volatile int *>(slots)[pe] != r) atomicAdd(errors, 1);
    if (r & 1)
      tshmem::barrier_all<tshmem::block_scope>();
    else
      tshmem::coll::barrier_block(TSHMEM_TEAM_WORLD);
  }
}

TEST(CollMove, DeviceBarrierLoopInOneKernelOrdersWrites) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes();
  SymBuffer slots(4 * 1024);
  TSHMEM_CUDA_EXPECT(cudaMemset(slots.get(), 0, 4 * 1024));
  int *errors = nullptr;
  TSHMEM_CUDA_EXPECT(cudaMalloc(&errors, sizeof(int)));
  TSHMEM_CUDA_EXPECT(cudaMemset(errors, 0, sizeof(int)));
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  barrier_loop_kernel<<<1, 96>>>(slots.get<int>(), 5000, errors);
  TSHMEM_CUDA_EXPECT(cudaGetLastError());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  int found = -1;
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&found, errors, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(found, 0) << "stale slots seen after a device barrier (" << n << " PEs)";
  const std::vector<int> got = download(slots.get<int>(), static_cast<size_t>(n));
  for (int pe = 0; pe < n; ++pe) EXPECT_EQ(got[pe], 5000) << "slot of PE " << pe;
  TSHMEM_CUDA_EXPECT(cudaFree(errors));
  tshmem_barrier_all();
}

// ---- CUDA graph ---------------------------------------------------------------------------------------------
TEST(CollGraph, AllreduceAndAllgatherInAGraph) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t count = 4099, bytes = 8192;
  SymBuffer src(count * 2), dst(count * 2), gsrc(bytes), gdst(bytes * n);
  upload(src.get<__nv_bfloat16>(), mine<__nv_bfloat16>(0, count));
  upload(gsrc.get<unsigned char>(), pattern(me, bytes));
  tshmem_barrier_all();
  cudaStream_t stream;
  TSHMEM_CUDA_EXPECT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto s = reinterpret_cast<tshmemx_stream_t>(stream);
  cudaGraph_t graph;
  TSHMEM_CUDA_EXPECT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  EXPECT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, dst.get(), src.get(), count, TSHMEMX_DTYPE_BFLOAT16,
                                        TSHMEMX_OP_SUM, s),
            0)
      << tshmemx_last_error();
  EXPECT_EQ(tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, gdst.get(), gsrc.get(), bytes, s), 0);
  EXPECT_EQ(tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, s), 0);
  TSHMEM_CUDA_EXPECT(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  TSHMEM_CUDA_EXPECT(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 64; ++launch) TSHMEM_CUDA_EXPECT(cudaGraphLaunch(exec, stream));
  TSHMEM_CUDA_EXPECT(cudaStreamSynchronize(stream));
  EXPECT_TRUE(same_bytes(download(dst.get<__nv_bfloat16>(), count),
                         kInputs.reference<__nv_bfloat16>(TSHMEMX_OP_SUM, n, 0, count)));
  std::vector<unsigned char> want;
  for (int pe = 0; pe < n; ++pe) {
    const auto p = pattern(pe, bytes);
    want.insert(want.end(), p.begin(), p.end());
  }
  EXPECT_TRUE(download(gdst.get<unsigned char>(), bytes * n) == want);
  TSHMEM_CUDA_EXPECT(cudaGraphExecDestroy(exec));
  TSHMEM_CUDA_EXPECT(cudaGraphDestroy(graph));
  TSHMEM_CUDA_EXPECT(cudaStreamDestroy(stream));
  tshmem_barrier_all();
}

// ---- argument errors: a message, no launch, no hang -----------------------------------------------------------
TEST(CollErrors, BadArgumentsAreRefusedOnEveryPe) {
  TSHMEM_REQUIRE_GPU();
  SymBuffer buf(4096), out(4096 * 8);
  void *outside = nullptr;
  TSHMEM_CUDA_EXPECT(cudaMalloc(&outside, 4096));
  struct Case {
    const char *what;
    int rc;
  };
  char *b = buf.get<char>();
  const Case cases[] = {
      {"count 0", tshmemx_allreduce_on_stream(0, out.get(), b, 0, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr)},
      {"misaligned", tshmemx_allreduce_on_stream(0, out.get(), b + 1, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr)},
      {"outside the heap",
       tshmemx_allreduce_on_stream(0, out.get(), outside, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr)},
      {"dtype",
       tshmemx_allreduce_on_stream(0, out.get(), b, 4, static_cast<tshmemx_dtype_t>(99), TSHMEMX_OP_SUM, nullptr)},
      {"op",
       tshmemx_allreduce_on_stream(0, out.get(), b, 4, TSHMEMX_DTYPE_FLOAT, static_cast<tshmemx_redop_t>(7), nullptr)},
      {"team", tshmemx_allreduce_on_stream(5, out.get(), b, 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr)},
      {"overlap", tshmemx_allreduce_on_stream(0, b + 4, b, 16, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr)},
      {"root", tshmemx_broadcast_on_stream(0, out.get(), b, 16, tshmem_n_pes(), nullptr)},
      {"nbytes 0", tshmemx_allgather_on_stream(0, out.get(), b, 0, nullptr)},
      {"reduce_scatter outside",
       tshmemx_reduce_scatter_on_stream(0, out.get(), outside, 4, TSHMEMX_DTYPE_INT32, TSHMEMX_OP_MAX, nullptr)},
  };
  for (const Case &c : cases) EXPECT_EQ(c.rc, TSHMEM_ERR_INVALID_ARG) << c.what;
  EXPECT_NE(std::string(tshmemx_last_error()).find("tshmemx_reduce_scatter_on_stream"), std::string::npos)
      << tshmemx_last_error();
  // tshmem's own region at the start of the heap (device barrier counters, the LL receive area) is no buffer.
  EXPECT_EQ(
      tshmemx_allreduce_on_stream(0, out.get(), tshmemx_heap_base(), 4, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM, nullptr),
      TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("reserved region"), std::string::npos) << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());  // nothing was launched, nothing hangs
  TSHMEM_CUDA_EXPECT(cudaFree(outside));
  tshmem_barrier_all();
}

TEST(CollMulticast, OffOnTheTestHost) {
  TSHMEM_REQUIRE_GPU();
  SymBuffer buf(256);
  EXPECT_EQ(tshmemx_mc_ptr(TSHMEMX_TEAM_NODE, buf.get()), nullptr);
  EXPECT_NE(std::string(tshmemx_mc_status()).find("forbidden"), std::string::npos) << tshmemx_mc_status();
  EXPECT_EQ(tshmem_team_n_pes(TSHMEM_TEAM_WORLD), tshmem_n_pes());
  EXPECT_EQ(tshmem_team_my_pe(TSHMEMX_TEAM_NODE), tshmemx_local_pe());
}

// ---- multimem unicast twins (multicast off: the picked path is the twin) ---------------------------------------
using tshmem::redop;
using tshmem::vec;

/// Every thread i: out[i] = ld_reduce over PEs of in[i*N .. ]; then st and red through the same API.
template <redop Op, class T, int N>
__global__ void twin_kernel(const T *in, T *ld_out, T *st_dst, T *red_dst, size_t units) {
  const size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= units) return;
  const vec<T, N> v = tshmem::mm::ld_reduce<Op, T, N>(TSHMEM_TEAM_WORLD, in + i * N);
  *reinterpret_cast<vec<T, N> *>(ld_out + i * N) = v;
  if (tshmem::my_pe() == 0) tshmem::mm::st<T, N>(TSHMEMX_TEAM_NODE, st_dst + i * N, v);
  if constexpr (!(std::is_same_v<T, __half2> || std::is_same_v<T, __nv_bfloat162>) || Op == redop::sum || N > 1)
    tshmem::mm::red<Op, T, N>(TSHMEM_TEAM_WORLD, red_dst + i * N, v);
}

__global__ void signal_kernel(uint64_t *sig) {
  tshmem::mm::signal_add(TSHMEM_TEAM_WORLD, sig, 1);
  tshmem::mm::signal_set(TSHMEMX_TEAM_NODE, sig + 1, 42);
}

/// Host model of one element type of the twins: the scalar lanes (a scalar type is its own one lane; the
/// packed 16-bit pairs are two).
template <class T>
struct Lanes {
  using S = T;
  static constexpr int k = 1;
};
template <>
struct Lanes<__half2> {
  using S = __half;
  static constexpr int k = 2;
};
template <>
struct Lanes<__nv_bfloat162> {
  using S = __nv_bfloat16;
  static constexpr int k = 2;
};

template <redop Op, class T, int N>
void check_twin() {
  using S = typename Lanes<T>::S;
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t units = 1000, lanes = units * N * Lanes<T>::k;
  const tshmemx_redop_t op = Op == redop::sum ? TSHMEMX_OP_SUM : Op == redop::min ? TSHMEMX_OP_MIN : TSHMEMX_OP_MAX;
  SymBuffer in(lanes * sizeof(S)), ld(lanes * sizeof(S)), st(lanes * sizeof(S)), red(lanes * sizeof(S));
  upload(in.get<S>(), mine<S>(0, lanes));
  std::vector<S> red_init = mine<S>(5, lanes);  // red starts from a known value on every PE
  upload(red.get<S>(), red_init);
  tshmem_barrier_all();
  twin_kernel<Op, T, N><<<(units + 127) / 128, 128>>>(in.get<T>(), ld.get<T>(), st.get<T>(), red.get<T>(), units);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  const std::vector<S> want = kInputs.reference<S>(op, n, 0, lanes);
  EXPECT_TRUE(same_bytes(download(ld.get<S>(), lanes), want)) << "ld_reduce twin, N " << N;
  EXPECT_TRUE(same_bytes(download(st.get<S>(), lanes), want)) << "st twin, N " << N;
  if constexpr (std::is_integral_v<S> || Op != redop::sum) {  // float sums of concurrent reds: order unspecified
    const bool has_red = !(Lanes<T>::k == 2 && Op != redop::sum && N == 1);
    if (has_red) {
      std::vector<S> red_want(lanes);
      for (size_t i = 0; i < lanes; ++i) {
        auto acc = Traits<S>::to_acc(red_init[i]);
        for (int pe = 0; pe < n; ++pe) acc = combine(op, acc, Traits<S>::to_acc(want[i]));
        red_want[i] = Traits<S>::from_acc(acc);
      }
      EXPECT_TRUE(same_bytes(download(red.get<S>(), lanes), red_want)) << "red twin, N " << N << " PE " << me;
    }
  }
  tshmem_barrier_all();
}

TEST(MultimemTwin, LdReduceStRedMatchTheCpuReference) {
  TSHMEM_REQUIRE_GPU();
  check_twin<redop::sum, float, 4>();
  check_twin<redop::sum, float, 1>();
  check_twin<redop::sum, __half2, 4>();
  check_twin<redop::min, __half2, 2>();
  check_twin<redop::max, __half2, 1>();
  check_twin<redop::sum, __nv_bfloat162, 2>();
  check_twin<redop::max, __nv_bfloat162, 4>();
  check_twin<redop::sum, int32_t, 1>();
  check_twin<redop::min, int32_t, 1>();
  check_twin<redop::max, int64_t, 1>();
  check_twin<redop::sum, int64_t, 1>();
}

TEST(MultimemTwin, SignalsReachEveryPe) {
  TSHMEM_REQUIRE_GPU();
  SymBuffer sig(16);
  tshmem_barrier_all();
  signal_kernel<<<1, 1>>>(sig.get<uint64_t>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();
  const std::vector<uint64_t> got = download(sig.get<uint64_t>(), 2);
  EXPECT_EQ(got[0], static_cast<uint64_t>(tshmem_n_pes()));
  EXPECT_EQ(got[1], 42u);
}

}  // namespace
