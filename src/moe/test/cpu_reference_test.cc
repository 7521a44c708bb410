// CPU-reference tests of tshmem_moe: the spec's worked examples, ties, -inf, T == 0, all -1, and argument
// and value errors. They run everywhere (no GPU, no CUDA call is made for host tensors).
#include <cmath>
#include <limits>
#include <string>

#include "moe_test_util.h"

using namespace moe_test;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

TEST(MoeStatus, EveryStatusHasAName) {
  for (int s = 0; s < TSHMEM_MOE_NUM_STATUS; ++s)
    EXPECT_EQ(std::string(tshmem_moe_status_string(static_cast<tshmem_moe_status_t>(s))).find("unknown"),
              std::string::npos);
  EXPECT_STREQ(tshmem_moe_status_string(TSHMEM_MOE_ERR_DEVICE_MISMATCH), "TSHMEM_MOE_ERR_DEVICE_MISMATCH");
}

TEST(MoeScoring, ParsesCaseInsensitively) {
  tshmem_moe_scoring_func_t f;
  MOE_OK(tshmem_moe_scoring_func_parse("SqrtSoftplus", &f));
  EXPECT_EQ(f, TSHMEM_MOE_SCORING_SQRTSOFTPLUS);
  EXPECT_EQ(tshmem_moe_scoring_func_parse("relu", &f), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("relu"), std::string::npos);
}

TEST(MoeTopkGate, TiesGoToTheSmallerIndex) {
  std::vector<float> s = {1, 3, 3, 2, 0, 0, 0, 0};
  Tensor st = view(s, TSHMEM_MOE_FLOAT32, {2, 4});
  Out idx;
  MOE_OK(tshmem_moe_topk_gate(&st, 3, &idx, nullptr));
  EXPECT_EQ(as<int64_t>(idx.t), (std::vector<int64_t>{1, 2, 3, 0, 1, 2}));
  EXPECT_EQ(idx.t.shape[0], 2);
  EXPECT_EQ(idx.t.shape[1], 3);
  EXPECT_EQ(idx.t.dtype, TSHMEM_MOE_INT64);
}

TEST(MoeTopkGate, MinusInfinityIsRemovedTruly) {
  std::vector<float> s = {-kInf, -kInf, 5, -kInf};
  Tensor st = view(s, TSHMEM_MOE_FLOAT32, {1, 4});
  Out idx;
  MOE_OK(tshmem_moe_topk_gate(&st, 4, &idx, nullptr));
  EXPECT_EQ(as<int64_t>(idx.t), (std::vector<int64_t>{2, 0, 1, 3}));  // a stable sort: no duplicates
}

