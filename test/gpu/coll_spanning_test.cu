// Collectives on TSHMEM_TEAM_WORLD across nodes (TSHMEM_DEBUG_NODE_SIZE splits the host; design.md, "Beyond one
// node"): every tshmemx_*_on_stream collective, its typed forms, the device team collectives (block and grid forms)
// and their C names, against a CPU reference in the on-node order (team index 0..n-1, floats accumulated in f32
// and rounded once, integers wrapping), bit for bit. The same binary also runs on one node (no split), where the
// on-node paths must give the same bytes for the same calls: together the two prove the paths agree.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "coll_reference.h"
#include "device_test_util.h"
#include "tshmem/device/c_coll.cuh"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/rma.cuh"
#include "tshmem/tshmemx_typed.h"

namespace {

using tshmem_device_test::SymBuffer;

using namespace tshmem_coll_reference;

/// The inputs: signs and fractions whose f32 sum depends on the order, integers that wrap.
constexpr InputPattern kInputs{1.0f / 3.0f};

template <class T>
size_t first_difference(const std::vector<T> &a, const std::vector<T> &b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return i;
  return a.size() == b.size() ? SIZE_MAX : std::min(a.size(), b.size());
}

tshmem::redop device_op(tshmemx_redop_t op) {
  return op == TSHMEMX_OP_SUM ? tshmem::redop::sum : op == TSHMEMX_OP_MIN ? tshmem::redop::min : tshmem::redop::max;
}

#define EXPECT_SAME(got, want, what)                                                                            \
  do {                                                                                                          \
    const size_t at_ = first_difference(got, want);                                                             \
    EXPECT_EQ(at_, SIZE_MAX) << what << ": first difference at element " << at_ << " on PE " << tshmem_my_pe(); \
  } while (0)

// ---- the job's shape ----------------------------------------------------------------------------------------
TEST(SpanShape, TheJobIsSplitAsTheEntrySays) {
  TSHMEM_REQUIRE_GPU();
  const char *split = std::getenv("TSHMEM_DEBUG_NODE_SIZE");
  const int node = split != nullptr ? std::atoi(split) : 0;
  const int n = tshmem_n_pes();
  EXPECT_EQ(tshmemx_local_n_pes(), node > 0 && node < n ? node : n)
      << "the off-node entries must really span nodes, the on-node ones not";
}

// ---- reducing collectives on the stream ---------------------------------------------------------------------
template <class T>
class SpanReduce : public ::testing::Test {};
TYPED_TEST_SUITE(SpanReduce, ReduceTypes);

TYPED_TEST(SpanReduce, AllreduceEveryOpAndSizeInPlaceAndNot) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  // Sized for PEs sharing one GPU across "nodes" (every dependency waits for a time slice there): odd counts at
  // an odd element, one call over 2 x 32 KiB chunks per block row, in place and not alternately.
  const struct {
    size_t count;
    bool in_place;
  } kCases[] = {{1, false}, {17, true}, {4099, false}, {65537, true}};
  SymBuffer src((65537 + 1) * sizeof(T)), dst((65537 + 1) * sizeof(T));
  for (tshmemx_redop_t op : kOps)
    for (const auto &c : kCases) {
      const size_t offset = c.count % 2;
      T *s = src.get<T>() + offset;
      T *d = c.in_place ? s : dst.get<T>() + offset;
      upload(s, kInputs.values<T>(me, 0, c.count));
      const int rc = tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, d, s, c.count, Traits<T>::kDtype, op, nullptr);
      EXPECT_EQ(rc, 0) << tshmemx_last_error();
      TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      EXPECT_SAME(download(d, c.count), kInputs.reference<T>(op, n, 0, c.count),
                  "allreduce " << op_name(op) << " count " << c.count << (c.in_place ? " in place" : ""));
    }
}

TYPED_TEST(SpanReduce, ReduceScatterEveryOpAndSize) {
  TSHMEM_REQUIRE_GPU();
  using T = TypeParam;
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t kCounts[] = {5, 4099};
  SymBuffer src(4099 * sizeof(T) * static_cast<size_t>(n)), dst(4099 * sizeof(T));
  for (tshmemx_redop_t op : kOps)
    for (size_t count : kCounts) {
      upload(src.get<T>(), kInputs.values<T>(me, 0, count * static_cast<size_t>(n)));
      const int rc = tshmemx_reduce_scatter_on_stream(TSHMEM_TEAM_WORLD, dst.get<T>(), src.get<T>(), count,
                                                      Traits<T>::kDtype, op, nullptr);
      EXPECT_EQ(rc, 0) << tshmemx_last_error();
      TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      EXPECT_SAME(download(dst.get<T>(), count), kInputs.reference<T>(op, n, static_cast<size_t>(me) * count, count),
                  "reduce_scatter " << op_name(op) << " count " << count);
    }
}

