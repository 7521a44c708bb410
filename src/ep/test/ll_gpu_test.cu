// tshmem_ep's low-latency mode on the GPU, real processes under mpirun: every output of low_latency_dispatch and
// low_latency_combine equals the CPU reference bit for bit (bf16; fp8 with fp32 scales, rounded scales and UE8M0
// scales), over top-k 1, 8 and 9, 8 to 288 experts, -1 entries, 0, 1 and the maximum tokens per PE, with and
// without the receive hook, with zero copy; a dispatch and combine captured in a CUDA graph and replayed; 100
// rounds alternating with normal mode (clean_low_latency_buffer between); masked PEs; the argument rules; a PE that
// stops in the middle of a dispatch: every other PE's wait ends within the bound, naming it; and clean with a masked
// PE that never calls it.
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "low_latency/ll_reference.h"
#include "test/gpu_fixture.h"

namespace tshmem_ep {
namespace {

/// Fresh device arrays hold zeros: the statistics outputs accumulate into them.
template <class T>
using Dev = DeviceArray<T, 0>;

constexpr int64_t kMaxTokens = 48;  // the largest num_max_dispatch_tokens_per_rank here
constexpr int64_t kMaxHidden = 7168;
constexpr int64_t kMaxExperts = 288;

/// One buffer for the binary: normal mode's sizes for 64 tokens of hidden 512, and the largest low-latency slots.
tshmem_ep_buffer_t buffer() {
  static tshmem_ep_buffer_t b = nullptr;
  if (!b) {
    size_t nvl = 0, rdma = 0;
    const int n = tshmem_n_pes();
    const size_t ll = std::max(tshmem_ep_low_latency_rdma_size_hint(kMaxTokens, 512, n, kMaxExperts),
                               tshmem_ep_low_latency_rdma_size_hint(8, kMaxHidden, n, 16 * n));
    if (tshmem_ep_buffer_size_hint(n, 64, 512, TSHMEM_EP_BFLOAT16, 8, &nvl, &rdma) == 0 &&
        tshmem_ep_buffer_create(nvl, std::max(rdma, ll), &b) == 0)
      tshmem_ep_buffer_set_timeout_ms(b, 10000);  // a wrong result on one PE ends the others' waits in 10 s
  }
  return b;
}

struct Case {
  int64_t max_tokens, hidden, experts, topk;
  bool fp8, round_scale, ue8m0;
  int tokens;   // 0: random in [0, max] with PE 1 at 0; 1: every PE the maximum; 2: one token each
  bool minus1;  // -1 entries
  bool hook, zero_copy;
};

/// Every PE's inputs, the same on every PE (one seed): K distinct experts per token, some -1.
std::vector<LlPeInput> make_inputs(const Case &c, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<LlPeInput> w(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    LlPeInput &in = w[static_cast<size_t>(p)];
    in.num_tokens = c.tokens == 1       ? static_cast<int>(c.max_tokens)
                    : c.tokens == 2     ? 1
                    : (n > 1 && p == 1) ? 0
                                        : static_cast<int>(rng() % static_cast<uint32_t>(c.max_tokens + 1));
    const size_t T = static_cast<size_t>(in.num_tokens), H = static_cast<size_t>(c.hidden),
                 K = static_cast<size_t>(c.topk);
    in.x.resize(T * H);
    for (auto &v : in.x) {
      // bf16 values of varied magnitudes, both signs (exercises the fp8 scales and rounding)
      const float f = (static_cast<float>(rng() % 2001) - 1000.0f) / 64.0f * static_cast<float>(1 << (rng() % 6));
      v = bf16_from_float(f);
    }
    in.topk_idx.resize(T * K);
    in.topk_weights.resize(T * K);
    std::vector<int64_t> experts(static_cast<size_t>(c.experts));
    for (size_t t = 0; t < T; ++t) {
      for (size_t e = 0; e < experts.size(); ++e) experts[e] = static_cast<int64_t>(e);
      for (size_t k = 0; k < K; ++k) {
        const size_t pick = k + rng() % (experts.size() - k);
        std::swap(experts[k], experts[pick]);
        in.topk_idx[t * K + k] = c.minus1 && rng() % 4 == 0 ? -1 : experts[k];
        in.topk_weights[t * K + k] = static_cast<float>(rng() % 1024 + 1) / 1024.0f;
      }
    }
    in.masked.assign(static_cast<size_t>(n), 0);
  }
  return w;
}

/// The experts' outputs of PE p: bf16 [L, N*M, hidden], a function of the place.
std::vector<uint16_t> expert_outputs(const Case &c, int n, int p) {
  const size_t L = static_cast<size_t>(c.experts / n), rows = static_cast<size_t>(n * c.max_tokens);
  std::vector<uint16_t> y(L * rows * static_cast<size_t>(c.hidden));
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<uint16_t>(0x3c00 + ((i * 7 + static_cast<size_t>(p) * 131) % 0x3ff) - 0x200);
  return y;
}

/// The outputs of one dispatch on this PE.
struct DispatchOut {
  Dev<uint8_t> x, scales;
  Dev<int32_t> count, src_info;
  Dev<int64_t> range;
  Dev<int32_t> cum;
  Dev<int64_t> wait;
  DispatchOut(const Case &c, int n)
      : x(static_cast<size_t>(c.experts / n * n * c.max_tokens * c.hidden * (c.fp8 ? 1 : 2))),
        scales(static_cast<size_t>(c.experts / n * n * c.max_tokens * (c.hidden / 128) * 4)),
        count(static_cast<size_t>(c.experts / n)),
        src_info(static_cast<size_t>(c.experts / n * n * c.max_tokens)),
        range(static_cast<size_t>(c.experts / n * n)),
        cum(static_cast<size_t>(c.experts / n)),
        wait(static_cast<size_t>(n)) {}
};

tshmem_ep_ll_dispatch_args_t dispatch_args(const Case &c, const LlPeInput &in, const void *x, const int64_t *idx,
                                           DispatchOut &o) {
  tshmem_ep_ll_dispatch_args_t a{};
  a.x = x;
  a.topk_idx = idx;
  a.num_tokens = in.num_tokens;
  a.hidden = c.hidden;
  a.num_topk = c.topk;
  a.num_max_dispatch_tokens_per_rank = c.max_tokens;
  a.num_experts = c.experts;
  a.use_fp8 = c.fp8;
  a.round_scale = c.round_scale;
  a.use_ue8m0 = c.ue8m0;
  a.packed_recv_x = o.x.p;
  a.packed_recv_x_scales = c.fp8 ? o.scales.p : nullptr;
  a.packed_recv_count = o.count.p;
  a.packed_recv_src_info = o.src_info.p;
  a.packed_recv_layout_range = o.range.p;
  a.cumulative_local_expert_recv_stats = o.cum.p;
  a.dispatch_wait_recv_cost_stats = o.wait.p;
  return a;
}

/// A low-latency combine of this PE's expert outputs `y` back to its tokens (`in`, `idx`, `w`) into `out`, with
/// the source and layout of dispatch `o`.
tshmem_ep_ll_combine_args_t combine_args(const Case &c, const LlPeInput &in, const void *y, const int64_t *idx,
                                         const float *w, const DispatchOut &o, void *out) {
  tshmem_ep_ll_combine_args_t a{};
  a.x = y;
  a.topk_idx = idx;
  a.topk_weights = w;
  a.src_info = o.src_info.p;
  a.layout_range = o.range.p;
  a.num_tokens = in.num_tokens;
  a.hidden = c.hidden;
  a.num_topk = c.topk;
  a.num_max_dispatch_tokens_per_rank = c.max_tokens;
  a.num_experts = c.experts;
  a.combined_x = out;
  return a;
}

/// A job of case `c` on n PEs: every PE's inputs (`masked_pe` >= 0: that PE masks every PE and every other PE
/// masks it) and expert outputs, and the references of its dispatch and combine.
struct Job {
  std::vector<LlPeInput> world;
  std::vector<LlDispatchOut> dispatched;
  std::vector<std::vector<uint16_t>> ys, combined;
  Job(const Case &c, int n, uint32_t seed, int masked_pe = -1) : world(make_inputs(c, n, seed)) {
    if (masked_pe >= 0)
      for (int p = 0; p < n; ++p)
        for (int q = 0; q < n; ++q)
          if (p == masked_pe || q == masked_pe) world[static_cast<size_t>(p)].masked[static_cast<size_t>(q)] = 1;
    const LlShape shape{n,
                        static_cast<int>(c.experts),
                        static_cast<int>(c.max_tokens),
                        static_cast<int>(c.hidden),
                        static_cast<int>(c.topk),
                        c.fp8,
                        c.round_scale,
                        c.ue8m0};
    dispatched = ll_dispatch_reference(shape, world);
    for (int p = 0; p < n; ++p) ys.push_back(expert_outputs(c, n, p));
    combined = ll_combine_reference(shape, world, dispatched, ys);
  }
};

/// This PE's dispatch outputs against the reference: counts, ranges, and every valid row (data, scales, source).
void expect_dispatch(const Case &c, int n, const LlDispatchOut &ref, const DispatchOut &o, const char *what) {
  const size_t L = static_cast<size_t>(c.experts / n), rows = static_cast<size_t>(n * c.max_tokens);
  const size_t rb = static_cast<size_t>(c.hidden) * (c.fp8 ? 1 : 2);
  const int S = static_cast<int>(c.hidden / 128);
  const auto count = o.count.host(L);
  ASSERT_EQ(count, ref.recv_count) << what;
  EXPECT_EQ(o.range.host(L * static_cast<size_t>(n)), ref.layout_range) << what;
  const auto src = o.src_info.host(L * rows);
  const auto x = o.x.host(L * rows * rb);
  std::vector<uint8_t> sc;
  if (c.fp8) sc = o.scales.host(ref.recv_scales.size());
  size_t bad = 0;
  for (size_t le = 0; le < L; ++le)
    for (size_t j = 0; j < static_cast<size_t>(count[le]); ++j) {
      const size_t r = le * rows + j;
      if (src[r] != ref.src_info[r] || std::memcmp(&x[r * rb], &ref.recv_x[r * rb], rb) != 0) ++bad;
      if (!c.fp8) continue;
      for (int g = 0; g < S; ++g) {
        if (c.ue8m0) {
          const size_t b = ((le * static_cast<size_t>(S / 4) + static_cast<size_t>(g / 4)) * rows + j) * 4 + g % 4;
          if (sc[b] != ref.recv_scales[b]) ++bad;
        } else {
          const size_t b = ((le * static_cast<size_t>(S) + static_cast<size_t>(g)) * rows + j) * 4;
          if (std::memcmp(&sc[b], &ref.recv_scales[b], 4) != 0) ++bad;
        }
      }
    }
  EXPECT_EQ(bad, 0u) << what << ": rows or scales that differ from the reference";
}

void run_dispatch(tshmem_ep_buffer_t b, const tshmem_ep_ll_dispatch_args_t &a, bool hook, cudaStream_t s) {
  if (!hook) {
    EP_OK(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, s));
    return;
  }
  int slot = -1;
  EP_OK(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_SEND, &slot, s));
  EP_OK(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_RECV, &slot, s));
}