TEST(MoeTopkGate, EmptyAndInvalid) {
  std::vector<float> s;
  Tensor st = view(s, TSHMEM_MOE_FLOAT32, {0, 8});
  Out idx;
  MOE_OK(tshmem_moe_topk_gate(&st, 6, &idx, nullptr));
  EXPECT_EQ(idx.t.shape[0], 0);
  EXPECT_EQ(idx.t.shape[1], 6);
  Out bad;
  EXPECT_EQ(tshmem_moe_topk_gate(&st, 9, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("num_topk = 9"), std::string::npos) << last();
  EXPECT_EQ(tshmem_moe_topk_gate(&st, 0, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  std::vector<int64_t> wrong(8);
  Tensor wt = view(wrong, TSHMEM_MOE_INT64, {1, 8});
  EXPECT_EQ(tshmem_moe_topk_gate(&wt, 2, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("'scores'"), std::string::npos) << last();
  EXPECT_NE(last().find("tshmem_moe_topk_gate"), std::string::npos) << last();
  std::vector<float> s2(8);
  Tensor nc = view(s2, TSHMEM_MOE_FLOAT32, {2, 2});
  nc.strides[0] = 4;  // a non-contiguous row stride
  EXPECT_EQ(tshmem_moe_topk_gate(&nc, 1, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("contiguous"), std::string::npos) << last();
}

TEST(MoeTopkGroup, SumsAreMultisetsAndTiesGoLow) {
  // G = 3 groups of 2: top-2 sums 2, 2, 2 (ties) and top-1 1, 2, 1.5.
  std::vector<float> s = {1, 1, 2, 0, 0.5f, 1.5f, /* row 2 */ 3, 3, 5, -1, 0, 0};
  Tensor st = view(s, TSHMEM_MOE_FLOAT32, {2, 3, 2});
  Out g2, g1;
  MOE_OK(tshmem_moe_topk_sum_and_topk_group_idx(&st, 2, 3, &g2, nullptr));
  EXPECT_EQ(as<int64_t>(g2.t), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));  // row 2: 6 (3+3 as a multiset), 4, 0
  MOE_OK(tshmem_moe_topk_sum_and_topk_group_idx(&st, 1, 2, &g1, nullptr));
  EXPECT_EQ(as<int64_t>(g1.t), (std::vector<int64_t>{1, 2, 1, 0}));
  Out bad;
  EXPECT_EQ(tshmem_moe_topk_sum_and_topk_group_idx(&st, 3, 2, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tshmem_moe_topk_sum_and_topk_group_idx(&st, 1, 4, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
}

// top2_sum_gate's worked example (docs/moe.md): R = 72, num_extra = 32, 4 EP ranks, 2 TP ranks: per_rank = 26,
// per_dp = 52.
TEST(MoeMaskByTp, WorkedExample73) {
  std::vector<int64_t> ids(104);
  for (int i = 0; i < 104; ++i) ids[i] = i;
  Tensor it = view(ids, TSHMEM_MOE_INT64, {1, 104});
  Out o1, o0;
  MOE_OK(tshmem_moe_mask_indices_by_tp(&it, 104, 4, 1, 2, &o1, nullptr));
  std::vector<int64_t> r1 = as<int64_t>(o1.t);
  for (int i = 0; i < 104; ++i) {
    const int64_t want = (i >= 26 && i < 52) ? i - 26 : (i >= 78 ? i - 78 + 26 : -1);
    EXPECT_EQ(r1[i], want) << "id " << i;
  }
  MOE_OK(tshmem_moe_mask_indices_by_tp(&it, 104, 4, 0, 2, &o0, nullptr));
  EXPECT_EQ(as<int64_t>(o0.t)[72], 46);
  // int32 indices, and any negative value becomes -1.
  std::vector<int32_t> small = {-5, -1, 0, 30};
  Tensor st = view(small, TSHMEM_MOE_INT32, {2, 2});
  Out o32;
  MOE_OK(tshmem_moe_mask_indices_by_tp(&st, 104, 4, 1, 2, &o32, nullptr));
  EXPECT_EQ(as<int32_t>(o32.t), (std::vector<int32_t>{-1, -1, -1, 4}));
  Out bad;
  EXPECT_EQ(tshmem_moe_mask_indices_by_tp(&it, 104, 4, 2, 2, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
}

// The transform takes a 32-bit path when every operand fits and a 64-bit one otherwise: both must give
// the spec's formula (checked here in plain 64-bit arithmetic) on either side of the boundary.
TEST(MoeMaskByTp, ThirtyTwoAndSixtyFourBitPathsAgreeWithTheFormula) {
  const auto formula = [](int64_t v, int64_t per_gpu, int64_t tp_rank, int64_t ntp) -> int64_t {
    if (v < 0 || (v / per_gpu) % ntp != tp_rank) return -1;
    const int64_t v1 = v - tp_rank * per_gpu, per_dp = ntp * per_gpu;
    return v1 - (v1 / per_dp) * (per_dp - per_gpu);
  };
  for (int64_t n : {int64_t{104}, int64_t{1} << 33, (int64_t{1} << 40) + 8}) {
    const int64_t ep = 4, ntp = 2, per_gpu = n / ep;  // as the spec: n / num_ep_ranks
    std::vector<int64_t> ids;
    for (int64_t base : {int64_t{0}, per_gpu - 3, 2 * per_gpu - 1, int64_t{0x7fffffff} - 2, n - 5})
      for (int64_t d = 0; d < 5; ++d)
        if (base + d >= 0 && base + d < n) ids.push_back(base + d);
    ids.push_back(-7);
    Tensor it = view(ids, TSHMEM_MOE_INT64, {static_cast<int64_t>(ids.size())});
    for (int64_t tp = 0; tp < ntp; ++tp) {
      Out o;
      MOE_OK(tshmem_moe_mask_indices_by_tp(&it, n, ep, tp, ntp, &o, nullptr));
      const std::vector<int64_t> got = as<int64_t>(o.t);
      for (size_t i = 0; i < ids.size(); ++i)
        EXPECT_EQ(got[i], formula(ids[i], per_gpu, tp, ntp)) << "n " << n << " id " << ids[i] << " tp " << tp;
    }
  }
}

tshmem_moe_top2_sum_gate_params_t gate_params(int64_t K, tshmem_moe_scoring_func_t f) {
  tshmem_moe_top2_sum_gate_params_t p{};
  p.num_topk = K;
  p.routed_scaling_factor = 1.5f;
  p.ep_rank = 0;
  p.num_ep_ranks = 4;
  p.tp_rank = 0;
  p.num_tp_ranks = 2;
  p.scoring_func = f;
  return p;
}

TEST(MoeTop2SumGate, StabilityAllEqualScores) {
  const int64_t T = 3, R = 72, K = 6;
  std::vector<float> logits(T * R, 0.0f), bias(R, 0.0f);
  Tensor lt = view(logits, TSHMEM_MOE_FLOAT32, {T, R}), bt = view(bias, TSHMEM_MOE_FLOAT32, {R});
  auto p = gate_params(K, TSHMEM_MOE_SCORING_SIGMOID);
  Out idx, w;
  MOE_OK(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &idx, &w, nullptr));
  std::vector<int64_t> i = as<int64_t>(idx.t);
  std::vector<float> wv = as<float>(w.t);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k) {
      EXPECT_EQ(i[t * K + k], k);  // min(R/4, K) = 6 slots: 0, 1, 2, ...
      EXPECT_NEAR(wv[t * K + k], 1.5f / 6, 1e-6);
    }
}

TEST(MoeTop2SumGate, SharedSlotsPhysicalMapMaskAndFixRouting) {
  const int64_t T = 3, R = 72, K = 6, S = 1, D = 33;
  std::vector<float> logits(T * R), bias(R, 0.0f);
  for (int64_t i = 0; i < T * R; ++i) logits[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  std::vector<int32_t> map((R + S) * D), cnt(R + S, 1);
  for (int64_t l = 0; l < R + S; ++l)
    for (int64_t d = 0; d < D; ++d) map[l * D + d] = static_cast<int32_t>(l);
  std::vector<uint8_t> mask = {1, 0, 1}, fix = {0, 0, 1};
  std::vector<int64_t> unmapped(T * K, 0);
  const int64_t fixed[K] = {5, 3, 3, 60, 0, 71};  // duplicates are allowed
  for (int64_t k = 0; k < K; ++k) unmapped[2 * K + k] = fixed[k];
  Tensor lt = view(logits, TSHMEM_MOE_FLOAT32, {T, R}), bt = view(bias, TSHMEM_MOE_FLOAT32, {R});
  Tensor mt = view(map, TSHMEM_MOE_INT32, {R + S, D}), ct = view(cnt, TSHMEM_MOE_INT32, {R + S});
  Tensor mk = view(mask, TSHMEM_MOE_BOOL, {T}), fx = view(fix, TSHMEM_MOE_BOOL, {T});
  Tensor ut = view(unmapped, TSHMEM_MOE_INT64, {T, K});
  auto p = gate_params(K, TSHMEM_MOE_SCORING_SIGMOID);
  p.use_shared_as_routed = 1;
  p.num_shared_experts = S;
  Out idx, w;
  MOE_OK(tshmem_moe_top2_sum_gate(&lt, &bt, &p, &mk, &fx, &mt, &ct, &ut, &idx, &w, nullptr));
  std::vector<int64_t> i = as<int64_t>(idx.t);
  std::vector<float> wv = as<float>(w.t);
  // Shared slot: logical 72 on EP rank 2 (per_rank 26) maps to 46 under tp_rank 0, weight exactly 1.
  EXPECT_EQ(i[0 * (K + S) + K], 46);
  EXPECT_EQ(wv[0 * (K + S) + K], 1.0f);
  // Masked row: all -1 / 0, unmapped -1.
  for (int64_t s = 0; s < K + S; ++s) {
    EXPECT_EQ(i[1 * (K + S) + s], -1);
    EXPECT_EQ(wv[1 * (K + S) + s], 0.0f);
  }
  for (int64_t k = 0; k < K; ++k) EXPECT_EQ(unmapped[1 * K + k], -1);
  // Fix-routing row: the given ids in the given order, weights p/den * 1.5 with den seeded by 1e-20.
  float den = 1e-20f, raw[K];
  for (int64_t k = 0; k < K; ++k) raw[k] = 1.0f / (1.0f + std::exp(-logits[2 * R + fixed[k]])), den += raw[k];
  for (int64_t k = 0; k < K; ++k) {
    EXPECT_EQ(unmapped[2 * K + k], fixed[k]);
    EXPECT_EQ(wv[2 * (K + S) + k], (raw[k] / den) * 1.5f);
    const int64_t id = fixed[k];  // ranks 0 and 2 are kept for tp_rank 0: ids 0..25 and 52..77 -> 26..51
    const int64_t want = id < 26 ? id : (id >= 52 && id < 78 ? id - 26 : -1);
    EXPECT_EQ(i[2 * (K + S) + k], want);
  }
  // Row 0 was selected: unmapped ids are sorted by descending sigmoid (no bias).
  for (int64_t k = 1; k < K; ++k) EXPECT_GE(logits[0 * R + unmapped[k - 1]], logits[0 * R + unmapped[k]]);
}

TEST(MoeTop2SumGate, GroupLimitedSelection) {
  // 4 groups of 4, keep 2: group scores are top-2 sums of sigmoid(x) + bias.
  const int64_t R = 16, K = 3;
  std::vector<float> logits(R, -4.0f), bias(R, 0.0f);
  logits[0] = 4.0f;                     // group 0: one strong expert (sum ~ 0.98 + 0.018)
  logits[5] = 2.0f, logits[6] = 2.0f;   // group 1: two good experts (sum ~ 1.76)
  logits[9] = 1.0f, logits[10] = 1.0f;  // group 2: (sum ~ 1.46)
  Tensor lt = view(logits, TSHMEM_MOE_FLOAT32, {1, R}), bt = view(bias, TSHMEM_MOE_FLOAT32, {R});
  auto p = gate_params(K, TSHMEM_MOE_SCORING_SIGMOID);
  p.num_groups = 4, p.num_topk_groups = 2, p.num_ep_ranks = 1, p.num_tp_ranks = 1;
  Out idx, w;
  MOE_OK(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &idx, &w, nullptr));
  EXPECT_EQ(as<int64_t>(idx.t), (std::vector<int64_t>{5, 6, 9}));  // expert 0's group lost
}

TEST(MoeTop2SumGate, Errors) {
  const int64_t R = 8;
  std::vector<float> logits(2 * R, 0.0f), bias(R, 0.0f);
  Tensor lt = view(logits, TSHMEM_MOE_FLOAT32, {2, R}), bt = view(bias, TSHMEM_MOE_FLOAT32, {R});
  auto p = gate_params(2, TSHMEM_MOE_SCORING_IDENTITY);
  p.num_ep_ranks = 1, p.num_tp_ranks = 1;
  Out a, b;
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("identity"), std::string::npos) << last();
  p.scoring_func = TSHMEM_MOE_SCORING_SOFTMAX;
  p.num_groups = 2;  // num_topk_groups stays 0
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  p.num_groups = 0;
  p.use_shared_as_routed = 1, p.num_shared_experts = 1;  // needs a physical map with extra columns
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("num_extra_experts"), std::string::npos) << last();
  p.use_shared_as_routed = 0;
  std::vector<uint8_t> fix(2, 1);
  Tensor fx = view(fix, TSHMEM_MOE_BOOL, {2});
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, &fx, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("unmapped_topk_idx"), std::string::npos) << last();
  logits[3] = std::nanf("");
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(last().find("logits"), std::string::npos) << last();
  EXPECT_EQ(a.t.data, nullptr);  // a failing call leaves no allocation behind
  std::vector<float> empty;
  Tensor et = view(empty, TSHMEM_MOE_FLOAT32, {0, R});
  MOE_OK(tshmem_moe_top2_sum_gate(&et, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr));
  EXPECT_EQ(a.t.shape[0], 0);
  EXPECT_EQ(b.t.shape[1], 2);
}

TEST(MoeCounts, GroupCountAuxFi) {
  std::vector<int64_t> idx = {0, 1, 1, -1, 2, 2};
  Tensor it = view(idx, TSHMEM_MOE_INT64, {3, 2});
  Out c, fi;
  MOE_OK(tshmem_moe_group_count(&it, 4, &c, nullptr));
  EXPECT_EQ(as<int32_t>(c.t), (std::vector<int32_t>{1, 2, 2, 0}));
  MOE_OK(tshmem_moe_aux_fi(&it, 4, 2, &fi, nullptr));
  std::vector<float> f = as<float>(fi.t);
  for (int e = 0; e < 4; ++e) EXPECT_EQ(f[e], (static_cast<float>(std::vector<int>{1, 2, 2, 0}[e]) * 4.0f) / 6.0f);
  // T == 0 and all -1 give zeros.
  std::vector<int64_t> none, neg(6, -1);
  Tensor nt = view(none, TSHMEM_MOE_INT64, {0, 2}), gt = view(neg, TSHMEM_MOE_INT64, {3, 2});
  Out c0, c1, f0;
  MOE_OK(tshmem_moe_group_count(&nt, 3, &c0, nullptr));
  MOE_OK(tshmem_moe_group_count(&gt, 3, &c1, nullptr));
  MOE_OK(tshmem_moe_aux_fi(&nt, 3, 1, &f0, nullptr));
  EXPECT_EQ(as<int32_t>(c0.t), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(as<int32_t>(c1.t), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(as<float>(f0.t), (std::vector<float>{0, 0, 0}));
  // Out-of-range values are errors naming the tensor, the value and the rule.
  Out bad;
  idx[4] = 7;
  EXPECT_EQ(tshmem_moe_group_count(&it, 4, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(last().find("holds 7"), std::string::npos) << last();
  idx[4] = -2;
  EXPECT_EQ(tshmem_moe_aux_fi(&it, 4, 1, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(last().find("topk_idx"), std::string::npos) << last();
}

TEST(MoeNormalizeWeight, SequentialSumSeededWith1e20) {
  std::vector<float> w = {1, 2, 3, 0, 0, 0};
  Tensor wt = view(w, TSHMEM_MOE_FLOAT32, {2, 3});
  Out d, n;
  MOE_OK(tshmem_moe_normalize_weight(&wt, &d, &n, nullptr));
  std::vector<float> dv = as<float>(d.t), nv = as<float>(n.t);
  EXPECT_EQ(dv[0], ((1e-20f + 1.0f) + 2.0f) + 3.0f);
  EXPECT_EQ(nv[1], 2.0f / dv[0]);
  EXPECT_EQ(dv[1], 1e-20f);
  EXPECT_EQ(nv[4], 0.0f);
  std::vector<float> e;
  Tensor et = view(e, TSHMEM_MOE_FLOAT32, {0, 3});
  Out d0, n0;
  MOE_OK(tshmem_moe_normalize_weight(&et, &d0, &n0, nullptr));
  EXPECT_EQ(d0.t.shape[0], 0);
}

TEST(MoeUnique, KeepsTheLeftmostOccurrence) {
  std::vector<int64_t> g = {1, 1, -1, 2, 1, -1, -1, 3, 3, 0};
  Tensor gt = view(g, TSHMEM_MOE_INT64, {2, 5});
  MOE_OK(tshmem_moe_inplace_unique_group_indices(&gt, 8, nullptr));
  EXPECT_EQ(g, (std::vector<int64_t>{1, -1, -1, 2, -1, -1, -1, 3, -1, 0}));
  g[0] = 64;  // >= align(8, 64)
  EXPECT_EQ(tshmem_moe_inplace_unique_group_indices(&gt, 8, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_EQ(tshmem_moe_inplace_unique_group_indices(&gt, 129, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
}

// get_fused_mapping's worked example (docs/moe.md): topk_idx = [[1,-1],[0,1],[1,0]], E = 3, alignment 4, canonical
// (ascending f) order.
TEST(MoeFusedMapping, WorkedExample134) {
  std::vector<int64_t> idx = {1, -1, 0, 1, 1, 0};
  Tensor it = view(idx, TSHMEM_MOE_INT64, {3, 2});
  tshmem_moe_fused_mapping_t m{};
  int32_t list[3] = {-7, -7, -7}, filled = 0;
  MOE_OK(tshmem_moe_get_fused_mapping(&it, 3, 0, 4, 0, &m, list, &filled, nullptr));
  EXPECT_EQ(filled, 1);
  EXPECT_EQ(std::vector<int32_t>(list, list + 3), (std::vector<int32_t>{4, 4, 0}));
  EXPECT_EQ(m.pos_to_expert.shape[0], 8);
  EXPECT_EQ(as<int32_t>(m.pos_to_expert), (std::vector<int32_t>{0, 0, -1, -1, 1, 1, 1, -1}));
  EXPECT_EQ(as<int32_t>(m.pos_to_token), (std::vector<int32_t>{1, 2, -1, -1, 0, 1, 2, -1}));
  EXPECT_EQ(as<int32_t>(m.pos_to_token_topk), (std::vector<int32_t>{2, 5, -1, -1, 0, 3, 4, -1}));
  EXPECT_EQ(as<int32_t>(m.token_topk_to_pos), (std::vector<int32_t>{4, -1, 0, 5, 6, 1}));
  EXPECT_EQ(as<int32_t>(m.expert_start), (std::vector<int32_t>{0, 4, 8}));
  EXPECT_EQ(as<int32_t>(m.expert_end), (std::vector<int32_t>{4, 8, 8}));
  EXPECT_EQ(as<int32_t>(m.num_tokens_per_expert), (std::vector<int32_t>{4, 4, 0}));
  Tensor *all[] = {&m.pos_to_expert, &m.pos_to_token, &m.pos_to_token_topk,    &m.token_topk_to_pos,
                   &m.expert_start,  &m.expert_end,   &m.num_tokens_per_expert};
  for (Tensor *t : all) tshmem_moe_tensor_free(t, nullptr);

  // A caller-given P larger than needed: rows past the segments are -1; no host list.
  tshmem_moe_fused_mapping_t m2{};
  MOE_OK(tshmem_moe_get_fused_mapping(&it, 3, 10, 4, 0, &m2, list, &filled, nullptr));
  EXPECT_EQ(filled, 0);
  EXPECT_EQ(as<int32_t>(m2.pos_to_expert), (std::vector<int32_t>{0, 0, -1, -1, 1, 1, 1, -1, -1, -1}));
  Tensor *all2[] = {&m2.pos_to_expert, &m2.pos_to_token, &m2.pos_to_token_topk,    &m2.token_topk_to_pos,
                    &m2.expert_start,  &m2.expert_end,   &m2.num_tokens_per_expert};
  for (Tensor *t : all2) tshmem_moe_tensor_free(t, nullptr);

  // Too small a P is a value error, not an out-of-bounds write.
  tshmem_moe_fused_mapping_t m3{};
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&it, 3, 5, 4, 0, &m3, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&it, 3, 0, 4, 1, &m3, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  idx[1] = 3;  // outside [-1, E)
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&it, 3, 0, 4, 0, &m3, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_EQ(m3.pos_to_expert.data, nullptr);
  // Rows are int32: an alignment beyond 2^31 - 1 is refused by name, before anything is allocated.
  idx[1] = -1;
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&it, 3, 0, int64_t{1} << 31, 0, &m3, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_UNSUPPORTED);
  EXPECT_NE(last().find("alignment = 2147483648"), std::string::npos) << last();
  EXPECT_EQ(m3.pos_to_expert.data, nullptr);
  // So are more slots than int32 positions hold (the shape alone decides: nothing is read or allocated).
  Tensor huge = it;
  huge.shape[0] = int64_t{1} << 28, huge.shape[1] = 8;
  huge.strides[0] = 8, huge.strides[1] = 1;
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&huge, 3, 0, 4, 0, &m3, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_UNSUPPORTED);
  EXPECT_NE(last().find("positions are int32"), std::string::npos) << last();
  EXPECT_EQ(m3.pos_to_expert.data, nullptr);
}

TEST(MoeFusedMapping, EmptyAndAllMinusOne) {
  for (int64_t T : {0, 4}) {
    std::vector<int64_t> idx(static_cast<size_t>(T * 3), -1);
    Tensor it = view(idx, TSHMEM_MOE_INT64, {T, 3});
    tshmem_moe_fused_mapping_t m{};
    int32_t list[5];
    int32_t filled = 0;
    MOE_OK(tshmem_moe_get_fused_mapping(&it, 5, 0, 128, 0, &m, list, &filled, nullptr));
    EXPECT_EQ(filled, 1);
    EXPECT_EQ(m.pos_to_expert.shape[0], 0);
    EXPECT_EQ(as<int32_t>(m.expert_start), (std::vector<int32_t>(5, 0)));
    EXPECT_EQ(as<int32_t>(m.expert_end), (std::vector<int32_t>(5, 0)));
    EXPECT_EQ(as<int32_t>(m.token_topk_to_pos), (std::vector<int32_t>(static_cast<size_t>(T * 3), -1)));
    Tensor *all[] = {&m.pos_to_expert, &m.pos_to_token, &m.pos_to_token_topk,    &m.token_topk_to_pos,
                     &m.expert_start,  &m.expert_end,   &m.num_tokens_per_expert};
    for (Tensor *t : all) tshmem_moe_tensor_free(t, nullptr);
  }
}

TEST(MoeExpand, CopiesRowsAndZeroesPadding) {
  // The worked example's mapping, H = 4 bf16 (bit patterns 0x100*t + i).
  std::vector<uint16_t> x(12);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 4; ++i) x[t * 4 + i] = static_cast<uint16_t>(0x100 * (t + 1) + i);
  std::vector<int32_t> pos = {4, -1, 0, 5, 6, 1}, pte = {0, 0, -1, -1, 1, 1, 1, -1};
  Tensor xt = view(x, TSHMEM_MOE_BFLOAT16, {3, 4}), pt = view(pos, TSHMEM_MOE_INT32, {3, 2});
  Tensor et = view(pte, TSHMEM_MOE_INT32, {8});
  Out xf;
  MOE_OK(tshmem_moe_expand_to_fused(&xt, &pt, &et, &xf, nullptr));
  std::vector<uint16_t> got = as<uint16_t>(xf.t);
  const int src[8] = {1, 2, -1, -1, 0, 1, 2, -1};
  for (int p = 0; p < 8; ++p)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[p * 4 + i], src[p] < 0 ? 0 : x[src[p] * 4 + i]) << p << "," << i;

  // With float32 sf in the TMA-aligned column-major layout (H = 4 with 32 channels per block: 1 sf column).
  std::vector<float> sf = {1.5f, 2.5f, 3.5f};
  Tensor st = view(sf, TSHMEM_MOE_FLOAT32, {3, 1});
  Out xf2, sff;
  MOE_OK(tshmem_moe_expand_to_fused_with_sf(&xt, &st, 32, &pt, &et, 1, &xf2, &sff, nullptr));
  EXPECT_EQ(sff.t.strides[0], 1);
  EXPECT_EQ(sff.t.strides[1], 8);  // align(P = 8, 4)
  std::vector<float> sv = as<float>(sff.t);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(sv[p], src[p] < 0 ? 0.0f : sf[src[p]]);
  // Packed int32 sf requires the column-major layout; hidden_sf must match.
  std::vector<int32_t> packed = {1, 2, 3};
  Tensor pk = view(packed, TSHMEM_MOE_INT32, {3, 1});
  Out a, b;
  EXPECT_EQ(tshmem_moe_expand_to_fused_with_sf(&xt, &pk, 32, &pt, &et, 0, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tshmem_moe_expand_to_fused_with_sf(&xt, &st, 64, &pt, &et, 0, &a, &b, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);

  // T == 0 with P > 0: padding rows are still zeroed (the spec's recommended behaviour).
  std::vector<uint16_t> none;
  std::vector<int32_t> nopos, pad = {-1, -1};
  Tensor x0 = view(none, TSHMEM_MOE_BFLOAT16, {0, 4}), p0 = view(nopos, TSHMEM_MOE_INT32, {0, 2});
  Tensor e0 = view(pad, TSHMEM_MOE_INT32, {2});
  Out z;
  MOE_OK(tshmem_moe_expand_to_fused(&x0, &p0, &e0, &z, nullptr));
  EXPECT_EQ(as<uint16_t>(z.t), (std::vector<uint16_t>(8, 0)));
  // Positions outside [-1, P) are value errors.
  pos[0] = 8;
  Out bad;
  EXPECT_EQ(tshmem_moe_expand_to_fused(&xt, &pt, &et, &bad, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE);
}

TEST(MoeReduce, FmaInSlotOrderThenScaleThenCast) {
  const int64_t H = 256, P = 3, T = 2, K = 2;
  std::vector<float> x(P * H);
  for (int64_t i = 0; i < P * H; ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 300.0f - 1.5f;
  std::vector<float> w = {0.25f, 0.75f, 0.5f, 0.5f}, xsf = {2.0f, -1.0f, 0.5f}, sf = {-0.5f};
  std::vector<int32_t> pos = {2, 0, -1, -1};  // token 1 has no valid slot
  Tensor xt = view(x, TSHMEM_MOE_FLOAT32, {P, H}), wt = view(w, TSHMEM_MOE_FLOAT32, {T, K});
  Tensor xs = view(xsf, TSHMEM_MOE_FLOAT32, {P}), st = view(sf, TSHMEM_MOE_FLOAT32, {1});
  Tensor pt = view(pos, TSHMEM_MOE_INT32, {T, K});
  Out y;
  MOE_OK(tshmem_moe_reduce_fused(&xt, &xs, &wt, &pt, "", nullptr, &y, nullptr));
  std::vector<float> yv = as<float>(y.t);
  for (int64_t i = 0; i < H; ++i) {
    float acc = std::fma(x[2 * H + i], 0.25f * 0.5f, 0.0f);
    acc = std::fma(x[0 * H + i], 0.75f * 2.0f, acc);
    EXPECT_EQ(yv[i], acc);
    EXPECT_EQ(yv[H + i], 0.0f);
  }
  // e4m3 with a negative sf: the empty row becomes -0.0 (multiplied, not short-circuited).
  Out y8;
  MOE_OK(tshmem_moe_reduce_fused(&xt, nullptr, nullptr, &pt, "e4m3", &st, &y8, nullptr));
  EXPECT_EQ(y8.t.dtype, TSHMEM_MOE_FLOAT8_E4M3);
  std::vector<uint8_t> b8 = as<uint8_t>(y8.t);
  for (int64_t i = 0; i < H; ++i) EXPECT_EQ(b8[H + i], 0x80) << i;
  Out bad;
  EXPECT_EQ(tshmem_moe_reduce_fused(&xt, nullptr, nullptr, &pt, "", &st, &bad, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tshmem_moe_reduce_fused(&xt, nullptr, nullptr, &pt, "e5m2", nullptr, &bad, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  std::vector<float> narrow(3 * 128);
  Tensor nt = view(narrow, TSHMEM_MOE_FLOAT32, {3, 128});
  EXPECT_EQ(tshmem_moe_reduce_fused(&nt, nullptr, nullptr, &pt, "", nullptr, &bad, nullptr),
            TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("256"), std::string::npos) << last();
}

TEST(MoeReduce, E4m3RoundsToNearestEvenAndSaturates) {
  const int64_t H = 256;
  std::vector<float> x(H, 0.0f);
  const float in[] = {1.0f,  448.0f,  464.0f,  1000.0f,      -kInf, std::ldexp(1.0f, -9), 3 * std::ldexp(1.0f, -10),
                      1e-9f, 1.0625f, 1.1875f, std::nanf("")};
  const uint8_t want[] = {0x38, 0x7e, 0x7e, 0x7e, 0xfe, 0x01, 0x02, 0x00, 0x38, 0x3a, 0x7f};
  const int n = sizeof want;
  for (int i = 0; i < n; ++i) x[i] = in[i];
  std::vector<int32_t> pos = {0};
  Tensor xt = view(x, TSHMEM_MOE_FLOAT32, {1, H}), pt = view(pos, TSHMEM_MOE_INT32, {1, 1});
  Out y;
  MOE_OK(tshmem_moe_reduce_fused(&xt, nullptr, nullptr, &pt, "e4m3", nullptr, &y, nullptr));
  std::vector<uint8_t> b = as<uint8_t>(y.t);
  for (int i = 0; i < n; ++i) EXPECT_EQ(b[i], want[i]) << "input " << in[i];
}

TEST(MoeDevices, MismatchNamesTheTensorAndBothDevices) {
  std::vector<float> logits(8), bias(8);
  Tensor lt = view(logits, TSHMEM_MOE_FLOAT32, {1, 8});
  Tensor bt = view(bias, TSHMEM_MOE_FLOAT32, {8}, /*device=*/1);
  tshmem_moe_top2_sum_gate_params_t p{};
  p.num_topk = 2, p.num_ep_ranks = 1, p.num_tp_ranks = 1, p.routed_scaling_factor = 1.0f;
  Out a, b;
  EXPECT_EQ(tshmem_moe_top2_sum_gate(&lt, &bt, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &a, &b, nullptr),
            TSHMEM_MOE_ERR_DEVICE_MISMATCH);
  EXPECT_NE(last().find("'bias'"), std::string::npos) << last();
  EXPECT_NE(last().find("cuda:1"), std::string::npos) << last();
  EXPECT_NE(last().find("cpu"), std::string::npos) << last();
  // A preallocated output on another device is refused the same way.
  std::vector<int64_t> idx(2);
  Tensor it = view(idx, TSHMEM_MOE_INT64, {1, 2});
  std::vector<int32_t> cnt(4);
  Tensor ct = view(cnt, TSHMEM_MOE_INT32, {4}, 0);
  EXPECT_EQ(tshmem_moe_group_count(&it, 4, &ct, nullptr), TSHMEM_MOE_ERR_DEVICE_MISMATCH);
  EXPECT_NE(last().find("'counts'"), std::string::npos) << last();
  // A preallocated output of the wrong shape.
  Tensor ct2 = view(cnt, TSHMEM_MOE_INT32, {3});
  EXPECT_EQ(tshmem_moe_group_count(&it, 4, &ct2, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  // A preallocated output is written in place.
  Tensor ct3 = view(cnt, TSHMEM_MOE_INT32, {4});
  idx = {3, -1};
  MOE_OK(tshmem_moe_group_count(&it, 4, &ct3, nullptr));
  EXPECT_EQ(cnt, (std::vector<int32_t>{0, 0, 0, 1}));
}

}  // namespace