TEST(SpanReduce, TypedFormsRouteToTheSameCollective) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t count = 333;
  SymBuffer src(count * 8), dst(count * 8);
  upload(src.get<float>(), kInputs.values<float>(me, 0, count));
  EXPECT_EQ(tshmemx_float_sum_reduce_on_stream(TSHMEM_TEAM_WORLD, dst.get<float>(), src.get<float>(), count, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(dst.get<float>(), count), kInputs.reference<float>(TSHMEMX_OP_SUM, n, 0, count), "float_sum");
  upload(src.get<int64_t>(), kInputs.values<int64_t>(me, 0, count));
  EXPECT_EQ(
      tshmemx_int64_max_reduce_on_stream(TSHMEM_TEAM_WORLD, dst.get<int64_t>(), src.get<int64_t>(), count, nullptr), 0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(dst.get<int64_t>(), count), kInputs.reference<int64_t>(TSHMEMX_OP_MAX, n, 0, count),
              "int64_max");
  // A typed move: 3 doubles from every PE.
  SymBuffer gathered(3 * sizeof(double) * static_cast<size_t>(n));
  const std::vector<double> mine = {me + 0.25, me + 0.5, -1.0 * me};
  upload(src.get<double>(), mine);
  EXPECT_EQ(tshmemx_double_fcollect_on_stream(TSHMEM_TEAM_WORLD, gathered.get<double>(), src.get<double>(), 3, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  std::vector<double> want;
  for (int pe = 0; pe < n; ++pe) want.insert(want.end(), {pe + 0.25, pe + 0.5, -1.0 * pe});
  EXPECT_SAME(download(gathered.get<double>(), want.size()), want, "double_fcollect");
}

TEST(SpanLarge, Allreduce8MiBFloatSumAndBf16InPlace) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t bytes = 8u << 20;
  SymBuffer src(bytes), dst(bytes);
  const size_t floats = bytes / sizeof(float);
  upload(src.get<float>(), kInputs.values<float>(me, 0, floats));
  EXPECT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, dst.get(), src.get(), floats, TSHMEMX_DTYPE_FLOAT,
                                        TSHMEMX_OP_SUM, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(dst.get<float>(), floats), kInputs.reference<float>(TSHMEMX_OP_SUM, n, 0, floats),
              "8 MiB float sum");
  using bf16 = __nv_bfloat16;
  const size_t halves = bytes / sizeof(bf16) - 1;  // odd
  upload(src.get<bf16>(), kInputs.values<bf16>(me, 0, halves));
  EXPECT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, src.get(), src.get(), halves, TSHMEMX_DTYPE_BFLOAT16,
                                        TSHMEMX_OP_SUM, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(src.get<bf16>(), halves), kInputs.reference<bf16>(TSHMEMX_OP_SUM, n, 0, halves),
              "8 MiB bf16 sum in place");
}

// ---- byte moves on the stream -------------------------------------------------------------------------------
std::vector<unsigned char> pattern(int pe, size_t bytes, size_t salt) {
  std::vector<unsigned char> p(bytes);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 13 + static_cast<size_t>(pe) * 71 + salt);
  return p;
}

