// The host side of tshmem_ep without a GPU or MPI: the argument rules and their messages (every bad-input path
// of the C API goes through these functions before anything is launched), the CPU references (hand-worked cases
// and invariants over the shapes the GPU suite runs), the sizing calls and the status strings.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "combine/combine_reference.h"
#include "core/checks.h"
#include "core/routes.h"
#include "core/rows.h"
#include "dispatch/dispatch_reference.h"
#include "layout/layout.h"
#include "test/world.h"
#include "tshmem/moe.h"

namespace tshmem_ep {
namespace {

Geometry geo(int n_pes, int my_pe = 0) {
  Geometry g;
  g.n_pes = n_pes;
  g.my_pe = my_pe;
  g.pes_per_node = n_pes;
  g.nvl_bytes = 1 << 20;
  return g;
}

/// The last error names the call, the value and (a word of) the rule.
void expect_message(const char *call, const std::string &value, const std::string &rule) {
  const std::string m = last_error();
  EXPECT_EQ(m.rfind(call, 0), 0u) << m;
  EXPECT_NE(m.find(value), std::string::npos) << m;
  EXPECT_NE(m.find(rule), std::string::npos) << m;
}

/// A check refused its arguments (INVALID_ARGUMENT) with a message naming the call, the value and the rule.
void expect_refused(Status got, const char *call, const std::string &value, const std::string &rule) {
  EXPECT_EQ(got, TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message(call, value, rule);
}

TEST(EpStatus, EveryStatusHasAName) {
  for (int s = 0; s < TSHMEM_EP_NUM_STATUS; ++s)
    EXPECT_EQ(std::string(tshmem_ep_status_string(static_cast<tshmem_ep_status_t>(s))).find("unknown"),
              std::string::npos);
  EXPECT_EQ(tshmem_ep_dtype_size(TSHMEM_EP_BFLOAT16), 2u);
  EXPECT_EQ(tshmem_ep_dtype_size(TSHMEM_EP_FLOAT8_E4M3), 1u);
  EXPECT_EQ(tshmem_ep_dtype_size(TSHMEM_EP_NUM_DTYPES), 0u);
}

alignas(16) char g_mem[1024];
const void *kX = g_mem;
void *kOut = g_mem + 512;
const float *kF = reinterpret_cast<const float *>(g_mem);
const int64_t *kI = reinterpret_cast<const int64_t *>(g_mem);

TEST(EpChecks, DispatchRules) {
  CallScope call("tshmem_ep_dispatch");
  const Geometry g = geo(2);
  auto dispatch = [&](tshmem_ep_dtype_t dt, int64_t hidden, const float *scales, const int64_t *idx, const float *w,
                      int64_t k, int64_t tokens = 4, int64_t cap = 8, const void *x = kX) {
    return check_dispatch_args(g, 4, x, dt, scales, tokens, hidden, idx, w, k, kOut,
                               dt == TSHMEM_EP_FLOAT8_E4M3 ? kF : nullptr, cap);
  };
  EXPECT_EQ(dispatch(TSHMEM_EP_BFLOAT16, 7168, nullptr, kI, kF, 8), kSuccess);
  EXPECT_EQ(dispatch(TSHMEM_EP_FLOAT8_E4M3, 7168, kF, nullptr, nullptr, 0), kSuccess);
  // Each refused: the arguments, then what the message names (the value, a word of the rule).
  struct Refused {
    tshmem_ep_dtype_t dt;
    int64_t hidden;
    const float *scales;
    const int64_t *idx;
    const float *w;
    int64_t k, tokens, cap;
    const void *x;
    const char *value, *rule;
  };
  const Refused cases[] = {
      {TSHMEM_EP_FLOAT32, 7168, nullptr, nullptr, nullptr, 0, 4, 8, kX, "x_dtype = 2", "BFLOAT16"},  // wrong dtype
      {TSHMEM_EP_FLOAT8_E4M3, 7000, kF, nullptr, nullptr, 0, 4, 8, kX, "hidden = 7000", "multiple of 128"},
      {TSHMEM_EP_BFLOAT16, 100, nullptr, nullptr, nullptr, 0, 4, 8, kX, "hidden = 100", "multiple of 8"},
      {TSHMEM_EP_FLOAT8_E4M3, 256, nullptr, nullptr, nullptr, 0, 4, 8, kX, "x_scales", "scales"},
      {TSHMEM_EP_BFLOAT16, 256, kF, nullptr, nullptr, 0, 4, 8, kX, "x_scales", "no scales"},
      {TSHMEM_EP_BFLOAT16, 256, nullptr, kI, nullptr, 8, 4, 8, kX, "topk_weights", "both or neither"},
      {TSHMEM_EP_BFLOAT16, 256, nullptr, kI, kF, 33, 4, 8, kX, "num_topk = 33", "[1, TSHMEM_EP_MAX_TOPK"},
      {TSHMEM_EP_BFLOAT16, 256, nullptr, nullptr, nullptr, 0, 5, 8, kX, "num_tokens = 5", "notify had 4"},
      {TSHMEM_EP_BFLOAT16, 256, nullptr, nullptr, nullptr, 0, 4, 8, g_mem + 8, "x = ", "16-byte aligned"},
  };
  for (const Refused &c : cases) {
    SCOPED_TRACE(c.value);
    expect_refused(dispatch(c.dt, c.hidden, c.scales, c.idx, c.w, c.k, c.tokens, c.cap, c.x), "tshmem_ep_dispatch",
                   c.value, c.rule);
  }
}

TEST(EpChecks, CombineRules) {
  CallScope call("tshmem_ep_combine");
  const Geometry g = geo(4);
  EXPECT_EQ(check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 7168, kF, 8, kF, kOut), kSuccess);
  expect_refused(check_combine_args(g, kX, TSHMEM_EP_FLOAT8_E4M3, 3, 7168, nullptr, 0, nullptr, kOut),
                 "tshmem_ep_combine", "x_dtype = 1", "BFLOAT16");
  expect_refused(check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 12, nullptr, 0, nullptr, kOut), "tshmem_ep_combine",
                 "hidden = 12", "multiple of 8");
  expect_refused(check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 16, kF, 2, nullptr, kOut), "tshmem_ep_combine",
                 "combined_topk_weights", "both or neither");
  expect_refused(check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 16, nullptr, 0, nullptr, nullptr),
                 "tshmem_ep_combine", "combined_x = NULL", "required");
  expect_refused(check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 16, nullptr, 0, nullptr, kOut, g_mem + 4),
                 "tshmem_ep_combine", "bias0 = ", "16-byte aligned");
}