void run_combine(tshmem_ep_buffer_t b, const tshmem_ep_ll_combine_args_t &a, bool hook, cudaStream_t s) {
  if (!hook) {
    EP_OK(tshmem_ep_low_latency_combine(b, &a, TSHMEM_EP_LL_BOTH, nullptr, s));
    return;
  }
  int slot = -1;
  EP_OK(tshmem_ep_low_latency_combine(b, &a, TSHMEM_EP_LL_SEND, &slot, s));
  EP_OK(tshmem_ep_low_latency_combine(b, &a, TSHMEM_EP_LL_RECV, &slot, s));
}

/// One case: clean, then `rounds` dispatch + combine pairs, each checked against the references. `masked_pe` >= 0:
/// that PE masks every PE and every other PE masks it (it is cut off; its tokens and experts count as absent).
void run_case(const Case &c, uint32_t seed, int rounds, int masked_pe = -1) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  ASSERT_EQ(c.experts % n, 0);
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr) << tshmem_ep_last_error();
  const Job job(c, n, seed, masked_pe);
  const auto &dref = job.dispatched;
  const auto &ys = job.ys, &cref = job.combined;
  const LlPeInput &mine = job.world[static_cast<size_t>(me)];
  const size_t T = static_cast<size_t>(mine.num_tokens), H = static_cast<size_t>(c.hidden);

  EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
  for (int q = 0; q < n; ++q)
    if (mine.masked[static_cast<size_t>(q)]) EP_OK(tshmem_ep_low_latency_update_mask(b, q, 1, nullptr));
  Dev<uint16_t> x(mine.x);
  Dev<int64_t> idx(mine.topk_idx);
  Dev<float> w(mine.topk_weights);
  Dev<uint16_t> y(ys[static_cast<size_t>(me)]), out(T * H);
  DispatchOut o(c, n);
  for (int r = 0; r < rounds; ++r) {
    const std::string what = "round " + std::to_string(r);
    const auto da = dispatch_args(c, mine, x.p, idx.p, o);
    run_dispatch(b, da, c.hook, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(tshmem_ep_check_device_errors(b, nullptr), TSHMEM_EP_SUCCESS) << tshmem_ep_last_error();
    expect_dispatch(c, n, dref[static_cast<size_t>(me)], o, what.c_str());
    auto ca = combine_args(c, mine, y.p, idx.p, w.p, o, out.p);
    if (c.zero_copy) {
      void *zc = nullptr;
      EP_OK(tshmem_ep_low_latency_next_combine_buffer(b, c.max_tokens, c.hidden, c.experts, &zc));
      CUDA_OK(cudaMemcpy(zc, y.p, ys[static_cast<size_t>(me)].size() * 2, cudaMemcpyDeviceToDevice));
      ca.x = nullptr;
      ca.zero_copy = 1;
    }
    run_combine(b, ca, c.hook, nullptr);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(tshmem_ep_check_device_errors(b, nullptr), TSHMEM_EP_SUCCESS) << tshmem_ep_last_error();
    EXPECT_EQ(out.host(T * H), cref[static_cast<size_t>(me)]) << what << ": combined_x differs from the reference";
  }
  // Statistics: every received row was counted once per round.
  const auto cum = o.cum.host(static_cast<size_t>(c.experts / n));
  for (size_t le = 0; le < cum.size(); ++le)
    EXPECT_EQ(cum[le], rounds * dref[static_cast<size_t>(me)].recv_count[le]) << "cumulative_local_expert_recv_stats";
  if (masked_pe >= 0) {
    Dev<int32_t> status(static_cast<size_t>(n));
    EP_OK(tshmem_ep_low_latency_query_mask(b, status.p, nullptr));
    const auto st = status.host(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) EXPECT_EQ(st[static_cast<size_t>(q)], mine.masked[static_cast<size_t>(q)] ? 1 : 0);
    EP_OK(tshmem_ep_low_latency_clean_mask(b, nullptr));
    EP_OK(tshmem_ep_low_latency_query_mask(b, status.p, nullptr));
    EXPECT_EQ(status.host(static_cast<size_t>(n)), std::vector<int32_t>(static_cast<size_t>(n), 0));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(EpLowLatency, Bf16TopK8) {
  REQUIRE_GPU();
  run_case({32, 256, 64, 8, false, false, false, 0, true, false, false}, 11, 2);
}
TEST(EpLowLatency, Bf16TopK1Experts8) {
  REQUIRE_GPU();
  run_case({16, 512, 8, 1, false, false, false, 0, false, false, false}, 12, 1);
}
TEST(EpLowLatency, Fp8TopK9Experts288) {
  REQUIRE_GPU();
  run_case({kMaxTokens, 512, kMaxExperts, 9, true, false, false, 0, true, false, false}, 13, 1);
}
TEST(EpLowLatency, Fp8RoundScale) {
  REQUIRE_GPU();
  run_case({32, 256, 32, 8, true, true, false, 1, true, false, false}, 14, 1);
}
TEST(EpLowLatency, Fp8Ue8m0Hidden7168) {
  REQUIRE_GPU();
  run_case({8, kMaxHidden, 16 * tshmem_n_pes(), 8, true, true, true, 1, true, false, false}, 15, 1);
}
TEST(EpLowLatency, MaxTokensEveryPe) {
  REQUIRE_GPU();
  run_case({kMaxTokens, 256, 64, 8, false, false, false, 1, false, false, false}, 16, 1);
}
TEST(EpLowLatency, OneTokenEachPe) {
  REQUIRE_GPU();
  run_case({4, 256, 16, 8, true, false, false, 2, false, false, false}, 17, 1);
}
TEST(EpLowLatency, ReceiveHook) {
  REQUIRE_GPU();
  run_case({32, 256, 64, 8, true, false, false, 0, true, true, false}, 18, 3);
}
TEST(EpLowLatency, ZeroCopyCombine) {
  REQUIRE_GPU();
  run_case({32, 256, 64, 8, false, false, false, 0, true, false, true}, 19, 2);
  run_case({32, 256, 64, 8, true, false, false, 0, true, true, true}, 20, 2);
}
TEST(EpLowLatency, MaskedPe) {
  REQUIRE_GPU();
  const int n = tshmem_n_pes();
  if (n < 2) GTEST_SKIP() << "masking needs 2 PEs or more";
  run_case({32, 256, 64, 8, true, false, false, 1, true, false, false}, 21, 2, n - 1);
  run_case({32, 256, 64, 8, false, false, false, 0, true, true, false}, 22, 1, 0);
  run_case({32, 256, 64, 8, false, false, false, 0, true, false, false}, 23, 1);  // unmasked again
}

/// A dispatch and a combine captured in one CUDA graph and replayed: every replay gives the reference's bits.
TEST(EpLowLatency, GraphCaptureReplayed) {
  REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const Case c{32, 256, 64, 8, true, false, false, 0, true, false, false};
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr);
  const Job job(c, n, 31);
  const LlPeInput &mine = job.world[static_cast<size_t>(me)];
  EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  Dev<uint16_t> x(mine.x), y(job.ys[static_cast<size_t>(me)]), out(static_cast<size_t>(mine.num_tokens) * 256);
  Dev<int64_t> idx(mine.topk_idx);
  Dev<float> w(mine.topk_weights);
  DispatchOut o(c, n);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto da = dispatch_args(c, mine, x.p, idx.p, o);
  const auto ca = combine_args(c, mine, y.p, idx.p, w.p, o, out.p);
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  const tshmem_ep_status_t s1 = tshmem_ep_low_latency_dispatch(b, &da, TSHMEM_EP_LL_BOTH, nullptr, s);
  const tshmem_ep_status_t s2 = tshmem_ep_low_latency_combine(b, &ca, TSHMEM_EP_LL_BOTH, nullptr, s);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  EP_OK(s1);
  EP_OK(s2);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int r = 0; r < 3; ++r) {
    CUDA_OK(cudaMemset(out.p, 0, static_cast<size_t>(mine.num_tokens) * 512));
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    expect_dispatch(c, n, job.dispatched[static_cast<size_t>(me)], o, "replay");
    EXPECT_EQ(out.host(static_cast<size_t>(mine.num_tokens) * 256), job.combined[static_cast<size_t>(me)])
        << "replay " << r;
  }
  EP_OK(tshmem_ep_check_device_errors(b, s));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  MPI_Barrier(MPI_COMM_WORLD);
}