/// allgather, alltoall and broadcast of `nbytes` per PE, at an odd offset for odd sizes; broadcast from every
/// root with `every_root`, else from the last one, in place.
void check_moves(size_t nbytes, bool every_root) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t all = nbytes * static_cast<size_t>(n), offset = nbytes % 3;
  SymBuffer src(all + 8), dst(all + 8);
  unsigned char *s = src.get<unsigned char>() + offset, *d = dst.get<unsigned char>() + offset;
  // allgather
  upload(s, pattern(me, nbytes, 1));
  TSHMEM_CUDA_EXPECT(cudaMemset(d, 0, all));
  EXPECT_EQ(tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, d, s, nbytes, nullptr), 0) << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  std::vector<unsigned char> want;
  for (int pe = 0; pe < n; ++pe) {
    const auto p = pattern(pe, nbytes, 1);
    want.insert(want.end(), p.begin(), p.end());
  }
  EXPECT_SAME(download(d, all), want, "allgather of " << nbytes << " bytes");
  // alltoall: block j of my src goes to PE j
  want.clear();
  std::vector<unsigned char> mine;
  for (int pe = 0; pe < n; ++pe) {
    const auto to = pattern(me, nbytes, 2 + static_cast<size_t>(pe));
    mine.insert(mine.end(), to.begin(), to.end());
    const auto from = pattern(pe, nbytes, 2 + static_cast<size_t>(me));
    want.insert(want.end(), from.begin(), from.end());
  }
  upload(s, mine);
  TSHMEM_CUDA_EXPECT(cudaMemset(d, 0, all));
  EXPECT_EQ(tshmemx_alltoall_on_stream(TSHMEM_TEAM_WORLD, d, s, nbytes, nullptr), 0) << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(d, all), want, "alltoall of " << nbytes << " bytes");
  // broadcast from every root, the last one in place
  for (int root = every_root ? 0 : n - 1; root < n; ++root) {
    const bool in_place = root == n - 1;
    unsigned char *to = in_place ? s : d;
    upload(s, pattern(me, nbytes, 40));
    if (!in_place) TSHMEM_CUDA_EXPECT(cudaMemset(d, 0, nbytes));
    EXPECT_EQ(tshmemx_broadcast_on_stream(TSHMEM_TEAM_WORLD, to, s, nbytes, root, nullptr), 0) << tshmemx_last_error();
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    EXPECT_SAME(download(to, nbytes), pattern(root, nbytes, 40),
                "broadcast of " << nbytes << " bytes from root " << root << (in_place ? " in place" : ""));
  }
}

TEST(SpanMove, AllgatherAlltoallBroadcastEverySize) {
  TSHMEM_REQUIRE_GPU();
  for (size_t nbytes : {size_t{1}, size_t{7}, size_t{4097}, (size_t{1} << 20) + 3}) check_moves(nbytes, nbytes == 7);
}

TEST(SpanLarge, Moves8MiB) {
  TSHMEM_REQUIRE_GPU();
  check_moves(size_t{8} << 20, false);
}

TEST(SpanBarrier, OnStreamBarriersOrderWrites) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe(), next = (me + 1) % n;
  SymBuffer word(sizeof(long long)), seen(sizeof(long long));
  for (long long round = 1; round <= 6; ++round) {
    const long long mine = round * 100 + me;
    TSHMEM_CUDA_EXPECT(cudaMemcpyAsync(word.get<long long>(), &mine, sizeof mine, cudaMemcpyHostToDevice, nullptr));
    const int which = static_cast<int>(round % 3);
    const int rc = which == 0   ? tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, nullptr)
                   : which == 1 ? tshmemx_barrier_all_on_stream(nullptr)
                                : tshmemx_sync_all_on_stream(nullptr);
    EXPECT_EQ(rc, 0) << tshmemx_last_error();
    EXPECT_EQ(tshmemx_getmem_on_stream(seen.get(), word.get(), sizeof(long long), next, nullptr), 0)
        << tshmemx_last_error();
    EXPECT_EQ(tshmemx_barrier_all_on_stream(nullptr), 0) << tshmemx_last_error();  // nobody writes round + 1 early
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    EXPECT_EQ(download(seen.get<long long>(), 1)[0], round * 100 + next) << "round " << round;
  }
}