// One rule in every call: NULL stands for an array of zero elements (an empty tensor's data pointer is 0), never
// for one that has elements.
TEST(EpChecks, NullStandsForEmptyArraysOnly) {
  const Geometry g = geo(2);
  {
    CallScope call("tshmem_ep_dispatch");
    // A PE without tokens: x, x_scales, topk_idx, topk_weights NULL with num_topk = 2 (what every PE passes),
    // outputs for the rows it receives.
    EXPECT_EQ(
        check_dispatch_args(g, 0, nullptr, TSHMEM_EP_FLOAT8_E4M3, nullptr, 0, 256, nullptr, nullptr, 2, kOut, kF, 8),
        kSuccess)
        << last_error();
    EXPECT_EQ(
        check_dispatch_args(g, 0, nullptr, TSHMEM_EP_BFLOAT16, nullptr, 0, 256, nullptr, nullptr, 0, kOut, nullptr, 8),
        kSuccess);
    // ... and receiving nothing: the outputs may be NULL too.
    EXPECT_EQ(check_dispatch_args(g, 0, nullptr, TSHMEM_EP_FLOAT8_E4M3, nullptr, 0, 256, nullptr, nullptr, 2, nullptr,
                                  nullptr, 0),
              kSuccess);
    expect_refused(
        check_dispatch_args(g, 0, nullptr, TSHMEM_EP_BFLOAT16, nullptr, 0, 256, nullptr, nullptr, 33, kOut, nullptr, 8),
        "tshmem_ep_dispatch", "num_topk = 33", "[1, TSHMEM_EP_MAX_TOPK");
    // With tokens, NULL is refused.
    expect_refused(
        check_dispatch_args(g, 4, kX, TSHMEM_EP_BFLOAT16, nullptr, 4, 256, nullptr, nullptr, 2, kOut, nullptr, 8),
        "tshmem_ep_dispatch", "num_topk = 2", "must be 0 when topk_idx is NULL");
    expect_refused(check_dispatch_args(g, 4, kX, TSHMEM_EP_BFLOAT16, nullptr, 4, 256, kI, nullptr, 2, kOut, nullptr, 8),
                   "tshmem_ep_dispatch", "topk_weights = (nil)", "both or neither");
    expect_refused(
        check_dispatch_args(g, 4, nullptr, TSHMEM_EP_BFLOAT16, nullptr, 4, 256, nullptr, nullptr, 0, kOut, nullptr, 8),
        "tshmem_ep_dispatch", "x = NULL", "required");
    EXPECT_EQ(check_dispatch_args(g, 4, kX, TSHMEM_EP_FLOAT8_E4M3, nullptr, 4, 256, nullptr, nullptr, 0, kOut, kF, 8),
              TSHMEM_EP_ERR_INVALID_ARGUMENT);
    expect_message("tshmem_ep_dispatch", "x_scales", "= NULL; it is required");
    expect_refused(
        check_dispatch_args(g, 4, kX, TSHMEM_EP_BFLOAT16, nullptr, 4, 256, nullptr, nullptr, 0, nullptr, nullptr, 8),
        "tshmem_ep_dispatch", "recv_x = NULL", "required");
  }
  {
    CallScope call("tshmem_ep_combine");
    // No rows received and no tokens of its own: every array is empty.
    EXPECT_EQ(
        check_combine_args(g, nullptr, TSHMEM_EP_BFLOAT16, 0, 256, nullptr, 2, nullptr, nullptr, nullptr, nullptr, 0),
        kSuccess)
        << last_error();
    // Rows received, no tokens: combined_x and combined_topk_weights may be NULL; the rows may not.
    EXPECT_EQ(check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 256, kF, 2, nullptr, nullptr, nullptr, nullptr, 0),
              kSuccess);
    expect_refused(
        check_combine_args(g, kX, TSHMEM_EP_BFLOAT16, 3, 256, nullptr, 2, nullptr, nullptr, nullptr, nullptr, 0),
        "tshmem_ep_combine", "num_topk = 2", "must be 0 when topk_weights is NULL");
    // Tokens, no rows: x and topk_weights may be NULL; the outputs may not.
    EXPECT_EQ(check_combine_args(g, nullptr, TSHMEM_EP_BFLOAT16, 0, 256, nullptr, 2, kF, kOut, nullptr, nullptr, 5),
              kSuccess);
    expect_refused(
        check_combine_args(g, nullptr, TSHMEM_EP_BFLOAT16, 0, 256, nullptr, 2, nullptr, kOut, nullptr, nullptr, 5),
        "tshmem_ep_combine", "combined_topk_weights = (nil)", "both or neither");
    expect_refused(
        check_combine_args(g, nullptr, TSHMEM_EP_BFLOAT16, 0, 256, nullptr, 0, nullptr, nullptr, nullptr, nullptr, 5),
        "tshmem_ep_combine", "combined_x = NULL", "required");
    expect_refused(
        check_combine_args(g, nullptr, TSHMEM_EP_BFLOAT16, 3, 256, nullptr, 0, nullptr, kOut, nullptr, nullptr, 5),
        "tshmem_ep_combine", "x = NULL", "required");
  }
  {
    CallScope call("tshmem_ep_notify");
    int32_t counts[8] = {};
    int64_t recv = 0;
    EXPECT_EQ(check_notify_args(g, 16, 8, nullptr, counts, 0, 8, 1, 0, &recv), kSuccess);
    expect_refused(check_notify_args(g, 16, 8, nullptr, counts, 3, 8, 1, 0, &recv), "tshmem_ep_notify",
                   "is_token_in_rank = NULL", "required");
  }
}