/// 100 rounds: a normal-mode dispatch and combine on the same buffer, clean_low_latency_buffer, a low-latency
/// dispatch and combine; the low-latency results equal the reference every round, the normal ones the first round's.
TEST(EpLowLatency, HundredRoundsAlternatingWithNormalMode) {
  REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  const Case c{16, 256, 32, 8, true, false, false, 0, false, false, false};
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr);
  const Job job(c, n, 41);
  const LlPeInput &mine = job.world[static_cast<size_t>(me)];
  const int64_t T = mine.num_tokens, H = 256, K = 8, E = 32;
  Dev<uint16_t> x(mine.x), y(job.ys[static_cast<size_t>(me)]), out(static_cast<size_t>(T * H));
  Dev<int64_t> idx(mine.topk_idx);
  Dev<float> w(mine.topk_weights);
  DispatchOut o(c, n);
  // Normal mode's buffers (bf16 rows of the same tokens).
  Dev<int32_t> per_rank(static_cast<size_t>(n)), per_expert(static_cast<size_t>(E));
  Dev<uint8_t> in_rank(static_cast<size_t>(T * n));
  tshmem_ep_handle_t h = nullptr;
  EP_OK(tshmem_ep_handle_create(b, kMaxTokens, E, &h));
  Dev<uint16_t> rx(static_cast<size_t>(n * 16 * H)), nout(static_cast<size_t>(T * H));
  std::vector<uint16_t> first_normal;
  for (int r = 0; r < 100; ++r) {
    EP_OK(tshmem_ep_get_dispatch_layout(b, idx.p, T, K, E, per_rank.p, nullptr, per_expert.p,
                                        reinterpret_cast<bool *>(in_rank.p), nullptr));
    int64_t R = 0;
    EP_OK(tshmem_ep_notify(b, h, reinterpret_cast<bool *>(in_rank.p), per_expert.p, T, E, 1, 0, &R, nullptr, nullptr));
    ASSERT_LE(R, n * 16);
    EP_OK(tshmem_ep_dispatch(b, h, x.p, TSHMEM_EP_BFLOAT16, nullptr, T, H, nullptr, nullptr, 0, rx.p, nullptr, nullptr,
                             nullptr, nullptr, R, nullptr));
    EP_OK(tshmem_ep_combine(b, h, rx.p, TSHMEM_EP_BFLOAT16, R, H, nullptr, 0, nullptr, nullptr, nout.p, nullptr,
                            nullptr));
    EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
    const auto da = dispatch_args(c, mine, x.p, idx.p, o);
    EP_OK(tshmem_ep_low_latency_dispatch(b, &da, TSHMEM_EP_LL_BOTH, nullptr, nullptr));
    const auto ca = combine_args(c, mine, y.p, idx.p, w.p, o, out.p);
    EP_OK(tshmem_ep_low_latency_combine(b, &ca, TSHMEM_EP_LL_BOTH, nullptr, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    if (r == 0 || r == 99 || r % 10 == 0) {
      expect_dispatch(c, n, job.dispatched[static_cast<size_t>(me)], o, ("round " + std::to_string(r)).c_str());
      ASSERT_EQ(out.host(static_cast<size_t>(T * H)), job.combined[static_cast<size_t>(me)]) << "round " << r;
      const auto nv = nout.host(static_cast<size_t>(T * H));
      if (r == 0) first_normal = nv;
      ASSERT_EQ(nv, first_normal) << "normal-mode combine, round " << r;
    }
  }
  EP_OK(tshmem_ep_check_device_errors(b, nullptr));
  EP_OK(tshmem_ep_handle_destroy(h));
  MPI_Barrier(MPI_COMM_WORLD);
}

/// Argument rules: refused by name before anything is launched (every PE alike, so the PEs stay in step; a correct
/// call afterwards proves nothing was left half done).
TEST(EpLowLatency, BadArgumentsRefusedByName) {
  REQUIRE_GPU();
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr);
  const int n = tshmem_n_pes();
  const Case c{16, 256, 16 * n, 8, true, false, false, 1, false, false, false};
  const auto world = make_inputs(c, n, 51);
  const LlPeInput &mine = world[static_cast<size_t>(tshmem_my_pe())];
  Dev<uint16_t> x(mine.x);
  Dev<int64_t> idx(mine.topk_idx);
  DispatchOut o(c, n);
  auto expect = [](tshmem_ep_status_t got, tshmem_ep_status_t want, const char *needle) {
    EXPECT_EQ(got, want) << tshmem_ep_last_error();
    EXPECT_NE(std::string(tshmem_ep_last_error()).find(needle), std::string::npos) << tshmem_ep_last_error();
  };
  auto a = dispatch_args(c, mine, x.p, idx.p, o);
  a.num_tokens = 17;  // more than the maximum
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "tshmem_ep_low_latency_dispatch: num_tokens = 17; must be in [0, num_max_dispatch_tokens_per_rank = 16]");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  a.hidden = 200;  // fp8 needs a multiple of 128
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "hidden = 200; with use_fp8 must be a multiple of 128");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  a.use_ue8m0 = 1;  // without round_scale
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "use_ue8m0 = 1; needs round_scale");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  a.num_topk = 0;
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "num_topk = 0");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  a.packed_recv_x = nullptr;
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "packed_recv_x = NULL");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  a.num_experts = 2048;  // beyond TSHMEM_EP_MAX_EXPERTS
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_UNSUPPORTED,
         "num_experts = 2048");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  a.num_max_dispatch_tokens_per_rank = 4096;  // beyond num_rdma_bytes
  a.num_tokens = 16;
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_BUFFER_TOO_SMALL,
         "num_rdma_bytes");
  a = dispatch_args(c, mine, x.p, idx.p, o);
  expect(tshmem_ep_low_latency_dispatch(b, &a, 0, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT, "phases = 0");
  int bad_slot = 7;
  expect(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_RECV, &bad_slot, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "*slot = 7");
  tshmem_ep_ll_combine_args_t ca{};
  ca.num_tokens = 1;
  ca.hidden = 256;
  ca.num_topk = 8;
  ca.num_max_dispatch_tokens_per_rank = 16;
  ca.num_experts = 16 * n;
  expect(tshmem_ep_low_latency_combine(b, &ca, TSHMEM_EP_LL_BOTH, nullptr, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT,
         "tshmem_ep_low_latency_combine: x = NULL");
  expect(tshmem_ep_low_latency_update_mask(b, n, 1, nullptr), TSHMEM_EP_ERR_INVALID_ARGUMENT, "pe = ");
  // Nothing was launched and no slot taken: a correct pair runs on every PE.
  run_case(c, 51, 1);
}

/// The last test of the binary: PE n-1 stops in the middle of a dispatch (it receives, never sends). Every other
/// PE's wait ends within the bound (3 s here), prints and reports which PE it waited for, and masks it.
TEST(EpLowLatencyZz, StoppedPeEndsOtherWaitsNamingIt) {
  REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "needs 2 PEs or more";
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr);
  const Case c{16, 256, 16 * n, 8, false, false, false, 1, false, false, false};
  const auto world = make_inputs(c, n, 61);
  const LlPeInput &mine = world[static_cast<size_t>(me)];
  Dev<uint16_t> x(mine.x);
  Dev<int64_t> idx(mine.topk_idx);
  DispatchOut o(c, n);
  EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  const auto a = dispatch_args(c, mine, x.p, idx.p, o);
  EP_OK(tshmem_ep_buffer_set_timeout_ms(b, 3000));
  if (me == n - 1) {
    // Stops after its receive half: never sends its rows or counts. Its own wait is bounded too.
    int slot = 0;
    EP_OK(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_RECV, &slot, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    (void)tshmem_ep_check_device_errors(b, nullptr);  // it may time out on PEs that finished: not asserted
  } else {
    const double t0 = MPI_Wtime();
    EP_OK(tshmem_ep_low_latency_dispatch(b, &a, TSHMEM_EP_LL_BOTH, nullptr, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    const double waited = MPI_Wtime() - t0;
    EXPECT_LT(waited, 20.0) << "the wait did not end within its bound";
    EXPECT_EQ(tshmem_ep_check_device_errors(b, nullptr), TSHMEM_EP_ERR_TSHMEM);
    const std::string msg = tshmem_ep_last_error();
    EXPECT_NE(msg.find("waited for PE " + std::to_string(n - 1)), std::string::npos) << msg;
    Dev<int32_t> status(static_cast<size_t>(n));
    EP_OK(tshmem_ep_low_latency_query_mask(b, status.p, nullptr));
    EXPECT_EQ(status.host(static_cast<size_t>(n))[static_cast<size_t>(n - 1)], 1);
  }
  EP_OK(tshmem_ep_buffer_set_timeout_ms(b, 10000));
  EP_OK(tshmem_ep_low_latency_clean_mask(b, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD);
}

/// clean_low_latency_buffer skips a masked PE, as DeepEP's does: PE n-1 is masked by every other PE and never calls
/// clean (it stands for a PE that died). The others' clean returns within a fraction of the bound, records no
/// timeout, leaves the mask as it was, and leaves the signals zero: a dispatch and combine among them then equal the
/// reference with PE n-1 absent. Afterwards every PE unmasks and cleans together, and a full round runs again.
TEST(EpLowLatencyZzMaskedClean, CleanSkipsAMaskedPeThatNeverCalls) {
  REQUIRE_GPU();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "masking needs 2 PEs or more";
  tshmem_ep_buffer_t b = buffer();
  ASSERT_NE(b, nullptr);
  const int dead = n - 1;
  const Case c{16, 256, 16 * n, 8, false, false, false, 1, false, false, false};
  auto world = make_inputs(c, n, 71);
  for (int p = 0; p < n; ++p)
    for (int q = 0; q < n; ++q)
      if (p == dead || q == dead) world[static_cast<size_t>(p)].masked[static_cast<size_t>(q)] = 1;
  const LlShape shape{n, static_cast<int>(c.experts), 16, 256, 8, false, false, false};
  const auto dref = ll_dispatch_reference(shape, world);
  std::vector<std::vector<uint16_t>> ys;
  for (int p = 0; p < n; ++p) ys.push_back(expert_outputs(c, n, p));
  const auto cref = ll_combine_reference(shape, world, dref, ys);
  const LlPeInput &mine = world[static_cast<size_t>(me)];
  const size_t T = static_cast<size_t>(mine.num_tokens), H = 256;
  EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD);
  if (me != dead) {
    // A bound long enough that a clean which waited for the masked PE would be seen waiting.
    EP_OK(tshmem_ep_buffer_set_timeout_ms(b, 20000));
    EP_OK(tshmem_ep_low_latency_update_mask(b, dead, 1, nullptr));
    Dev<uint16_t> x(mine.x), y(ys[static_cast<size_t>(me)]), out(T * H);
    Dev<int64_t> idx(mine.topk_idx);
    Dev<float> w(mine.topk_weights);
    DispatchOut o(c, n);
    const auto da = dispatch_args(c, mine, x.p, idx.p, o);
    tshmem_ep_ll_combine_args_t ca{};
    ca.x = y.p;
    ca.topk_idx = idx.p;
    ca.topk_weights = w.p;
    ca.src_info = o.src_info.p;
    ca.layout_range = o.range.p;
    ca.num_tokens = mine.num_tokens;
    ca.hidden = c.hidden;
    ca.num_topk = c.topk;
    ca.num_max_dispatch_tokens_per_rank = c.max_tokens;
    ca.num_experts = c.experts;
    ca.combined_x = out.p;
    for (int r = 0; r < 2; ++r) {
      // Round 0 leaves signals set in both slots; the clean that follows must zero them without the masked PE.
      const double t0 = MPI_Wtime();
      EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      const double waited = MPI_Wtime() - t0;
      EXPECT_LT(waited, 10.0) << "round " << r << ": the clean waited for the masked PE " << dead;
      EXPECT_EQ(tshmem_ep_check_device_errors(b, nullptr), TSHMEM_EP_SUCCESS) << tshmem_ep_last_error();
      Dev<int32_t> status(static_cast<size_t>(n));
      EP_OK(tshmem_ep_low_latency_query_mask(b, status.p, nullptr));
      const auto st = status.host(static_cast<size_t>(n));
      for (int q = 0; q < n; ++q) EXPECT_EQ(st[static_cast<size_t>(q)], q == dead ? 1 : 0) << "mask of PE " << q;
      EP_OK(tshmem_ep_low_latency_dispatch(b, &da, TSHMEM_EP_LL_BOTH, nullptr, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      expect_dispatch(c, n, dref[static_cast<size_t>(me)], o, ("after clean " + std::to_string(r)).c_str());
      EP_OK(tshmem_ep_low_latency_combine(b, &ca, TSHMEM_EP_LL_BOTH, nullptr, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      EXPECT_EQ(tshmem_ep_check_device_errors(b, nullptr), TSHMEM_EP_SUCCESS) << tshmem_ep_last_error();
      EXPECT_EQ(out.host(T * H), cref[static_cast<size_t>(me)]) << "after clean " << r << ": combined_x";
    }
    EP_OK(tshmem_ep_low_latency_clean_mask(b, nullptr));
    EP_OK(tshmem_ep_buffer_set_timeout_ms(b, 10000));
    CUDA_OK(cudaDeviceSynchronize());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // The masked PE rejoins: the clean at the start of run_case is a barrier of every PE again.
  run_case({16, 256, 16 * n, 8, true, false, false, 0, true, false, false}, 72, 1);
  // Last of the binary (a PE masked at a timeout stays out of later barriers): PE n-1, not masked, does not come to
  // a clean. The others' clean ends at the bound (3 s here), masks it and reports the clean's wait naming it.
  if (me != dead) {
    EP_OK(tshmem_ep_buffer_set_timeout_ms(b, 3000));
    const double t0 = MPI_Wtime();
    EP_OK(tshmem_ep_low_latency_clean(b, c.max_tokens, c.hidden, c.experts, nullptr));
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_LT(MPI_Wtime() - t0, 20.0) << "the clean's wait did not end within its bound";
    EXPECT_EQ(tshmem_ep_check_device_errors(b, nullptr), TSHMEM_EP_ERR_TSHMEM);
    const std::string msg = tshmem_ep_last_error();
    EXPECT_NE(
        msg.find("tshmem_ep_low_latency_clean on PE " + std::to_string(me) + " waited for PE " + std::to_string(dead)),
        std::string::npos)
        << msg;
    Dev<int32_t> status(static_cast<size_t>(n));
    EP_OK(tshmem_ep_low_latency_query_mask(b, status.p, nullptr));
    const auto st = status.host(static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) EXPECT_EQ(st[static_cast<size_t>(q)], q == dead ? 1 : 0) << "mask of PE " << q;
    EP_OK(tshmem_ep_buffer_set_timeout_ms(b, 10000));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace tshmem_ep

int main(int argc, char **argv) { return tshmem_ep::gpu_test_main(argc, argv, tshmem_ep::buffer); }