// ---- device team collectives: block and grid forms ----------------------------------------------------------
template <class T>
__global__ void allreduce_blocks_kernel(T *dst, const T *src, size_t count, tshmem::redop op) {
  const size_t at = blockIdx.x * count;  // block b reduces its own slice, pairing with block b elsewhere
  tshmem::coll::allreduce_block<T>(TSHMEM_TEAM_WORLD, dst + at, src + at, count, op, false);
}
template <class T>
__global__ void allreduce_grid_kernel(T *dst, const T *src, size_t count, tshmem::redop op, bool two_shot) {
  tshmem::coll::allreduce_grid<T>(TSHMEM_TEAM_WORLD, dst, src, count, op, two_shot);
}
template <class T>
__global__ void reduce_scatter_kernel(T *dst, const T *src, size_t count, tshmem::redop op, bool grid) {
  if (grid)
    tshmem::coll::reduce_scatter_grid<T>(TSHMEM_TEAM_WORLD, dst, src, count, op);
  else
    tshmem::coll::reduce_scatter_block<T>(TSHMEM_TEAM_WORLD, dst, src, count, op);
}
__global__ void moves_kernel(bool grid, void *gathered, void *exchanged, void *broadcast, const void *src,
                             const void *src_all, size_t nbytes, int root) {
  if (grid) {
    tshmem::coll::fcollect_grid(TSHMEM_TEAM_WORLD, gathered, src, nbytes);
    tshmem::coll::alltoall_grid(TSHMEM_TEAM_WORLD, exchanged, src_all, nbytes);
    tshmem::coll::broadcast_grid(TSHMEM_TEAM_WORLD, broadcast, src, nbytes, root);
  } else {
    tshmem::coll::fcollect_block(TSHMEM_TEAM_WORLD, gathered, src, nbytes);
    tshmem::coll::alltoall_block(TSHMEM_TEAM_WORLD, exchanged, src_all, nbytes);
    tshmem::coll::broadcast_block(TSHMEM_TEAM_WORLD, broadcast, src, nbytes, root);
  }
}
__global__ void barrier_kernel(bool grid, int *word, int *seen, int value, int next) {
  const bool first = blockIdx.x == 0 && threadIdx.x == 0;
  if (first) *static_cast<volatile int *>(word) = value;
  grid ? tshmem::coll::barrier_grid(TSHMEM_TEAM_WORLD) : tshmem::coll::barrier_block(TSHMEM_TEAM_WORLD);
  if (first) *seen = tshmem::g(word, next);
  grid ? tshmem::coll::barrier_grid(TSHMEM_TEAM_WORLD) : tshmem::coll::barrier_block(TSHMEM_TEAM_WORLD);
}

template <class T>
void check_device_reductions(tshmemx_redop_t op) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t count = 9001, blocks = 3;
  SymBuffer src(count * blocks * sizeof(T) * static_cast<size_t>(n)), dst(count * blocks * sizeof(T));
  upload(src.get<T>(), kInputs.values<T>(me, 0, count * blocks));
  allreduce_blocks_kernel<T><<<blocks, 256>>>(dst.get<T>(), src.get<T>(), count, device_op(op));
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(dst.get<T>(), count * blocks), kInputs.reference<T>(op, n, 0, count * blocks),
              "allreduce_block x3 " << op_name(op));
  for (bool two_shot : {false, true}) {
    TSHMEM_CUDA_EXPECT(cudaMemset(dst.get(), 0, count * sizeof(T)));
    allreduce_grid_kernel<T><<<4, 128>>>(dst.get<T>(), src.get<T>(), count, device_op(op), two_shot);
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    EXPECT_SAME(download(dst.get<T>(), count), kInputs.reference<T>(op, n, 0, count),
                "allreduce_grid " << op_name(op) << (two_shot ? " two-shot" : " one-shot"));
  }
  upload(src.get<T>(), kInputs.values<T>(me, 0, count * static_cast<size_t>(n)));
  for (bool grid : {false, true}) {
    TSHMEM_CUDA_EXPECT(cudaMemset(dst.get(), 0, count * sizeof(T)));
    reduce_scatter_kernel<T><<<grid ? 5 : 1, 256>>>(dst.get<T>(), src.get<T>(), count, device_op(op), grid);
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    EXPECT_SAME(download(dst.get<T>(), count), kInputs.reference<T>(op, n, static_cast<size_t>(me) * count, count),
                "reduce_scatter_" << (grid ? "grid " : "block ") << op_name(op));
  }
}

TEST(SpanDevice, BlockAndGridReductions) {
  TSHMEM_REQUIRE_GPU();
  check_device_reductions<float>(TSHMEMX_OP_SUM);
  check_device_reductions<__nv_bfloat16>(TSHMEMX_OP_SUM);
  check_device_reductions<__half>(TSHMEMX_OP_MIN);
  check_device_reductions<int64_t>(TSHMEMX_OP_MAX);
  check_device_reductions<int32_t>(TSHMEMX_OP_SUM);
}