TEST(EpChecks, LayoutAndNotifyRules) {
  const Geometry g = geo(4);
  int32_t counts[8] = {};
  bool in_rank[8] = {};
  int64_t recv = 0;
  {
    CallScope call("tshmem_ep_get_dispatch_layout");
    EXPECT_EQ(check_layout_args(g, kI, 2, 8, 256, counts, counts, in_rank), kSuccess);
    expect_refused(check_layout_args(g, kI, 2, 8, 258, counts, counts, in_rank), "tshmem_ep_get_dispatch_layout",
                   "num_experts = 258", "multiple of the PE count 4");
    expect_refused(check_layout_args(g, kI, 2, 0, 256, counts, counts, in_rank), "tshmem_ep_get_dispatch_layout",
                   "num_topk = 0", "[1, TSHMEM_EP_MAX_TOPK");
    expect_refused(check_layout_args(g, kI, -1, 8, 256, counts, counts, in_rank), "tshmem_ep_get_dispatch_layout",
                   "num_tokens = -1", ">= 0");
    expect_refused(check_layout_args(g, nullptr, 2, 8, 256, counts, counts, in_rank), "tshmem_ep_get_dispatch_layout",
                   "topk_idx = NULL", "required");
    EXPECT_EQ(check_layout_args(g, nullptr, 0, 8, 256, counts, counts, nullptr), kSuccess);  // 0 tokens
    EXPECT_EQ(check_layout_args(g, kI, 2, 8, 4096, counts, counts, in_rank), TSHMEM_EP_ERR_UNSUPPORTED);
  }
  {
    CallScope call("tshmem_ep_notify");
    EXPECT_EQ(check_notify_args(g, 16, 256, in_rank, counts, 8, 256, 1, 0, &recv), kSuccess);
    expect_refused(check_notify_args(g, 16, 256, in_rank, counts, 8, 256, 0, 0, &recv), "tshmem_ep_notify",
                   "expert_alignment = 0", ">= 1");
    expect_refused(check_notify_args(g, 16, 256, in_rank, counts, 17, 256, 1, 0, &recv), "tshmem_ep_notify",
                   "num_tokens = 17", "at most 16 tokens");
    expect_refused(check_notify_args(g, 16, 256, in_rank, counts, 8, 128, 1, 0, &recv), "tshmem_ep_notify",
                   "num_experts = 128", "made for 256");
    expect_refused(check_notify_args(g, 16, 256, in_rank, counts, 8, 256, 1, -1, &recv), "tshmem_ep_notify",
                   "num_worst_tokens = -1", ">= 0");
  }
}

