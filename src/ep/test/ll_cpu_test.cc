// Low-latency mode without a GPU: the argument rules and their messages, the region's layout and size hint, the
// fp8 conversion of the reference on hand-worked values, and the references' invariants on whole jobs (every
// valid entry received once where its expert lives, masked PEs cut off, combine's weighted sum).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "low_latency/ll.h"
#include "low_latency/ll_reference.h"

namespace tshmem_ep {
namespace {

void expect_message(const char *needle) {
  EXPECT_NE(std::string(last_error()).find(needle), std::string::npos) << last_error();
}

Geometry geo(int n, size_t rdma) {
  Geometry g;
  g.n_pes = n;
  g.pes_per_node = n;
  g.nvl_bytes = 0;
  g.rdma_bytes = rdma;
  return g;
}

tshmem_ep_ll_dispatch_args_t good_dispatch() {
  static uint8_t storage[64] __attribute__((aligned(16)));
  tshmem_ep_ll_dispatch_args_t a{};
  a.x = storage;
  a.topk_idx = reinterpret_cast<const int64_t *>(storage);
  a.num_tokens = 4;
  a.hidden = 512;
  a.num_topk = 8;
  a.num_max_dispatch_tokens_per_rank = 8;
  a.num_experts = 16;
  a.use_fp8 = 1;
  a.packed_recv_x = storage;
  a.packed_recv_x_scales = storage;
  a.packed_recv_count = reinterpret_cast<int32_t *>(storage);
  a.packed_recv_src_info = reinterpret_cast<int32_t *>(storage);
  a.packed_recv_layout_range = reinterpret_cast<int64_t *>(storage);
  return a;
}

TEST(EpLowLatencyRules, DispatchArguments) {
  CallScope scope("tshmem_ep_low_latency_dispatch");
  const Geometry g = geo(4, 1 << 30);
  auto a = good_dispatch();
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), kSuccess) << last_error();
  a.num_tokens = 9;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message(
      "tshmem_ep_low_latency_dispatch: num_tokens = 9; must be in [0, num_max_dispatch_tokens_per_rank = 8]");
  a = good_dispatch();
  a.hidden = 640;  // fp8 fine, ue8m0 not
  a.round_scale = a.use_ue8m0 = 1;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("hidden = 640; with use_ue8m0 must be a multiple of 512");
  a = good_dispatch();
  a.use_fp8 = 0;
  a.round_scale = 1;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("round_scale = 1; needs use_fp8");
  a = good_dispatch();
  a.num_experts = 18;
  EXPECT_NE(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), kSuccess);
  expect_message("num_experts = 18");
  a = good_dispatch();
  a.num_topk = 33;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("num_topk = 33");
  a = good_dispatch();
  a.x = nullptr;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("x = NULL");
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_RECV), kSuccess) << "the receive half does not read x";
  a.num_tokens = 0;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), kSuccess) << "no tokens: x may be NULL";
  a = good_dispatch();
  a.packed_recv_x_scales = nullptr;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("packed_recv_x_scales = NULL");
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_SEND), kSuccess) << "the send half writes no output";
  a = good_dispatch();
  a.hidden = 100;
  a.use_fp8 = 0;
  EXPECT_EQ(check_ll_dispatch_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("hidden = 100; must be a multiple of 8");
  EXPECT_EQ(check_ll_dispatch_args(g, nullptr, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("args = NULL");
  a = good_dispatch();
  EXPECT_EQ(check_ll_dispatch_args(g, &a, 4), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("phases = 4");
}

TEST(EpLowLatencyRules, CombineArguments) {
  CallScope scope("tshmem_ep_low_latency_combine");
  const Geometry g = geo(2, 1 << 30);
  static uint8_t storage[64] __attribute__((aligned(16)));
  tshmem_ep_ll_combine_args_t a{};
  a.x = storage;
  a.topk_idx = reinterpret_cast<const int64_t *>(storage);
  a.topk_weights = reinterpret_cast<const float *>(storage);
  a.src_info = reinterpret_cast<const int32_t *>(storage);
  a.layout_range = reinterpret_cast<const int64_t *>(storage);
  a.num_tokens = 2;
  a.hidden = 256;
  a.num_topk = 8;
  a.num_max_dispatch_tokens_per_rank = 4;
  a.num_experts = 8;
  a.combined_x = storage;
  EXPECT_EQ(check_ll_combine_args(g, &a, TSHMEM_EP_LL_BOTH), kSuccess) << last_error();
  a.x = nullptr;
  EXPECT_EQ(check_ll_combine_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("tshmem_ep_low_latency_combine: x = NULL");
  a.zero_copy = 1;
  EXPECT_EQ(check_ll_combine_args(g, &a, TSHMEM_EP_LL_BOTH), kSuccess) << "zero copy reads the send area";
  a.combined_x = storage + 8;
  EXPECT_EQ(check_ll_combine_args(g, &a, TSHMEM_EP_LL_BOTH), TSHMEM_EP_ERR_INVALID_ARGUMENT);
  expect_message("must be 16-byte aligned");
}

TEST(EpLowLatencyRules, LayoutAndSizeHint) {
  // DeepEP's shape: 128 tokens, hidden 7168, 256 experts over 8 PEs.
  const LlLayout l = ll_layout(8, 128, 7168, 256);
  EXPECT_EQ(l.dispatch_msg_bf16, 16u + 7168u * 2);
  EXPECT_EQ(l.local_experts, 32);
  EXPECT_EQ(l.slot_bytes % 256, 0u);
  EXPECT_GE(l.recv_off - l.send_off, 256u * 128 * 7168 * 2) << "the zero-copy combine rows fit the send area";
  EXPECT_EQ(tshmem_ep_low_latency_rdma_size_hint(128, 7168, 8, 256), l.total_bytes);
  EXPECT_EQ(tshmem_ep_low_latency_rdma_size_hint(128, 7168, 8, 257), 0u) << "experts not a multiple of the PEs";
  EXPECT_EQ(tshmem_ep_low_latency_rdma_size_hint(0, 7168, 8, 256), 0u);
  EXPECT_EQ(ll_msg_bytes(7168, true), 16u + 7168u + 224u);
  EXPECT_EQ(ll_msg_bytes(128, true), 16u + 128u + 16u) << "one scale, padded to 16 bytes";
  CallScope scope("tshmem_ep_low_latency_dispatch");
  EXPECT_EQ(check_ll_fits(geo(8, l.total_bytes - 16), l), TSHMEM_EP_ERR_BUFFER_TOO_SMALL);
  expect_message("of num_rdma_bytes; the buffer has");
  EXPECT_EQ(check_ll_fits(geo(8, l.total_bytes), l), kSuccess);
}

TEST(EpLowLatencyReference, Fp8Conversion) {
  EXPECT_EQ(fp8_e4m3_from_float(1.0f), 0x38);
  EXPECT_EQ(fp8_e4m3_from_float(-2.0f), 0xc0);
  EXPECT_EQ(fp8_e4m3_from_float(448.0f), 0x7e);
  EXPECT_EQ(fp8_e4m3_from_float(1000.0f), 0x7e) << "saturates";
  EXPECT_EQ(fp8_e4m3_from_float(-1000.0f), 0xfe);
  EXPECT_EQ(fp8_e4m3_from_float(1.0625f), 0x38) << "a tie rounds to even";
  EXPECT_EQ(fp8_e4m3_from_float(1.1875f), 0x3a) << "a tie rounds to even";
  EXPECT_EQ(fp8_e4m3_from_float(0.01953125f), 0x0a);  // 2^-6 * 1.25
  EXPECT_EQ(fp8_e4m3_from_float(0.001953125f), 0x01) << "the smallest subnormal, 2^-9";
  EXPECT_EQ(fp8_e4m3_from_float(0.0009765625f), 0x00) << "2^-10 ties to even: zero";
  EXPECT_EQ(fp8_e4m3_from_float(0.0146484375f), 0x08) << "7.5 * 2^-9 rounds to the smallest normal";
  EXPECT_EQ(bf16_from_float(1.0f), 0x3f80);
  EXPECT_EQ(float_from_bf16(0xc000), -2.0f);
}

TEST(EpLowLatencyReference, QuantizeRowScales) {
  std::vector<uint16_t> row(256, bf16_from_float(0.0f));
  row[3] = bf16_from_float(-3.5f);     // group 0: amax 3.5
  row[130] = bf16_from_float(100.0f);  // group 1: amax 100
  std::vector<uint8_t> q(256);
  float sc[2];
  ll_quantize_row_reference(row.data(), 256, false, q.data(), sc);
  EXPECT_EQ(sc[0], 3.5f * (1.0f / 448.0f));
  EXPECT_EQ(q[3], 0xfe) << "the group's amax maps to -448";
  EXPECT_EQ(q[130], 0x7e);
  EXPECT_EQ(q[0], 0x00);
  ll_quantize_row_reference(row.data(), 256, true, q.data(), sc);
  EXPECT_EQ(sc[0], 1.0f / 128.0f) << "3.5 / 448 = 2^-7, a power of 2 already";
  EXPECT_EQ(sc[1], 0.25f) << "100 / 448 = 0.223; the next power of 2 is 0.25";
  EXPECT_EQ(q[130], fp8_e4m3_from_float(400.0f));
  std::vector<uint16_t> zeros(128, 0);
  ll_quantize_row_reference(zeros.data(), 128, false, q.data(), sc);
  EXPECT_EQ(sc[0], 1e-4f * (1.0f / 448.0f)) << "amax is clamped at 1e-4";
}

/// A whole job of N PEs: every valid entry lands once, in its expert's rows on the expert's PE, ordered by source
/// PE then token; a masked PE is cut off both ways; combine returns the weighted sum in top-k order.
TEST(EpLowLatencyReference, WholeJobInvariants) {
  for (int n : {1, 2, 4}) {
    const LlShape s{n, 8 * n, 6, 128, 3, false, false, false};
    std::vector<LlPeInput> in(static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) {
      LlPeInput &w = in[static_cast<size_t>(p)];
      w.num_tokens = p == 1 ? 0 : 6;
      w.masked.assign(static_cast<size_t>(n), 0);
      w.x.resize(static_cast<size_t>(w.num_tokens) * 128);
      for (size_t i = 0; i < w.x.size(); ++i) w.x[i] = bf16_from_float(static_cast<float>(i % 17) - 8.0f);
      for (int t = 0; t < w.num_tokens; ++t)
        for (int k = 0; k < 3; ++k) {
          w.topk_idx.push_back(k == 2 && t % 2 ? -1 : (t * 3 + k * 5 + p) % (8 * n));
          w.topk_weights.push_back(0.25f * static_cast<float>(k + 1));
        }
    }
    if (n == 4) in[3].masked.assign(4, 1), in[0].masked[3] = in[1].masked[3] = in[2].masked[3] = 1;
    const auto d = ll_dispatch_reference(s, in);
    int64_t sent = 0, received = 0;
    for (int p = 0; p < n; ++p)
      for (int t = 0; t < in[static_cast<size_t>(p)].num_tokens; ++t)
        for (int k = 0; k < 3; ++k) {
          const int64_t e = in[static_cast<size_t>(p)].topk_idx[static_cast<size_t>(t * 3 + k)];
          if (e >= 0 && !in[static_cast<size_t>(p)].masked[static_cast<size_t>(e / 8)]) ++sent;
        }
    for (int p = 0; p < n; ++p)
      for (int32_t c : d[static_cast<size_t>(p)].recv_count) received += c;
    EXPECT_EQ(received, sent) << "n = " << n;
    // Identity experts: combine returns sum_k w_k * x for the unmasked valid entries.
    std::vector<std::vector<uint16_t>> y;
    for (int p = 0; p < n; ++p) {
      std::vector<uint16_t> v(static_cast<size_t>(8 * n * 6) * 128, 0);
      const auto &o = d[static_cast<size_t>(p)];
      for (size_t i = 0; i < o.recv_x.size() / 2; ++i) std::memcpy(&v[i], &o.recv_x[2 * i], 2);
      y.push_back(v);
    }
    const auto c = ll_combine_reference(s, in, d, y);
    const LlPeInput &w0 = in[0];
    for (int t = 0; t < w0.num_tokens; ++t) {
      float acc = 0.0f;
      for (int k = 0; k < 3; ++k) {
        const int64_t e = w0.topk_idx[static_cast<size_t>(t * 3 + k)];
        if (e < 0 || w0.masked[static_cast<size_t>(e / 8)]) continue;
        acc = acc +
              float_from_bf16(w0.x[static_cast<size_t>(t) * 128 + 5]) * w0.topk_weights[static_cast<size_t>(t * 3 + k)];
      }
      EXPECT_EQ(c[0][static_cast<size_t>(t) * 128 + 5], bf16_from_float(acc)) << "n = " << n << ", token " << t;
    }
    if (n == 4) {
      for (int32_t cnt : d[3].recv_count) EXPECT_EQ(cnt, 0) << "the masked PE receives nothing";
      for (uint16_t v : c[3]) EXPECT_EQ(v, 0) << "the masked PE's tokens combine to zero";
    }
  }
}

}  // namespace
}  // namespace tshmem_ep