TEST(SpanDevice, BlockAndGridMovesAndBarriers) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t nbytes = 70001, all = nbytes * static_cast<size_t>(n);
  SymBuffer src(nbytes), src_all(all), gathered(all), exchanged(all), broadcast(nbytes);
  upload(src.get<unsigned char>(), pattern(me, nbytes, 5));
  std::vector<unsigned char> mine, want_gathered, want_exchanged;
  for (int pe = 0; pe < n; ++pe) {
    const auto to = pattern(me, nbytes, 9 + static_cast<size_t>(pe));
    mine.insert(mine.end(), to.begin(), to.end());
    const auto from = pattern(pe, nbytes, 9 + static_cast<size_t>(me));
    want_exchanged.insert(want_exchanged.end(), from.begin(), from.end());
    const auto g = pattern(pe, nbytes, 5);
    want_gathered.insert(want_gathered.end(), g.begin(), g.end());
  }
  upload(src_all.get<unsigned char>(), mine);
  for (bool grid : {false, true}) {
    const int root = grid ? n - 1 : 0;
    for (SymBuffer *b : {&gathered, &exchanged, &broadcast}) TSHMEM_CUDA_EXPECT(cudaMemset(b->get(), 0, b->bytes()));
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    tshmem_barrier_all();  // nobody's zeroing lands after another's collective wrote
    moves_kernel<<<grid ? 6 : 1, 256>>>(grid, gathered.get(), exchanged.get(), broadcast.get(), src.get(),
                                        src_all.get(), nbytes, root);
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    const char *form = grid ? "grid" : "block";
    EXPECT_SAME(download(gathered.get<unsigned char>(), all), want_gathered, "fcollect_" << form);
    EXPECT_SAME(download(exchanged.get<unsigned char>(), all), want_exchanged, "alltoall_" << form);
    EXPECT_SAME(download(broadcast.get<unsigned char>(), nbytes), pattern(root, nbytes, 5), "broadcast_" << form);
  }
  SymBuffer word(sizeof(int)), seen(sizeof(int));
  for (int round = 1; round <= 4; ++round) {
    const bool grid = round % 2 == 0;
    barrier_kernel<<<grid ? 4 : 1, 64>>>(grid, word.get<int>(), seen.get<int>(), round * 10 + me, (me + 1) % n);
    TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
    EXPECT_EQ(download(seen.get<int>(), 1)[0], round * 10 + (me + 1) % n) << (grid ? "barrier_grid" : "barrier_block");
  }
}

// ---- the C names (thread, warp and block forms) --------------------------------------------------------------
struct CNameBuffers {
  float *fsum_dst;
  const float *fsum_src;
  int *imax_dst;
  const int *imax_src;
  __half *hsum_dst;
  const __half *hsum_src;
  int *gathered;
  int *exchanged;
  int *broadcast;
  const int *src;
  const int *src_all;
  size_t count;
  int root;
};

__global__ void c_names_kernel(CNameBuffers b) {
  if (threadIdx.x == 0) tshmem_float_sum_reduce(TSHMEM_TEAM_WORLD, b.fsum_dst, b.fsum_src, b.count);
  __syncthreads();
  if (threadIdx.x < 32) tshmem_int_max_reduce_warp(TSHMEM_TEAM_WORLD, b.imax_dst, b.imax_src, b.count);
  __syncthreads();
  tshmem_half_sum_reduce_block(TSHMEM_TEAM_WORLD, b.hsum_dst, b.hsum_src, b.count);
  tshmem_int_fcollect_block(TSHMEM_TEAM_WORLD, b.gathered, b.src, b.count);
  if (threadIdx.x == 0) tshmem_int_alltoall(TSHMEM_TEAM_WORLD, b.exchanged, b.src_all, b.count);
  __syncthreads();
  if (threadIdx.x < 32) tshmem_int_broadcast_warp(TSHMEM_TEAM_WORLD, b.broadcast, b.src, b.count, b.root);
  __syncthreads();
  tshmem_barrier_block(TSHMEM_TEAM_WORLD);
  if (threadIdx.x == 0) tshmem_barrier(TSHMEM_TEAM_WORLD);
}

