// tshmem_ep on the GPU, real processes under mpirun: every result equals the CPU reference bit for bit (layout,
// dispatch of bf16 and fp8 + scales, combine in its fixed order), over top-k 1/2/8, 8..256 experts, PEs with no
// tokens, every token to every PE, tokens only to their home PE, -1 entries, alignment 1 and 128; then the cached
// dispatch, the worst-case form captured in a CUDA graph and replayed, 100 rounds back to back, and the value and
// size errors (every PE fails alike). Each PE builds the whole job's inputs from one seed and uploads its share.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "combine/combine_reference.h"
#include "core/rows.h"
#include "dispatch/dispatch_reference.h"
#include "layout/layout.h"
#include "test/gpu_fixture.h"
#include "test/world.h"

namespace tshmem_ep {
namespace {

/// Fresh device arrays hold 0xff bytes: an output the library leaves unwritten differs from the reference.
template <class T>
using Dev = DeviceArray<T, 0xff>;

bool *as_bool(uint8_t *p) { return reinterpret_cast<bool *>(p); }

struct Shape {
  int64_t k, experts, hidden, alignment;
  bool fp8;
  int route;
};

std::vector<int64_t> token_counts(int n, int64_t base) {
  std::vector<int64_t> t;
  for (int p = 0; p < n; ++p) t.push_back(n > 1 && p == 1 ? 0 : base + 7 * p);  // PE 1 has no tokens
  return t;
}

/// The combine input of every PE: a bf16 row per received row, derived from what it received.
std::vector<PeCombineIn> combine_inputs(const std::vector<PeReceived> &recv, int64_t hidden, int64_t num_tokens_me,
                                        int me, bool bias) {
  std::vector<PeCombineIn> in(recv.size());
  for (size_t p = 0; p < recv.size(); ++p) {
    const PeReceived &r = recv[p];
    in[p].x.resize(static_cast<size_t>(r.num_recv * hidden));
    for (size_t i = 0; i < in[p].x.size(); ++i)
      in[p].x[i] = static_cast<uint16_t>(0x3c00 + ((r.x[i % r.x.size()] * 7u + p) & 0x3ff));
    in[p].topk_weights = r.topk_weights;
  }
  if (bias) {
    in[static_cast<size_t>(me)].bias0.assign(static_cast<size_t>(num_tokens_me * hidden), 0x3f00);
    in[static_cast<size_t>(me)].bias1.assign(static_cast<size_t>(num_tokens_me * hidden), 0xbe80);
  }
  return in;
}

/// One buffer for the whole binary, large enough for every case here.
tshmem_ep_buffer_t buffer() {
  static tshmem_ep_buffer_t b = nullptr;
  if (!b) {
    size_t nvl = 0, rdma = 0;
    if (tshmem_ep_buffer_size_hint(tshmem_n_pes(), 160, 512, TSHMEM_EP_BFLOAT16, 8, &nvl, &rdma) == 0 &&
        tshmem_ep_buffer_create(nvl, rdma, &b) == 0)
      tshmem_ep_buffer_set_timeout_ms(b, 0);  // the signal waits end at the test's TSHMEM_WAIT_TIMEOUT_MS
  }
  return b;
}

/// Layout, notify, dispatch and combine of one job on this PE, checked against the references.
void run_case(const Shape &s, uint32_t seed, int rounds) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const auto tokens = token_counts(n, 9);
  const auto world = make_world(tokens, s.hidden, s.fp8, s.k, s.experts, s.route, seed);
  const PeTokens &mine = world[static_cast<size_t>(me)];
  const int64_t T = mine.num_tokens, local = s.experts / n;
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr) << tshmem_ep_last_error();
  tshmem_ep_buffer_info_t info{};
  EP_OK(tshmem_ep_buffer_info(b, &info));
  // Layout.
  Dev<int64_t> idx(mine.topk_idx);
  Dev<int32_t> per_rank(static_cast<size_t>(n)), per_node(static_cast<size_t>(info.num_nodes)),
      per_expert(static_cast<size_t>(s.experts));
  Dev<uint8_t> in_rank(static_cast<size_t>(T * n));
  EP_OK(tshmem_ep_get_dispatch_layout(b, idx.p, T, s.k, s.experts, per_rank.p, per_node.p, per_expert.p,
                                      as_bool(in_rank.p), nullptr));
  LayoutRef lref;
  ASSERT_EQ(reference_layout(mine.topk_idx.data(), T, s.k, s.experts, n, info.pes_per_node, &lref), kSuccess);
  EXPECT_EQ(per_rank.host(static_cast<size_t>(n)), lref.per_rank);
  EXPECT_EQ(per_node.host(static_cast<size_t>(info.num_nodes)), lref.per_node);
  EXPECT_EQ(per_expert.host(static_cast<size_t>(s.experts)), lref.per_expert);
  const auto ir = in_rank.host(static_cast<size_t>(T * n));
  for (size_t i = 0; i < ir.size(); ++i) ASSERT_EQ(ir[i], lref.in_rank[i]) << "is_token_in_rank at " << i;
  // References.
  std::vector<PeReceived> rref;
  ASSERT_EQ(reference_dispatch(world, s.hidden, s.fp8 ? 1 : 2, s.fp8, s.k, s.experts, s.alignment, &rref), kSuccess);
  const PeReceived &want = rref[static_cast<size_t>(me)];
  const auto cin = combine_inputs(rref, s.hidden, T, me, true);
  std::vector<PeCombined> cref;
  ASSERT_EQ(reference_combine(tokens, rref, cin, s.hidden, s.k, &cref), kSuccess);
  // Notify, dispatch, combine.
  tshmem_ep_handle_t h = nullptr;
  EP_OK(tshmem_ep_handle_create(b, T, s.experts, &h));
  Dev<uint8_t> x(mine.x);
  Dev<float> scales(mine.scales), w(mine.topk_weights);
  const tshmem_ep_dtype_t dt = s.fp8 ? TSHMEM_EP_FLOAT8_E4M3 : TSHMEM_EP_BFLOAT16;
  const size_t row = static_cast<size_t>(s.hidden) * (s.fp8 ? 1 : 2);
  std::vector<uint16_t> first_combined;
  for (int round = 0; round < rounds; ++round) {
    int64_t num_recv = -2;
    std::vector<int32_t> per_local(static_cast<size_t>(local));
    EP_OK(tshmem_ep_notify(b, h, as_bool(in_rank.p), per_expert.p, T, s.experts, s.alignment, 0, &num_recv,
                           per_local.data(), nullptr));
    ASSERT_EQ(num_recv, want.num_recv);
    ASSERT_EQ(per_local, want.per_expert);
    const size_t R = static_cast<size_t>(num_recv);
    Dev<uint8_t> rx(R * row);
    Dev<float> rsc(R * static_cast<size_t>(s.hidden / 128)), rw(R * static_cast<size_t>(s.k));
    Dev<int64_t> ridx(R * static_cast<size_t>(s.k));
    Dev<int32_t> rsrc(R);
    EP_OK(tshmem_ep_dispatch(b, h, x.p, dt, s.fp8 ? scales.p : nullptr, T, s.hidden, idx.p, w.p, s.k, rx.p,
                             s.fp8 ? rsc.p : nullptr, ridx.p, rw.p, rsrc.p, num_recv, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    ASSERT_EQ(rx.host(R * row), want.x);
    if (s.fp8) ASSERT_EQ(rsc.host(R * static_cast<size_t>(s.hidden / 128)), want.scales);
    ASSERT_EQ(ridx.host(R * static_cast<size_t>(s.k)), want.topk_idx);
    ASSERT_EQ(rw.host(R * static_cast<size_t>(s.k)), want.topk_weights);
    ASSERT_EQ(rsrc.host(R), want.src_idx);
    const PeCombineIn &cm = cin[static_cast<size_t>(me)];
    Dev<uint16_t> cx(cm.x), b0(cm.bias0), b1(cm.bias1), out(static_cast<size_t>(T * s.hidden));
    Dev<float> cw(cm.topk_weights), outw(static_cast<size_t>(T * s.k));
    EP_OK(tshmem_ep_combine(b, h, cx.p, TSHMEM_EP_BFLOAT16, num_recv, s.hidden, cw.p, s.k, b0.p, b1.p, out.p, outw.p,
                            nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    const auto got = out.host(static_cast<size_t>(T * s.hidden));
    ASSERT_EQ(got, cref[static_cast<size_t>(me)].x) << "round " << round;
    ASSERT_EQ(outw.host(static_cast<size_t>(T * s.k)), cref[static_cast<size_t>(me)].topk_weights);
    if (round == 0) first_combined = got;
    ASSERT_EQ(got, first_combined);
  }
  EP_OK(tshmem_ep_check_device_errors(b, nullptr));
  EP_OK(tshmem_ep_handle_destroy(h));
}

class EpGpu : public ::testing::TestWithParam<Shape> {};

/// The setup the single cases share: every PE's tokens from one seed, this PE's routing laid out on the device
/// (the notify's inputs) and a handle on the buffer, destroyed after the test.
class EpGpuJob : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    n = tshmem_n_pes();
    me = tshmem_my_pe();
  }
  void TearDown() override {
    if (h) EXPECT_EQ(tshmem_ep_handle_destroy(h), TSHMEM_EP_SUCCESS) << tshmem_ep_last_error();
  }
  /// `base` sets the tokens per PE (token_counts), `seed` the routing and the rows.
  void route(const Shape &shape, int64_t base, uint32_t seed, tshmem_ep_buffer_t buf) {
    s = shape;
    b = buf;
    tokens = token_counts(n, base);
    world = make_world(tokens, s.hidden, s.fp8, s.k, s.experts, s.route, seed);
    T = mine().num_tokens;
    idx.emplace(mine().topk_idx);
    per_rank.emplace(static_cast<size_t>(n));
    per_expert.emplace(static_cast<size_t>(s.experts));
    in_rank.emplace(static_cast<size_t>(T * n));
    EP_OK(tshmem_ep_get_dispatch_layout(b, idx->p, T, s.k, s.experts, per_rank->p, nullptr, per_expert->p,
                                        as_bool(in_rank->p), nullptr));
    EP_OK(tshmem_ep_handle_create(b, T, s.experts, &h));
  }
  const PeTokens &mine() const { return world[static_cast<size_t>(me)]; }
  /// The notify of this job on the default stream.
  tshmem_ep_status_t notify(int64_t *num_recv) {
    return tshmem_ep_notify(b, h, as_bool(in_rank->p), per_expert->p, T, s.experts, s.alignment, 0, num_recv, nullptr,
                            nullptr);
  }

  int n = 0, me = 0;
  Shape s{};
  tshmem_ep_buffer_t b = nullptr;
  tshmem_ep_handle_t h = nullptr;
  std::vector<int64_t> tokens;
  std::vector<PeTokens> world;
  int64_t T = 0;
  std::optional<Dev<int64_t>> idx;
  std::optional<Dev<int32_t>> per_rank, per_expert;
  std::optional<Dev<uint8_t>> in_rank;
};

TEST_P(EpGpu, EqualsReference) {
  REQUIRE_GPU();
  run_case(GetParam(), 11, 1);
}

INSTANTIATE_TEST_SUITE_P(Shapes, EpGpu,
                         ::testing::Values(Shape{1, 8, 128, 1, false, 0}, Shape{2, 16, 256, 128, false, 0},
                                           Shape{8, 256, 512, 1, true, 0}, Shape{8, 64, 256, 128, true, 1},
                                           Shape{2, 32, 128, 1, false, 2}, Shape{8, 128, 256, 1, false, 3},
                                           Shape{8, 8, 128, 128, true, 3}, Shape{1, 256, 512, 1, true, 2}));

TEST(EpGpuRounds, HundredBackToBack) {
  REQUIRE_GPU();
  run_case(Shape{8, 64, 256, 1, false, 0}, 23, 100);
}

/// Cached dispatch: a second dispatch of other activations on the same handle, no notify, no top-k.
TEST_F(EpGpuJob, CachedSecondDispatchOnTheHandle) {
  route(Shape{8, 64, 256, 1, false, 0}, 12, 5, buffer());
  auto world2 = world;
  for (auto &p : world2)
    for (auto &byte : p.x) byte = static_cast<uint8_t>(byte ^ 0x15);
  std::vector<PeReceived> r1, r2;
  ASSERT_EQ(reference_dispatch(world, s.hidden, 2, false, s.k, s.experts, 1, &r1), kSuccess);
  ASSERT_EQ(reference_dispatch(world2, s.hidden, 2, false, s.k, s.experts, 1, &r2), kSuccess);
  int64_t R = 0;
  EP_OK(notify(&R));
  const size_t row = static_cast<size_t>(s.hidden) * 2;
  Dev<uint8_t> x1(mine().x), x2(world2[static_cast<size_t>(me)].x), rx(static_cast<size_t>(R) * row);
  EP_OK(tshmem_ep_dispatch(b, h, x1.p, TSHMEM_EP_BFLOAT16, nullptr, T, s.hidden, nullptr, nullptr, 0, rx.p, nullptr,
                           nullptr, nullptr, nullptr, R, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(rx.host(static_cast<size_t>(R) * row), r1[static_cast<size_t>(me)].x);
  EP_OK(tshmem_ep_dispatch(b, h, x2.p, TSHMEM_EP_BFLOAT16, nullptr, T, s.hidden, nullptr, nullptr, 0, rx.p, nullptr,
                           nullptr, nullptr, nullptr, R, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(rx.host(static_cast<size_t>(R) * row), r2[static_cast<size_t>(me)].x);
}

/// num_worst_tokens: notify, dispatch and combine captured in one CUDA graph, replayed three times.
TEST_F(EpGpuJob, WorstCaseCapturedAndReplayed) {
  route(Shape{2, 16, 256, 128, true, 0}, 10, 9, buffer());
  std::vector<PeReceived> rref;
  ASSERT_EQ(reference_dispatch(world, s.hidden, 1, true, s.k, s.experts, s.alignment, &rref), kSuccess);
  const auto cin = combine_inputs(rref, s.hidden, tokens[static_cast<size_t>(me)], me, false);
  std::vector<PeCombined> cref;
  ASSERT_EQ(reference_combine(tokens, rref, cin, s.hidden, 0, &cref), kSuccess);
  const PeReceived &want = rref[static_cast<size_t>(me)];
  int64_t worst = 0;
  for (int64_t c : tokens) worst += c;
  const size_t W = static_cast<size_t>(worst);
  Dev<uint8_t> x(mine().x), rx(W * static_cast<size_t>(s.hidden));
  Dev<float> sc(mine().scales), w(mine().topk_weights), rsc(W * static_cast<size_t>(s.hidden / 128)),
      rw(W * static_cast<size_t>(s.k));
  Dev<int64_t> ridx(W * static_cast<size_t>(s.k));
  // The combine input sized to the worst case; rows past the received count are ignored.
  std::vector<uint16_t> cx_host(W * static_cast<size_t>(s.hidden), 0x7fff);
  std::copy(cin[static_cast<size_t>(me)].x.begin(), cin[static_cast<size_t>(me)].x.end(), cx_host.begin());
  Dev<uint16_t> cx(cx_host), out(static_cast<size_t>(T * s.hidden));
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  int64_t R = 0;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  EP_OK(tshmem_ep_notify(b, h, as_bool(in_rank->p), per_expert->p, T, s.experts, s.alignment, worst, &R, nullptr, st));
  EP_OK(tshmem_ep_dispatch(b, h, x.p, TSHMEM_EP_FLOAT8_E4M3, sc.p, T, s.hidden, idx->p, w.p, s.k, rx.p, rsc.p, ridx.p,
                           rw.p, nullptr, worst, st));
  EP_OK(tshmem_ep_combine(b, h, cx.p, TSHMEM_EP_BFLOAT16, worst, s.hidden, nullptr, 0, nullptr, nullptr, out.p, nullptr,
                          st));
  CUDA_OK(cudaStreamEndCapture(st, &graph));
  EXPECT_EQ(R, -1);
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  const size_t Rw = static_cast<size_t>(want.num_recv);
  for (int replay = 0; replay < 3; ++replay) {
    CUDA_OK(cudaMemset(out.p, 0, sizeof(uint16_t) * static_cast<size_t>(T * s.hidden)));
    CUDA_OK(cudaGraphLaunch(exec, st));
    CUDA_OK(cudaStreamSynchronize(st));
    const int32_t *counts = nullptr;
    EP_OK(tshmem_ep_handle_device_counts(h, &counts));
    std::vector<int32_t> c(static_cast<size_t>(1 + s.experts / n));
    CUDA_OK(cudaMemcpy(c.data(), counts, sizeof(int32_t) * c.size(), cudaMemcpyDeviceToHost));
    ASSERT_EQ(c[0], want.num_recv);
    ASSERT_EQ(std::vector<int32_t>(c.begin() + 1, c.end()), want.per_expert);
    auto gx = rx.host(W * static_cast<size_t>(s.hidden));
    gx.resize(Rw * static_cast<size_t>(s.hidden));
    ASSERT_EQ(gx, want.x);
    auto gi = ridx.host(W * static_cast<size_t>(s.k));
    for (size_t i = Rw * static_cast<size_t>(s.k); i < gi.size(); ++i) ASSERT_EQ(gi[i], -1);
    gi.resize(Rw * static_cast<size_t>(s.k));
    ASSERT_EQ(gi, want.topk_idx);
    ASSERT_EQ(out.host(static_cast<size_t>(T * s.hidden)), cref[static_cast<size_t>(me)].x) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
  EP_OK(tshmem_ep_check_device_errors(b, nullptr));
}

/// An expert id out of range on PE 0: its layout call says which; every PE's notify then fails, nobody dispatches;
/// bad arguments are refused on the host.
TEST(EpGpuErrors, BadExpertIdFailsEveryPe) {
  REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const int64_t E = 8 * n, T = 4, K = 2;
  std::vector<int64_t> idx_h(static_cast<size_t>(T * K), 0);
  if (me == 0) idx_h[3] = E;  // out of range
  tshmem_ep_buffer_t b = buffer();
  Dev<int64_t> idx(idx_h);
  Dev<int32_t> per_rank(static_cast<size_t>(n)), per_expert(static_cast<size_t>(E));
  Dev<uint8_t> in_rank(static_cast<size_t>(T * n));
  const tshmem_ep_status_t s =
      tshmem_ep_get_dispatch_layout(b, idx.p, T, K, E, per_rank.p, nullptr, per_expert.p, as_bool(in_rank.p), nullptr);
  if (me == 0) {
    EXPECT_EQ(s, TSHMEM_EP_ERR_INVALID_VALUE);
    EXPECT_NE(std::string(tshmem_ep_last_error()).find("flat position 3"), std::string::npos) << tshmem_ep_last_error();
  } else {
    EXPECT_EQ(s, TSHMEM_EP_SUCCESS);
  }
  tshmem_ep_handle_t h = nullptr;
  EP_OK(tshmem_ep_handle_create(b, T, E, &h));
  int64_t R = 0;
  EXPECT_EQ(tshmem_ep_buffer_set_timeout_ms(b, -1), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tshmem_ep_buffer_set_num_blocks(b, -1), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  // Wrong alignment and dtype: refused before anything is launched, on every PE alike.
  EXPECT_EQ(tshmem_ep_notify(b, h, as_bool(in_rank.p), per_expert.p, T, E, 0, 0, &R, nullptr, nullptr),
            TSHMEM_EP_ERR_INVALID_ARGUMENT);
  // The value error recorded on PE 0 is published by the notify: every PE refuses, PE 0 names the entry.
  EXPECT_EQ(tshmem_ep_notify(b, h, as_bool(in_rank.p), per_expert.p, T, E, 1, 0, &R, nullptr, nullptr),
            TSHMEM_EP_ERR_INVALID_VALUE);
  if (me == 0)
    EXPECT_NE(std::string(tshmem_ep_last_error()).find("flat position 3"), std::string::npos) << tshmem_ep_last_error();
  // The handle of a failed notify is not dispatched from.
  EXPECT_EQ(tshmem_ep_dispatch(b, h, idx.p, TSHMEM_EP_BFLOAT16, nullptr, T, 128, nullptr, nullptr, 0, nullptr, nullptr,
                               nullptr, nullptr, nullptr, 0, nullptr),
            TSHMEM_EP_ERR_INVALID_ARGUMENT);
  // The record was cleared by that report: a correct routing notifies again on every PE.
  std::vector<int64_t> good(static_cast<size_t>(T * K), 1);
  Dev<int64_t> idx2(good);
  EP_OK(tshmem_ep_get_dispatch_layout(b, idx2.p, T, K, E, per_rank.p, nullptr, per_expert.p, as_bool(in_rank.p),
                                      nullptr));
  EP_OK(tshmem_ep_notify(b, h, as_bool(in_rank.p), per_expert.p, T, E, 1, 0, &R, nullptr, nullptr));
  EXPECT_EQ(tshmem_ep_dispatch(b, h, idx.p, TSHMEM_EP_FLOAT32, nullptr, T, 128, nullptr, nullptr, 0, nullptr, nullptr,
                               nullptr, nullptr, nullptr, 0, nullptr),
            TSHMEM_EP_ERR_INVALID_ARGUMENT);
  EP_OK(tshmem_ep_handle_destroy(h));
}

/// A dispatch whose rows do not fit the receive area: every PE refuses it on the host (the counts of every PE are
/// known after the notify), with the bytes it needs.
TEST_F(EpGpuJob, TooSmallBufferFailsEveryPe) {
  tshmem_ep_buffer_t small = nullptr;
  EP_OK(tshmem_ep_buffer_create(4096, 4096, &small));
  route(Shape{8, 64, 256, 1, false, 1}, 20, 3, small);
  int64_t R = 0;
  EP_OK(notify(&R));
  Dev<uint8_t> x(mine().x), rx(static_cast<size_t>(R) * 512 + 16);
  EXPECT_EQ(tshmem_ep_dispatch(small, h, x.p, TSHMEM_EP_BFLOAT16, nullptr, T, s.hidden, nullptr, nullptr, 0, rx.p,
                               nullptr, nullptr, nullptr, nullptr, R, nullptr),
            TSHMEM_EP_ERR_BUFFER_TOO_SMALL);
  EXPECT_NE(std::string(tshmem_ep_last_error()).find("num_nvl_bytes"), std::string::npos) << tshmem_ep_last_error();
  EP_OK(tshmem_ep_handle_destroy(h));
  h = nullptr;
  EP_OK(tshmem_ep_buffer_destroy(small));
}

/// Across nodes the rows for PEs of other nodes are put in one request per PE when they fit the staging area side
/// by side, else row by row. A buffer whose num_rdma_bytes is the least the calls accept (the most tokens of any PE
/// in dispatch rows, the most received rows in combine rows) takes both: at np 2 with nodes of 1 PE the rows for
/// the one other node fit; at np 4 with nodes of 1 or 2 PEs those of the PE with the most tokens, for two or three
/// other PEs, do not. Either way every output equals the reference bit for bit.
TEST_F(EpGpuJob, OffNodeRowsWithTheLeastStagingArea) {
  const Shape shape{8, 64, 256, 1, false, 0};
  const auto counts = token_counts(n, 24);
  const auto all = make_world(counts, shape.hidden, false, shape.k, shape.experts, shape.route, 33);
  std::vector<PeReceived> rref;
  ASSERT_EQ(reference_dispatch(all, shape.hidden, 2, false, shape.k, shape.experts, 1, &rref), kSuccess);
  int64_t max_tokens = 0, max_recv = 0;
  for (int p = 0; p < n; ++p) {
    max_tokens = std::max(max_tokens, counts[static_cast<size_t>(p)]);
    max_recv = std::max(max_recv, rref[static_cast<size_t>(p)].num_recv);
  }
  const size_t rdma = std::max(static_cast<size_t>(max_tokens) * dispatch_row(shape.hidden, 2, false, shape.k).stride,
                               static_cast<size_t>(max_recv) * combine_row(shape.hidden, shape.k).stride);
  size_t nvl = 0, unused = 0;
  ASSERT_EQ(tshmem_ep_buffer_size_hint(n, 64, shape.hidden, TSHMEM_EP_BFLOAT16, shape.k, &nvl, &unused), 0);
  tshmem_ep_buffer_t least = nullptr;
  EP_OK(tshmem_ep_buffer_create(nvl, rdma, &least));
  EP_OK(tshmem_ep_buffer_set_timeout_ms(least, 0));
  route(shape, 24, 33, least);
  const PeReceived &want = rref[static_cast<size_t>(me)];
  const auto cin = combine_inputs(rref, s.hidden, T, me, false);
  std::vector<PeCombined> cref;
  ASSERT_EQ(reference_combine(tokens, rref, cin, s.hidden, s.k, &cref), kSuccess);
  int64_t R = 0;
  EP_OK(notify(&R));
  ASSERT_EQ(R, want.num_recv);
  const size_t row = static_cast<size_t>(s.hidden) * 2, K = static_cast<size_t>(s.k);
  Dev<uint8_t> x(mine().x), rx(static_cast<size_t>(R) * row);
  Dev<float> w(mine().topk_weights), rw(static_cast<size_t>(R) * K);
  Dev<int64_t> ridx(static_cast<size_t>(R) * K);
  Dev<int32_t> rsrc(static_cast<size_t>(R));
  EP_OK(tshmem_ep_dispatch(least, h, x.p, TSHMEM_EP_BFLOAT16, nullptr, T, s.hidden, idx->p, w.p, s.k, rx.p, nullptr,
                           ridx.p, rw.p, rsrc.p, R, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(rx.host(static_cast<size_t>(R) * row), want.x);
  EXPECT_EQ(ridx.host(static_cast<size_t>(R) * K), want.topk_idx);
  EXPECT_EQ(rw.host(static_cast<size_t>(R) * K), want.topk_weights);
  EXPECT_EQ(rsrc.host(static_cast<size_t>(R)), want.src_idx);
  const PeCombineIn &cm = cin[static_cast<size_t>(me)];
  Dev<uint16_t> cx(cm.x), out(static_cast<size_t>(T * s.hidden));
  Dev<float> cw(cm.topk_weights), outw(static_cast<size_t>(T) * K);
  EP_OK(tshmem_ep_combine(least, h, cx.p, TSHMEM_EP_BFLOAT16, R, s.hidden, cw.p, s.k, nullptr, nullptr, out.p, outw.p,
                          nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(out.host(static_cast<size_t>(T * s.hidden)), cref[static_cast<size_t>(me)].x);
  EXPECT_EQ(outw.host(static_cast<size_t>(T) * K), cref[static_cast<size_t>(me)].topk_weights);
  EP_OK(tshmem_ep_check_device_errors(least, nullptr));
  EP_OK(tshmem_ep_handle_destroy(h));
  h = nullptr;
  EP_OK(tshmem_ep_buffer_destroy(least));
}

}  // namespace
}  // namespace tshmem_ep

int main(int argc, char **argv) { return tshmem_ep::gpu_test_main(argc, argv, tshmem_ep::buffer); }