TEST(EpChecks, TokensBeyondTheBuffer) {
  CallScope call("tshmem_ep_dispatch");
  EXPECT_EQ(check_fits("num_nvl_bytes", 1 << 20, 200, 7232, "the dispatch's largest receiver"),
            TSHMEM_EP_ERR_BUFFER_TOO_SMALL);
  expect_message("tshmem_ep_dispatch", "1446400 bytes of num_nvl_bytes", "the buffer has 1048576");
  EXPECT_EQ(check_fits("num_nvl_bytes", 1 << 20, 100, 7000, "x"), kSuccess);
  EXPECT_EQ(check_recv_capacity(10, 11, "the dispatch"), TSHMEM_EP_ERR_BUFFER_TOO_SMALL);
  expect_message("tshmem_ep_dispatch", "recv_capacity = 10", "needs 11 rows");
  EXPECT_EQ(check_buffer_sizes(0, 0), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(check_buffer_sizes(1000, 8), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(check_buffer_sizes(1024, 0), kSuccess);
}

TEST(EpSizing, RowsAndHints) {
  // DeepEP's shape: fp8 7168 + 56 scales (224 B) + 8 ids + 8 weights + source index.
  EXPECT_EQ(tshmem_ep_dispatch_row_bytes(7168, TSHMEM_EP_FLOAT8_E4M3, 8), 7168u + 224u + 64u + 32u + 16u);
  EXPECT_EQ(tshmem_ep_dispatch_row_bytes(7168, TSHMEM_EP_BFLOAT16, 0), 14336u + 16u);
  EXPECT_EQ(tshmem_ep_dispatch_row_bytes(7000, TSHMEM_EP_FLOAT8_E4M3, 8), 0u);
  EXPECT_EQ(tshmem_ep_combine_row_bytes(7168, 8), 14336u + 32u);
  size_t nvl = 0, rdma = 0;
  ASSERT_EQ(tshmem_ep_buffer_size_hint(8, 4096, 7168, TSHMEM_EP_FLOAT8_E4M3, 8, &nvl, &rdma), kSuccess);
  EXPECT_EQ(nvl, size_t{8} * 4096 * (14336 + 32));
  EXPECT_EQ(tshmem_ep_buffer_size_hint(8, 4096, 7000, TSHMEM_EP_FLOAT8_E4M3, 8, &nvl, &rdma),
            TSHMEM_EP_ERR_INVALID_ARGUMENT);
  // Every part of a row starts on 16 bytes.
  const DispatchRow r = dispatch_row(128, 1, true, 3);
  EXPECT_EQ(r.scales_off % 16, 0u);
  EXPECT_EQ(r.idx_off % 16, 0u);
  EXPECT_EQ(r.weights_off % 16, 0u);
  EXPECT_EQ(r.src_off % 16, 0u);
  EXPECT_EQ(r.stride % 16, 0u);
}

TEST(EpReference, LayoutHandWorked) {
  // 4 PEs, 8 experts (2 per PE), nodes of 2 PEs. Token 0 -> experts 0, 1 (PE 0 only); token 1 -> 3, 6, -1
  // (PEs 1, 3; nodes 0, 1); token 2 -> all -1.
  const int64_t idx[] = {0, 1, -1, 3, 6, -1, -1, -1, -1};
  LayoutRef l;
  ASSERT_EQ(reference_layout(idx, 3, 3, 8, 4, 2, &l), kSuccess);
  EXPECT_EQ(l.per_rank, (std::vector<int32_t>{1, 1, 0, 1}));
  EXPECT_EQ(l.per_node, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(l.per_expert, (std::vector<int32_t>{1, 1, 0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(l.in_rank, (std::vector<uint8_t>{1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}));
}

// The per-expert counts are tshmem_moe's group_count over the same ids (the same -1 rule and range): the layout
// agrees with it on every shape the suite uses.
TEST(EpReference, PerExpertCountsAgreeWithMoeGroupCount) {
  for (int route = 0; route < 4; ++route) {
    const auto world = make_world({37, 0, 12, 5}, 128, false, 8, 64, route, 99u + static_cast<uint32_t>(route));
    for (const PeTokens &pe : world) {
      LayoutRef l;
      ASSERT_EQ(reference_layout(pe.topk_idx.data(), pe.num_tokens, 8, 64, 4, 2, &l), kSuccess);
      const int64_t shape[2] = {pe.num_tokens, 8};
      tshmem_moe_tensor_t idx = tshmem_moe_tensor_make(const_cast<int64_t *>(pe.topk_idx.data()), TSHMEM_MOE_INT64, 2,
                                                       shape, TSHMEM_MOE_DEVICE_CPU);
      tshmem_moe_tensor_t counts{};
      counts.device = TSHMEM_MOE_DEVICE_CPU;
      ASSERT_EQ(tshmem_moe_group_count(&idx, 64, &counts, nullptr), TSHMEM_MOE_SUCCESS) << tshmem_moe_last_error();
      const int32_t *c = static_cast<const int32_t *>(counts.data);
      EXPECT_EQ(std::vector<int32_t>(c, c + 64), l.per_expert);
      tshmem_moe_tensor_free(&counts, nullptr);
    }
  }
}

TEST(EpReference, LayoutValueErrors) {
  CallScope call("tshmem_ep_get_dispatch_layout");
  LayoutRef l;
  const int64_t too_big[] = {0, 8};
  EXPECT_EQ(reference_layout(too_big, 1, 2, 8, 2, 2, &l), TSHMEM_EP_ERR_INVALID_VALUE);
  expect_message("tshmem_ep_get_dispatch_layout", "holds 8 at flat position 1", "[-1, num_experts = 8)");
  const int64_t too_small[] = {-2, 0};
  EXPECT_EQ(reference_layout(too_small, 1, 2, 8, 2, 2, &l), TSHMEM_EP_ERR_INVALID_VALUE);
  expect_message("tshmem_ep_get_dispatch_layout", "holds -2 at flat position 0", "[-1, num_experts");
}

TEST(EpReference, DispatchHandWorked) {
  // 2 PEs, 4 experts, top-2, bf16 hidden 8. PE 0: token 0 -> {1, 2} (both PEs), token 1 -> {0, -1} (PE 0).
  // PE 1: token 0 -> {3, 3} (PE 1 only).
  std::vector<PeTokens> w(2);
  w[0].num_tokens = 2;
  w[0].x.resize(2 * 16);
  for (size_t i = 0; i < w[0].x.size(); ++i) w[0].x[i] = static_cast<uint8_t>(i);
  w[0].topk_idx = {1, 2, 0, -1};
  w[0].topk_weights = {0.5f, 0.25f, 1.0f, 2.0f};
  w[1].num_tokens = 1;
  w[1].x.assign(16, 0xab);
  w[1].topk_idx = {3, 3};
  w[1].topk_weights = {0.75f, 0.125f};
  std::vector<PeReceived> r;
  ASSERT_EQ(reference_dispatch(w, 8, 2, false, 2, 4, 4, &r), kSuccess);
  ASSERT_EQ(r[0].num_recv, 2);
  EXPECT_EQ(r[0].src_idx, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(r[0].topk_idx, (std::vector<int64_t>{1, -1, 0, -1}));
  EXPECT_EQ(r[0].topk_weights, (std::vector<float>{0.5f, 0.0f, 1.0f, 0.0f}));
  EXPECT_EQ(r[0].per_expert, (std::vector<int32_t>{4, 4}));  // 1 and 1, aligned up to 4
  ASSERT_EQ(r[1].num_recv, 2);                               // PE 0's token 0, then PE 1's token 0
  EXPECT_EQ(r[1].src_pe, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(r[1].topk_idx, (std::vector<int64_t>{-1, 0, 1, 1}));
  EXPECT_EQ(r[1].per_expert, (std::vector<int32_t>{4, 4}));  // expert 2: 1; expert 3: 2 -> 4, 4
  EXPECT_EQ(std::memcmp(r[1].x.data(), w[0].x.data(), 16), 0);
  EXPECT_EQ(std::memcmp(r[1].x.data() + 16, w[1].x.data(), 16), 0);
}

struct Shape {
  int n;
  int64_t k, experts, hidden, alignment;
  bool fp8;
  int route;
};

class EpReferenceShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(EpReferenceShapes, DispatchAndCombineInvariants) {
  const Shape s = GetParam();
  std::vector<int64_t> tokens;
  for (int p = 0; p < s.n; ++p) tokens.push_back(p == 1 ? 0 : 5 + 3 * p);  // PE 1 has no tokens
  const auto world = make_world(tokens, s.hidden, s.fp8, s.k, s.experts, s.route, 7u + static_cast<uint32_t>(s.n));
  std::vector<PeReceived> recv;
  ASSERT_EQ(reference_dispatch(world, s.hidden, s.fp8 ? 1 : 2, s.fp8, s.k, s.experts, s.alignment, &recv), kSuccess);
  const int64_t local = s.experts / s.n;
  int64_t sent = 0, received = 0, total = 0;
  for (int64_t t : tokens) total += t;
  for (int p = 0; p < s.n; ++p) {
    LayoutRef l;
    ASSERT_EQ(reference_layout(world[static_cast<size_t>(p)].topk_idx.data(), tokens[static_cast<size_t>(p)], s.k,
                               s.experts, s.n, 1, &l),
              kSuccess);
    for (int32_t c : l.per_rank) sent += c;
    const PeReceived &r = recv[static_cast<size_t>(p)];
    received += r.num_recv;
    for (int32_t c : r.per_expert) EXPECT_EQ(c % s.alignment, 0);
    for (int64_t e : r.topk_idx) EXPECT_TRUE(e >= -1 && e < local);
    if (s.route == 1 && s.k >= s.n) {
      EXPECT_EQ(r.num_recv, total);
    }
    if (s.route == 2) {
      EXPECT_EQ(r.num_recv, tokens[static_cast<size_t>(p)]);
    }
  }
  EXPECT_EQ(sent, received);
  // Combine: each PE returns the bf16 rows it received (fp8 rows: two bytes each as a bf16 pattern of the first
  // hidden bytes, whatever they are) and its masked weights. A token's weights come back whole; a token that
  // went to one PE comes back unchanged.
  std::vector<PeCombineIn> in(static_cast<size_t>(s.n));
  for (int p = 0; p < s.n; ++p) {
    const PeReceived &r = recv[static_cast<size_t>(p)];
    PeCombineIn &c = in[static_cast<size_t>(p)];
    c.x.resize(static_cast<size_t>(r.num_recv * s.hidden));
    for (size_t i = 0; i < c.x.size(); ++i) c.x[i] = static_cast<uint16_t>(0x3f80 + (r.x[i % r.x.size()] & 0x3f));
    c.topk_weights = r.topk_weights;
  }
  std::vector<PeCombined> out;
  ASSERT_EQ(reference_combine(tokens, recv, in, s.hidden, s.k, &out), kSuccess);
  for (int p = 0; p < s.n; ++p) {
    const PeTokens &w = world[static_cast<size_t>(p)];
    for (size_t i = 0; i < w.topk_idx.size(); ++i)
      EXPECT_EQ(out[static_cast<size_t>(p)].topk_weights[i], w.topk_idx[i] >= 0 ? w.topk_weights[i] : 0.0f);
  }
}

// The whole job through the route functions the kernels use (core/routes.h): the published matrix, every PE's
// info words, the send maps, where dispatch puts each row and where combine returns it. Every row must land where
// the reference has it, no row twice, and the home PE must find each token's rows in ascending PE order.
TEST_P(EpReferenceShapes, RoutesPlaceEveryRowWhereTheReferenceHasIt) {
  const Shape s = GetParam();
  std::vector<int64_t> tokens;
  for (int p = 0; p < s.n; ++p) tokens.push_back(p == 1 ? 0 : 5 + 3 * p);
  const auto world = make_world(tokens, s.hidden, s.fp8, s.k, s.experts, s.route, 31u + static_cast<uint32_t>(s.n));
  std::vector<PeReceived> recv;
  ASSERT_EQ(reference_dispatch(world, s.hidden, s.fp8 ? 1 : 2, s.fp8, s.k, s.experts, s.alignment, &recv), kSuccess);
  const int n = s.n;
  const int64_t local = s.experts / n, w = publish_words(n, s.experts);
  const InfoLayout il = info_layout(n, local);
  // What every PE publishes (the count kernel), and its send map (an ordered scan of is_token_in_rank).
  std::vector<int32_t> m(static_cast<size_t>(n * w), 0);
  std::vector<std::vector<int32_t>> send(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    LayoutRef l;
    ASSERT_EQ(reference_layout(world[static_cast<size_t>(p)].topk_idx.data(), tokens[static_cast<size_t>(p)], s.k,
                               s.experts, n, 1, &l),
              kSuccess);
    int32_t *row = m.data() + p * w;
    std::vector<int32_t> &si = send[static_cast<size_t>(p)];
    si.assign(static_cast<size_t>(tokens[static_cast<size_t>(p)] * n), -1);
    for (int64_t t = 0; t < tokens[static_cast<size_t>(p)]; ++t)
      for (int q = 0; q < n; ++q)
        if (l.in_rank[static_cast<size_t>(t * n + q)]) si[static_cast<size_t>(t * n + q)] = row[q]++;
    for (int64_t e = 0; e < s.experts; ++e) row[n + e] = l.per_expert[static_cast<size_t>(e)];
    row[publish_tokens_word(n, s.experts)] = static_cast<int32_t>(tokens[static_cast<size_t>(p)]);
  }
  // Every PE's info words (the prefix kernel).
  std::vector<std::vector<int32_t>> info(static_cast<size_t>(n), std::vector<int32_t>(static_cast<size_t>(il.words)));
  for (int p = 0; p < n; ++p) {
    int32_t *in = info[static_cast<size_t>(p)].data();
    for (int i = 0; i < n; ++i) {
      in[il.dst_offset + i] = route_dst_offset(m.data(), w, p, i);
      in[il.comb_dst_offset + i] = route_comb_dst_offset(m.data(), w, p, i);
    }
    for (int64_t l = 0; l < local; ++l) in[1 + l] = route_local_expert_count(m.data(), w, n, p, local, l, s.alignment);
    route_prefixes(m.data(), w, n, p, s.experts, 0, il, in);
    ASSERT_EQ(in[0], recv[static_cast<size_t>(p)].num_recv);
    ASSERT_EQ(std::vector<int32_t>(in + 1, in + 1 + local), recv[static_cast<size_t>(p)].per_expert);
    ASSERT_EQ(in[il.status], 0);
  }
  // Dispatch: every (source, token) lands once, at the reference's row.
  const std::pair<int, int64_t> none{-1, -1};
  std::vector<std::vector<std::pair<int, int64_t>>> got(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q)
    got[static_cast<size_t>(q)].assign(static_cast<size_t>(info[static_cast<size_t>(q)][0]), none);
  for (int src = 0; src < n; ++src)
    for (int64_t t = 0; t < tokens[static_cast<size_t>(src)]; ++t)
      for (int q = 0; q < n; ++q) {
        const int32_t si = send[static_cast<size_t>(src)][static_cast<size_t>(t * n + q)];
        if (si < 0) continue;
        const int64_t row = route_dispatch_row(info[static_cast<size_t>(src)].data(), il, q, si);
        ASSERT_LT(row, static_cast<int64_t>(got[static_cast<size_t>(q)].size()));
        ASSERT_EQ(got[static_cast<size_t>(q)][static_cast<size_t>(row)], none) << "row written twice";
        got[static_cast<size_t>(q)][static_cast<size_t>(row)] = {src, t};
      }
  for (int q = 0; q < n; ++q)
    for (size_t j = 0; j < got[static_cast<size_t>(q)].size(); ++j) {
      EXPECT_EQ(got[static_cast<size_t>(q)][j].first, recv[static_cast<size_t>(q)].src_pe[j]);
      EXPECT_EQ(got[static_cast<size_t>(q)][j].second, recv[static_cast<size_t>(q)].src_idx[j]);
    }
  // Combine: every received row returns once to its home, where the token's rows are found in PE order.
  std::vector<std::vector<std::pair<int, int64_t>>> area(static_cast<size_t>(n));
  for (int h = 0; h < n; ++h)
    area[static_cast<size_t>(h)].assign(static_cast<size_t>(info[static_cast<size_t>(h)][il.home_offset + n]), none);
  for (int p = 0; p < n; ++p)
    for (int64_t j = 0; j < recv[static_cast<size_t>(p)].num_recv; ++j) {
      int home = -1;
      const int64_t row = route_combine_row(info[static_cast<size_t>(p)].data(), il, n, j, &home);
      ASSERT_EQ(home, recv[static_cast<size_t>(p)].src_pe[static_cast<size_t>(j)]);
      ASSERT_LT(row, static_cast<int64_t>(area[static_cast<size_t>(home)].size()));
      ASSERT_EQ(area[static_cast<size_t>(home)][static_cast<size_t>(row)], none) << "row returned twice";
      area[static_cast<size_t>(home)][static_cast<size_t>(row)] = {p, j};
    }
  for (int h = 0; h < n; ++h)
    for (int64_t t = 0; t < tokens[static_cast<size_t>(h)]; ++t)
      for (int q = 0; q < n; ++q) {
        const int32_t si = send[static_cast<size_t>(h)][static_cast<size_t>(t * n + q)];
        if (si < 0) continue;
        const auto at = area[static_cast<size_t>(h)]
                            [static_cast<size_t>(route_home_row(info[static_cast<size_t>(h)].data(), il, q, si))];
        ASSERT_EQ(at.first, q);
        EXPECT_EQ(recv[static_cast<size_t>(q)].src_pe[static_cast<size_t>(at.second)], h);
        EXPECT_EQ(recv[static_cast<size_t>(q)].src_idx[static_cast<size_t>(at.second)], t);
      }
}

INSTANTIATE_TEST_SUITE_P(Shapes, EpReferenceShapes,
                         ::testing::Values(Shape{2, 1, 8, 128, 1, false, 0}, Shape{2, 2, 16, 256, 128, true, 0},
                                           Shape{4, 8, 256, 256, 1, true, 0}, Shape{4, 8, 32, 128, 128, false, 1},
                                           Shape{4, 2, 8, 128, 1, false, 2}, Shape{4, 8, 64, 256, 1, true, 3},
                                           Shape{1, 8, 8, 128, 1, false, 0}, Shape{8, 8, 256, 128, 128, true, 3},
                                           Shape{8, 8, 64, 128, 1, false, 1}, Shape{8, 2, 8, 128, 1, false, 2}));

TEST(EpReference, CombineOrderAndBias) {
  // One token of PE 0 returned by PEs 0 and 1: 1.0 (PE 0), then 2^-8 (PE 1), then bias0 2^-8. Summed in fp32 and
  // rounded once: 1 + 2^-7, exact in bf16. Rounding after each add would give 1.0 (1 + 2^-8 ties to even).
  std::vector<PeReceived> recv(2);
  recv[0].num_recv = 1;
  recv[0].src_pe = {0};
  recv[0].src_idx = {0};
  recv[1] = recv[0];
  std::vector<PeCombineIn> in(2);
  in[0].x = {float_to_bf16(1.0f)};
  in[1].x = {float_to_bf16(1.0f / 256)};
  in[0].bias0 = {float_to_bf16(1.0f / 256)};
  std::vector<PeCombined> out;
  ASSERT_EQ(reference_combine({1, 0}, recv, in, 1, 0, &out), kSuccess);
  EXPECT_EQ(bf16_to_float(out[0].x[0]), 1.0f + 1.0f / 128);
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), float_to_bf16(1.0f));  // ties to even
}

}  // namespace
}  // namespace tshmem_ep