TEST(SpanDevice, CNamesThreadWarpAndBlockForms) {
  TSHMEM_REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const size_t count = 7;
  const size_t all = count * static_cast<size_t>(n);
  SymBuffer f_src(count * 4), f_dst(count * 4), i_src(count * 4), i_dst(count * 4), h_src(count * 2), h_dst(count * 2),
      src(count * 4), src_all(all * 4), gathered(all * 4), exchanged(all * 4), broadcast(count * 4);
  upload(f_src.get<float>(), kInputs.values<float>(me, 0, count));
  upload(i_src.get<int>(), kInputs.values<int32_t>(me, 0, count));
  upload(h_src.get<__half>(), kInputs.values<__half>(me, 0, count));
  upload(src.get<int>(), kInputs.values<int32_t>(me, 100, count));
  std::vector<int> mine, want_gathered, want_exchanged;
  for (int pe = 0; pe < n; ++pe) {
    for (size_t i = 0; i < count; ++i) {
      mine.push_back(me * 1000 + pe * 10 + static_cast<int>(i));
      want_exchanged.push_back(pe * 1000 + me * 10 + static_cast<int>(i));
      want_gathered.push_back(kInputs.value<int32_t>(pe, 100 + i));
    }
  }
  upload(src_all.get<int>(), mine);
  CNameBuffers b{f_dst.get<float>(),
                 f_src.get<float>(),
                 i_dst.get<int>(),
                 i_src.get<int>(),
                 h_dst.get<__half>(),
                 h_src.get<__half>(),
                 gathered.get<int>(),
                 exchanged.get<int>(),
                 broadcast.get<int>(),
                 src.get<int>(),
                 src_all.get<int>(),
                 count,
                 n - 1};
  c_names_kernel<<<1, 64>>>(b);
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  EXPECT_SAME(download(f_dst.get<float>(), count), kInputs.reference<float>(TSHMEMX_OP_SUM, n, 0, count),
              "tshmem_float_sum_reduce");
  EXPECT_SAME(download(i_dst.get<int32_t>(), count), kInputs.reference<int32_t>(TSHMEMX_OP_MAX, n, 0, count),
              "tshmem_int_max_reduce_warp");
  EXPECT_SAME(download(h_dst.get<__half>(), count), kInputs.reference<__half>(TSHMEMX_OP_SUM, n, 0, count),
              "tshmem_half_sum_reduce_block");
  EXPECT_SAME(download(gathered.get<int>(), all), want_gathered, "tshmem_int_fcollect_block");
  EXPECT_SAME(download(exchanged.get<int>(), all), want_exchanged, "tshmem_int_alltoall");
  EXPECT_SAME(download(broadcast.get<int>(), count), kInputs.values<int32_t>(n - 1, 100, count),
              "tshmem_int_broadcast_warp");
}

// ---- the node team and the host checks across nodes ---------------------------------------------------------
TEST(SpanTeams, TheNodeTeamStaysOnItsNode) {
  TSHMEM_REQUIRE_GPU();
  const int local = tshmemx_local_n_pes(), first = tshmem_my_pe() - tshmemx_local_pe();
  const size_t count = 1001;
  SymBuffer src(count * sizeof(float)), dst(count * sizeof(float));
  upload(src.get<float>(), kInputs.values<float>(tshmem_my_pe(), 0, count));
  EXPECT_EQ(tshmemx_allreduce_on_stream(TSHMEMX_TEAM_NODE, dst.get(), src.get(), count, TSHMEMX_DTYPE_FLOAT,
                                        TSHMEMX_OP_SUM, nullptr),
            0)
      << tshmemx_last_error();
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  std::vector<float> want(count);
  for (size_t i = 0; i < count; ++i) {
    float acc = kInputs.value<float>(first, i);
    for (int k = 1; k < local; ++k) acc += kInputs.value<float>(first + k, i);
    want[i] = acc;
  }
  EXPECT_SAME(download(dst.get<float>(), count), want, "allreduce on TSHMEMX_TEAM_NODE");
}

TEST(SpanTeams, HostChecksKeepTheirMessagesAndTheAreaIsNoBuffer) {
  TSHMEM_REQUIRE_GPU();
  SymBuffer buf(4096);
  EXPECT_EQ(tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, buf.get(), buf.get(), 0, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM,
                                        nullptr),
            TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("count is 0"), std::string::npos) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_broadcast_on_stream(TSHMEM_TEAM_WORLD, buf.get(), buf.get(), 16, tshmem_n_pes(), nullptr),
            TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("root"), std::string::npos) << tshmemx_last_error();
  if (tshmemx_local_n_pes() == tshmem_n_pes()) return;  // one node: the end of the heap is the user's
  char *end = static_cast<char *>(tshmemx_heap_base()) + tshmemx_heap_size() - 64;
  EXPECT_EQ(tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, end, buf.get(), 16, nullptr), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("reserved region at the end of the heap"), std::string::npos)
      << tshmemx_last_error();
}

}  // namespace
