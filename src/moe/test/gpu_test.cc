// GPU tests of tshmem_moe: every kernel against its CPU reference over the spec's test matrices (bitwise, or
// with the spec's tolerance for top2_sum_gate weights), repeated over SM-count overrides to show the results
// do not depend on the grid. Skipped with a reason when no CUDA device is present.
#include <cmath>
#include <string>

#include "moe_test_util.h"

using namespace moe_test;

namespace {

void expect_same(const Tensor &cpu, const Tensor &gpu, const std::string &what) {
  ASSERT_EQ(cpu.ndim, gpu.ndim) << what;
  for (int i = 0; i < cpu.ndim; ++i) {
    ASSERT_EQ(cpu.shape[i], gpu.shape[i]) << what << " dim " << i;
    if (tshmem_moe_tensor_numel(&cpu) > 0) {
      ASSERT_EQ(cpu.strides[i], gpu.strides[i]) << what << " stride " << i;
    }
  }
  ASSERT_EQ(cpu.dtype, gpu.dtype) << what;
  const std::vector<uint8_t> a = gather(cpu), b = gather(gpu);
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t first = a.size();
  for (size_t i = 0; i < a.size() && first == a.size(); ++i)
    if (a[i] != b[i]) first = i;
  ASSERT_EQ(first, a.size()) << what << ": first differing byte " << first << " of " << a.size();
}

std::vector<int> sms_list() {
  int sms = 0;
  EXPECT_EQ(tshmem_moe_get_device_num_sms(0, &sms), TSHMEM_MOE_SUCCESS);
  std::vector<int> v = {1, sms > 20 ? sms - 20 : 1, sms};
  return v;
}

struct SmsReset {
  ~SmsReset() { tshmem_moe_set_num_sms(0); }
};

struct MoeParams {
  int64_t local, ranks, K;
};
std::vector<MoeParams> moe_params() {  // the reference matrix: (local, ranks) x num_topk
  std::vector<MoeParams> v;
  for (auto lr : {std::pair<int64_t, int64_t>{9, 8}, {32, 8}, {4, 64}})
    for (int64_t K : {2, 6, 8, 9}) v.push_back({lr.first, lr.second, K});
  return v;
}

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float &x : v) x = d(rng);
  return v;
}

class MoeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    MOE_REQUIRE_GPUS(1);
    cudaSetDevice(0);
    tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_SYNC);
  }
  SmsReset reset_;
};

TEST_F(MoeGpu, TopkGate) {
  const std::pair<int64_t, int64_t> ek[] = {{72, 6}, {32, 6},  {64, 6},  {96, 6},  {16, 6},
                                            {36, 6}, {108, 6}, {128, 6}, {144, 6}, {256, 8}};
  for (int64_t T : {4001, 8001})
    for (auto [E, K] : ek) {
      std::vector<float> s = randn(static_cast<size_t>(T * E), static_cast<uint32_t>(T + E));
      if (T == 4001) s[5 * E + 3] = s[5 * E + 7];  // an exact tie
      Tensor h = view(s, TSHMEM_MOE_FLOAT32, {T, E});
      Mirror d(h, 0);
      Out ref, got;
      MOE_OK(tshmem_moe_topk_gate(&h, K, &ref, nullptr));
      MOE_OK(tshmem_moe_topk_gate(&d, K, &got, nullptr));
      expect_same(ref.t, got.t, "topk_gate E=" + std::to_string(E));
    }
  // -inf scores: true removal, as the stable sort.
  std::vector<float> s(4 * 40, -INFINITY);
  s[7] = 1.0f;
  Tensor h = view(s, TSHMEM_MOE_FLOAT32, {4, 40});
  Mirror d(h, 0);
  Out ref, got;
  MOE_OK(tshmem_moe_topk_gate(&h, 40, &ref, nullptr));
  MOE_OK(tshmem_moe_topk_gate(&d, 40, &got, nullptr));
  expect_same(ref.t, got.t, "topk_gate -inf");
}

TEST_F(MoeGpu, TopkSumAndTopkGroupIdx) {
  for (int64_t T : {4001, 8001})
    for (int64_t E : {72, 256})
      for (int64_t G : {4, 8, 12, 16}) {
        if (E % G) continue;
        std::vector<float> s = randn(static_cast<size_t>(T * E), static_cast<uint32_t>(E * G + T));
        s[E / G] = s[0];  // a multiset maximum in group 0 of token 0
        Tensor h = view(s, TSHMEM_MOE_FLOAT32, {T, G, E / G});
        Mirror d(h, 0);
        for (int64_t nsum : {1, 2})
          for (int64_t ntg : {2, 4}) {
            Out ref, got;
            MOE_OK(tshmem_moe_topk_sum_and_topk_group_idx(&h, nsum, ntg, &ref, nullptr));
            MOE_OK(tshmem_moe_topk_sum_and_topk_group_idx(&d, nsum, ntg, &got, nullptr));
            expect_same(ref.t, got.t, "topk_group G=" + std::to_string(G));
          }
      }
}

// Rows whose selection is ambiguous under last-bit differences of exp/log (adjacent ranking scores or group
// scores within 1e-5 near the boundary) are excluded from the index comparison, as the spec's rejection
// sampling does; weights are compared with rtol 1e-5, atol 1e-8.
TEST_F(MoeGpu, Top2SumGate) {
  struct Cfg {
    int64_t ng, ntg, R, S, K;
  };
  const Cfg cfgs[] = {{0, 0, 72, 1, 6},
                      {0, 0, 32, 2, 6},
                      {0, 0, 64, 2, 6},
                      {0, 0, 96, 2, 6},
                      {0, 0, 16, 2, 6},
                      {0, 0, 36, 2, 6},
                      {0, 0, 108, 2, 6},
                      {0, 0, 128, 2, 6},
                      {0, 0, 144, 2, 6},
                      {8, 8, 256, 2, 8},
                      {8, 4, 256, 2, 8},
                      // group mode with R / G != 32 (the kernel's generic group-score path)
                      {6, 3, 72, 1, 6},
                      {4, 2, 96, 2, 6}};
  const int64_t T = 4001, pad = 10, Tt = T + pad, D = 33;
  int compared_rows = 0, total_rows = 0;
  for (const Cfg &c : cfgs) {
    const bool shared_ok = c.R == 72 || c.R == 96 || c.R == 36 || c.R == 108 || c.R == 144 || c.R == 256;
    std::vector<float> logits = randn(static_cast<size_t>(Tt * c.R), static_cast<uint32_t>(c.R + c.K));
    std::vector<float> bias = randn(static_cast<size_t>(c.R), 7);
    std::vector<uint8_t> mask(static_cast<size_t>(Tt), 1), fix(static_cast<size_t>(Tt), 1);
    for (int64_t t = T; t < Tt; ++t) mask[t] = 0;
    for (int shared : {0, 1}) {
      if (shared && !shared_ok) continue;
      const int64_t S = shared ? c.S : 0;
      std::vector<int32_t> map(static_cast<size_t>((c.R + c.S) * D)), cnt(static_cast<size_t>(c.R + c.S), 1);
      for (int64_t l = 0; l < c.R + c.S; ++l)
        for (int64_t j = 0; j < D; ++j) map[l * D + j] = static_cast<int32_t>(l);
      for (int scoring = 0; scoring < 3; ++scoring)
        for (int64_t tp : {0, 1})
          for (int fixr : {0, 1}) {
            tshmem_moe_top2_sum_gate_params_t p{};
            p.num_topk = c.K, p.num_topk_groups = c.ntg, p.num_groups = c.ng;
            p.use_shared_as_routed = shared, p.num_shared_experts = c.S;
            p.routed_scaling_factor = 1.5f, p.ep_rank = 0, p.num_ep_ranks = 4, p.tp_rank = tp, p.num_tp_ranks = 2;
            p.scoring_func = static_cast<tshmem_moe_scoring_func_t>(scoring);
            std::mt19937 rng(42);
            std::uniform_int_distribution<int64_t> dist(0, c.R - 1);
            std::vector<int64_t> un_h(static_cast<size_t>(Tt * c.K)), un_d;
            for (int64_t &v : un_h) v = fixr ? dist(rng) : 0;
            un_d = un_h;
            Tensor lh = view(logits, TSHMEM_MOE_FLOAT32, {Tt, c.R}), bh = view(bias, TSHMEM_MOE_FLOAT32, {c.R});
            Tensor mh = view(mask, TSHMEM_MOE_BOOL, {Tt}), fh = view(fix, TSHMEM_MOE_BOOL, {Tt});
            Tensor maph = view(map, TSHMEM_MOE_INT32, {c.R + c.S, D}), ch = view(cnt, TSHMEM_MOE_INT32, {c.R + c.S});
            Tensor uh = view(un_h, TSHMEM_MOE_INT64, {Tt, c.K});
            Tensor ud_host = view(un_d, TSHMEM_MOE_INT64, {Tt, c.K});
            Mirror ld(lh, 0), bd(bh, 0), md(mh, 0), fd(fh, 0), mapd(maph, 0), cd(ch, 0), ud(ud_host, 0);
            const Tensor *mp_h = shared ? &maph : nullptr;
            const Tensor *cp_h = shared ? &ch : nullptr;
            const Tensor *mp_d = shared ? &mapd : nullptr;
            const Tensor *cp_d = shared ? &cd : nullptr;
            Out ri, rw, gi, gw;
            MOE_OK(
                tshmem_moe_top2_sum_gate(&lh, &bh, &p, &mh, fixr ? &fh : nullptr, mp_h, cp_h, &uh, &ri, &rw, nullptr));
            MOE_OK(tshmem_moe_top2_sum_gate(&ld, &bd, &p, &md, fixr ? &fd : nullptr, mp_d, cp_d, ud.ptr(), &gi, &gw,
                                            nullptr));
            const std::vector<int64_t> a = as<int64_t>(ri.t), b = as<int64_t>(gi.t);
            const std::vector<int64_t> ua = un_h, ub = as<int64_t>(ud.d);
            const std::vector<float> wa = as<float>(rw.t), wb = as<float>(gw.t);
            const int64_t KS = c.K + S;
            for (int64_t t = 0; t < Tt; ++t) {
              bool ambiguous = false;
              if (!fixr && t < T) {  // recompute the ranking scores on the host to find near ties
                std::vector<float> bs(static_cast<size_t>(c.R));
                const float *x = logits.data() + t * c.R;
                for (int64_t e = 0; e < c.R; ++e) {
                  const float pe = scoring == 0 ? 1.0f / (1.0f + std::exp(-x[e]))
                                                : std::sqrt(x[e] > 20 ? x[e] : std::log1p(std::exp(x[e])));
                  bs[e] = (scoring == 2 ? x[e] : pe) + bias[e];
                }
                std::vector<float> sorted = bs;
                std::sort(sorted.begin(), sorted.end(), std::greater<float>());
                for (int64_t k = 0; k + 1 < c.R && k <= c.K; ++k)
                  if (sorted[k] - sorted[k + 1] < 1e-5f * std::max(1.0f, std::fabs(sorted[k]))) ambiguous = true;
                if (c.ng != c.ntg) {
                  const int64_t epg = c.R / c.ng;
                  std::vector<float> gs;
                  for (int64_t g = 0; g < c.ng; ++g) {
                    std::vector<float> grp(bs.begin() + g * epg, bs.begin() + (g + 1) * epg);
                    std::sort(grp.begin(), grp.end(), std::greater<float>());
                    gs.push_back(grp[0] + grp[1]);
                  }
                  std::sort(gs.begin(), gs.end(), std::greater<float>());
                  for (size_t g = 0; g + 1 < gs.size(); ++g)
                    if (gs[g] - gs[g + 1] < 1e-5f) ambiguous = true;
                }
              }
              ++total_rows;
              if (ambiguous) continue;
              ++compared_rows;
              for (int64_t s = 0; s < KS; ++s) {
                ASSERT_EQ(a[t * KS + s], b[t * KS + s]) << "R=" << c.R << " scoring=" << scoring << " t=" << t;
                const float x = wa[t * KS + s], y = wb[t * KS + s];
                ASSERT_LE(std::fabs(x - y), 1e-8f + 1e-5f * std::fabs(x)) << "weight t=" << t << " s=" << s;
              }
              for (int64_t k = 0; k < c.K; ++k) ASSERT_EQ(ua[t * c.K + k], ub[t * c.K + k]) << "unmapped t=" << t;
            }
          }
    }
  }
  EXPECT_GT(compared_rows, total_rows * 9 / 10) << "too many ambiguous rows excluded";
  // Stability: all-zero logits and bias give exactly 0, 1, 2, ... (tie-breaking to the lower index).
  std::vector<float> z(64 * 72, 0.0f), zb(72, 0.0f);
  Tensor zh = view(z, TSHMEM_MOE_FLOAT32, {64, 72}), zbh = view(zb, TSHMEM_MOE_FLOAT32, {72});
  Mirror zd(zh, 0), zbd(zbh, 0);
  tshmem_moe_top2_sum_gate_params_t p{};
  p.num_topk = 6, p.routed_scaling_factor = 1.5f, p.num_ep_ranks = 4, p.num_tp_ranks = 2;
  Out gi, gw;
  MOE_OK(tshmem_moe_top2_sum_gate(&zd, &zbd, &p, nullptr, nullptr, nullptr, nullptr, nullptr, &gi, &gw, nullptr));
  const std::vector<int64_t> g = as<int64_t>(gi.t);
  for (int64_t t = 0; t < 64; ++t)
    for (int64_t k = 0; k < 6; ++k) ASSERT_EQ(g[t * 6 + k], k);
}

TEST_F(MoeGpu, CountsUniqueMaskNormalize) {
  uint32_t seed = 1;
  for (const MoeParams &mp : moe_params()) {
    int64_t T = 0;
    std::vector<int64_t> idx = generate_topk_idx(4001, mp.K, mp.local, mp.ranks, seed++, &T);
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {T, mp.K});
    Mirror id(ih, 0);
    const std::string tag =
        "E=" + std::to_string(mp.local) + " R=" + std::to_string(mp.ranks) + " K=" + std::to_string(mp.K);
    Out rc, rf1, rfk;
    MOE_OK(tshmem_moe_group_count(&ih, mp.local, &rc, nullptr));
    MOE_OK(tshmem_moe_aux_fi(&ih, mp.local, 1, &rf1, nullptr));
    MOE_OK(tshmem_moe_aux_fi(&ih, mp.local, mp.K, &rfk, nullptr));
    for (int sms : sms_list()) {
      MOE_OK(tshmem_moe_set_num_sms(sms));
      Out gc, gf1, gfk;
      MOE_OK(tshmem_moe_group_count(&id, mp.local, &gc, nullptr));
      MOE_OK(tshmem_moe_aux_fi(&id, mp.local, 1, &gf1, nullptr));
      MOE_OK(tshmem_moe_aux_fi(&id, mp.local, mp.K, &gfk, nullptr));
      expect_same(rc.t, gc.t, "group_count " + tag);
      expect_same(rf1.t, gf1.t, "aux_fi " + tag);
      expect_same(rfk.t, gfk.t, "aux_fi K " + tag);
    }
    MOE_OK(tshmem_moe_set_num_sms(0));
    // mask_indices_by_tp over the full id range (the spec's own test only reaches ids < local).
    std::vector<int64_t> full(idx.size());
    std::mt19937 rng(seed);
    const int64_t n = mp.local * mp.ranks;
    for (int64_t &v : full) v = static_cast<int64_t>(rng() % static_cast<uint32_t>(n + 1)) - 1;
    Tensor fh = view(full, TSHMEM_MOE_INT64, {T, mp.K});
    Mirror fd(fh, 0);
    for (int64_t tpn : {2, 4, 8})
      for (int64_t tp = 0; tp < tpn; tp += 1 + tpn / 4) {
        Out r, g;
        MOE_OK(tshmem_moe_mask_indices_by_tp(&fh, n, mp.ranks, tp, tpn, &r, nullptr));
        MOE_OK(tshmem_moe_mask_indices_by_tp(&fd, n, mp.ranks, tp, tpn, &g, nullptr));
        expect_same(r.t, g.t, "mask_indices_by_tp " + tag);
      }
    // inplace_unique on group ids: group = topk_idx // (E_local * ranks / G).
    for (int64_t G : {8, 16, 72}) {
      if (n % G) continue;
      std::vector<int64_t> grp(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) grp[i] = idx[i] < 0 ? -1 : idx[i] / (n / G);
      std::vector<int64_t> grp_d = grp;
      Tensor gh = view(grp, TSHMEM_MOE_INT64, {T, mp.K}), gdh = view(grp_d, TSHMEM_MOE_INT64, {T, mp.K});
      Mirror gd(gdh, 0);
      MOE_OK(tshmem_moe_inplace_unique_group_indices(&gh, G, nullptr));
      MOE_OK(tshmem_moe_inplace_unique_group_indices(gd.ptr(), G, nullptr));
      expect_same(gh, gd.d, "inplace_unique " + tag);
    }
    // normalize_weight: rand weights of the same row count, bitwise.
    std::vector<float> w(idx.size());
    for (float &x : w) x = static_cast<float>(rng() % 1000003) / 1000003.0f;
    Tensor wh = view(w, TSHMEM_MOE_FLOAT32, {T, mp.K});
    Mirror wd(wh, 0);
    Out rd, rn, gdn, gn;
    MOE_OK(tshmem_moe_normalize_weight(&wh, &rd, &rn, nullptr));
    MOE_OK(tshmem_moe_normalize_weight(&wd, &gdn, &gn, nullptr));
    expect_same(rd.t, gdn.t, "normalize denominator " + tag);
    expect_same(rn.t, gn.t, "normalize " + tag);
  }
}

// A view of elements [1, 1 + n) of a mirrored buffer: 4 or 8 bytes off 16-byte alignment, so the kernels take
// their element-wise fallbacks.
Tensor shifted(const Tensor &whole, std::initializer_list<int64_t> shape) {
  Tensor v = whole;
  v.data = static_cast<char *>(whole.data) + tshmem_moe_dtype_size(whole.dtype);
  v.ndim = static_cast<int>(shape.size());
  int i = 0;
  for (int64_t s : shape) v.shape[i++] = s;
  for (int d = v.ndim - 1, st = 1; d >= 0; st *= static_cast<int>(v.shape[d]), --d) v.strides[d] = st;
  return v;
}

// mask_indices_by_tp's 16-byte kernel (int64 and int32, a tail shorter than a vector, ids of 2^31 and above
// with the 32-bit transform otherwise) and its element-wise fallback (a misaligned view); normalize_weight's
// compile-time-K kernel (K = 1, 2, 4, 8 with rows aligned to their vector; off = 1 misaligns K = 2, 4, 8), its
// one-thread-per-token kernel (K <= 4), its shared-memory tile kernel (K from 5 to its limit 64, a partial
// last block) and its fallback (K = 65, a misaligned view).
TEST_F(MoeGpu, MaskAndNormalizeVectorPaths) {
  std::mt19937 rng(77);
  for (int64_t count : {1, 3, 1001, 65539}) {
    // n = 2^33 ids over 8192 EP ranks: per_gpu = 2^20 fits the 32-bit transform, ids reach 2^33.
    for (int64_t n : {int64_t{256}, int64_t{1} << 33}) {
      const int64_t ranks = n == 256 ? 64 : 8192;
      std::vector<int64_t> v64(static_cast<size_t>(count + 1));
      for (int64_t &v : v64) v = static_cast<int64_t>(rng() % 1000 == 0 ? -1 : (uint64_t{rng()} << 32 | rng()) % n);
      std::vector<int32_t> v32(v64.size());
      for (size_t i = 0; i < v64.size(); ++i) v32[i] = static_cast<int32_t>(v64[i] % 256);
      Tensor h64 = view(v64, TSHMEM_MOE_INT64, {count + 1}), h32 = view(v32, TSHMEM_MOE_INT32, {count + 1});
      Mirror d64(h64, 0), d32(h32, 0);
      for (int64_t tpn : {1, 2, 8}) {
        const int64_t tp = tpn - 1;
        const std::string tag = "mask count=" + std::to_string(count) + " n=" + std::to_string(n);
        for (int off : {0, 1}) {
          Tensor a64 = off ? shifted(h64, {count}) : view(v64, TSHMEM_MOE_INT64, {count});
          Tensor b64 = off ? shifted(d64.d, {count}) : d64.d;
          b64.shape[0] = count;
          Out r, g;
          MOE_OK(tshmem_moe_mask_indices_by_tp(&a64, n, ranks, tp, tpn, &r, nullptr));
          MOE_OK(tshmem_moe_mask_indices_by_tp(&b64, n, ranks, tp, tpn, &g, nullptr));
          expect_same(r.t, g.t, tag + " int64 off=" + std::to_string(off));
          if (n != 256) continue;
          Tensor a32 = off ? shifted(h32, {count}) : view(v32, TSHMEM_MOE_INT32, {count});
          Tensor b32 = off ? shifted(d32.d, {count}) : d32.d;
          b32.shape[0] = count;
          Out r2, g2;
          MOE_OK(tshmem_moe_mask_indices_by_tp(&a32, n, ranks, tp, tpn, &r2, nullptr));
          MOE_OK(tshmem_moe_mask_indices_by_tp(&b32, n, ranks, tp, tpn, &g2, nullptr));
          expect_same(r2.t, g2.t, tag + " int32 off=" + std::to_string(off));
        }
      }
    }
  }
  for (int64_t K : {1, 2, 3, 4, 5, 8, 9, 64, 65})
    for (int64_t T : {1, 127, 129, 1000}) {
      std::vector<float> w(static_cast<size_t>(T * K + 1));
      for (float &x : w) x = static_cast<float>(rng() % 1000003) / 1000003.0f;
      Tensor wh = view(w, TSHMEM_MOE_FLOAT32, {T * K + 1});
      Mirror wd(wh, 0);
      for (int off : {0, 1}) {
        Tensor a = off ? shifted(wh, {T, K}) : view(w, TSHMEM_MOE_FLOAT32, {T, K});
        Tensor b = shifted(wd.d, {T, K});
        if (!off) b.data = wd.d.data;
        Out rd, rn, gd, gn;
        MOE_OK(tshmem_moe_normalize_weight(&a, &rd, &rn, nullptr));
        MOE_OK(tshmem_moe_normalize_weight(&b, &gd, &gn, nullptr));
        const std::string tag =
            "normalize K=" + std::to_string(K) + " T=" + std::to_string(T) + " off=" + std::to_string(off);
        expect_same(rd.t, gd.t, tag + " denominator");
        expect_same(rn.t, gn.t, tag);
      }
    }
}

// inplace_unique_group_indices over rows longer than its 16-id load batch (K = 40: three batches), many
// duplicates (128 groups) and -1 entries.
TEST_F(MoeGpu, InplaceUniqueLongRows) {
  std::mt19937 rng(55);
  const int64_t T = 1001, K = 40;
  std::vector<int64_t> g(static_cast<size_t>(T * K));
  for (int64_t &v : g) v = static_cast<int64_t>(rng() % 129) - 1;
  std::vector<int64_t> gd_host = g;
  Tensor gh = view(g, TSHMEM_MOE_INT64, {T, K}), gdh = view(gd_host, TSHMEM_MOE_INT64, {T, K});
  Mirror gd(gdh, 0);
  MOE_OK(tshmem_moe_inplace_unique_group_indices(&gh, 128, nullptr));
  MOE_OK(tshmem_moe_inplace_unique_group_indices(gd.ptr(), 128, nullptr));
  expect_same(gh, gd.d, "inplace_unique K=40");
}

// inplace_unique_group_indices' warp-tile kernel (16-byte aligned ids, K <= 32: the last warp's span partial, an
// odd number of ids in it) and its one-thread-per-token fallback (a view 8 bytes off alignment, K = 33), bitwise
// against the CPU reference over the whole buffer (one id past the view stays untouched); an out-of-range id is
// reported on both paths, naming the value.
TEST_F(MoeGpu, InplaceUniqueTilePaths) {
  std::mt19937 rng(91);
  // [T, K] rows starting `off` ids into `whole` (host or device).
  const auto rows = [](const Tensor &whole, int off, int64_t T, int64_t K) {
    const int64_t shape[2] = {T, K};
    return tshmem_moe_tensor_make(static_cast<int64_t *>(whole.data) + off, TSHMEM_MOE_INT64, 2, shape, whole.device);
  };
  for (int64_t K : {1, 2, 3, 9, 32, 33})
    for (int64_t T : {1, 31, 33, 1001})
      for (int off : {0, 1}) {
        const std::string tag =
            "inplace_unique K=" + std::to_string(K) + " T=" + std::to_string(T) + " off=" + std::to_string(off);
        std::vector<int64_t> g(static_cast<size_t>(T * K + 1));
        for (int64_t &v : g) v = static_cast<int64_t>(rng() % 73) - 1;  // 72 groups and -1
        std::vector<int64_t> bad = g;
        bad[static_cast<size_t>(off + T * K / 2)] = 128;  // >= align(72, 64)
        Tensor gh = view(g, TSHMEM_MOE_INT64, {T * K + 1}), badh = view(bad, TSHMEM_MOE_INT64, {T * K + 1});
        Mirror gd(gh, 0), bd(badh, 0);
        Tensor host_rows = rows(gh, off, T, K), dev_rows = rows(gd.d, off, T, K), bad_rows = rows(bd.d, off, T, K);
        MOE_OK(tshmem_moe_inplace_unique_group_indices(&host_rows, 72, nullptr));
        MOE_OK(tshmem_moe_inplace_unique_group_indices(&dev_rows, 72, nullptr));
        expect_same(gh, gd.d, tag);
        EXPECT_EQ(tshmem_moe_inplace_unique_group_indices(&bad_rows, 72, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE) << tag;
        EXPECT_NE(std::string(tshmem_moe_last_error()).find("holds 128"), std::string::npos)
            << tag << ": " << tshmem_moe_last_error();
      }
}

// aux_fi (num_aux_topk 3) and group_count of `id` on the GPU, bitwise against the CPU reference of `ih`, for
// every SM-count override, `reps` calls each (a call that leaves the stream's workspace dirty fails the next).
void expect_counts_on_every_grid(const Tensor &ih, const Mirror &id, int64_t E, int reps, const std::string &tag) {
  Out ref, refc;
  MOE_OK(tshmem_moe_aux_fi(&ih, E, 3, &ref, nullptr));
  MOE_OK(tshmem_moe_group_count(&ih, E, &refc, nullptr));
  for (int sms : sms_list()) {
    MOE_OK(tshmem_moe_set_num_sms(sms));
    for (int rep = 0; rep < reps; ++rep) {
      Out got, gotc;
      MOE_OK(tshmem_moe_aux_fi(&id, E, 3, &got, nullptr));
      MOE_OK(tshmem_moe_group_count(&id, E, &gotc, nullptr));
      expect_same(ref.t, got.t, "aux_fi" + tag + " sms=" + std::to_string(sms));
      expect_same(refc.t, gotc.t, "group_count" + tag + " sms=" + std::to_string(sms));
    }
  }
  MOE_OK(tshmem_moe_set_num_sms(0));
}

// The histogram kernels of group_count and aux_fi: the wide kernel (CountKernelsWide) for n <= 65536 entries
// and <= 1024 bins, one thread block cluster for n <= 32768 entries with more bins (here 12000), the
// cooperative kernels above that; aux_fi's one-barrier kernel (arrival
// counts packed above 23-bit counts: n < 2^23, here up to one bin short of it, most entries in one bin) and
// its two-barrier fallback (n = 2^23 entries; E = 20000 bins, too many for shared memory); over the SM-count
// overrides (one block: the first arrival is the last).
TEST_F(MoeGpu, CountKernels) {
  struct Cfg {
    int64_t T, K, E;
  };
  const Cfg cfgs[] = {{1, 1, 9},
                      {4096, 8, 9},
                      {4097, 8, 9},
                      {4096, 8, 12000},
                      {(int64_t{1} << 20) - 1, 8, 64},
                      {int64_t{1} << 20, 8, 64},
                      {3000, 8, 20000}};
  std::mt19937 rng(91);
  for (const Cfg &c : cfgs) {
    std::vector<int64_t> idx(static_cast<size_t>(c.T * c.K));
    for (int64_t &v : idx) {
      const uint32_t r = static_cast<uint32_t>(rng());
      v = r % 10 < 8 ? 5 : static_cast<int64_t>(r % static_cast<uint32_t>(c.E + 1)) - 1;
    }
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {c.T, c.K});
    Mirror id(ih, 0);
    expect_counts_on_every_grid(
        ih, id, c.E, 1, " T=" + std::to_string(c.T) + " K=" + std::to_string(c.K) + " E=" + std::to_string(c.E));
  }
}

// group_count and aux_fi's wide kernel (n <= 65536 entries, <= 1024 bins, a per-stream workspace of one
// arrivals-and-count word per bin: each bin's last block writes it) against the kernels it sits beside: both sides of
// each threshold (n = 65536 and 65537, 1024 and 1025 bins), n = 0, TileKernels' small shape, a fifth of the ids -1,
// over the SM-count overrides (the workspace must be zero again after every call for the next to be right); calls on
// two streams in flight together (one workspace each); a call on cudaStreamPerThread and one under graph capture (no
// workspace: the cluster kernel), replayed.
TEST_F(MoeGpu, CountKernelsWide) {
  struct Cfg {
    int64_t T, K, E;
  };
  const Cfg cfgs[] = {{0, 2, 9},     {1, 1, 1},       {8131, 2, 9},   {8192, 8, 9},
                      {65537, 1, 9}, {1000, 8, 1024}, {1000, 8, 1025}};
  std::mt19937 rng(92);
  auto make_idx = [&](int64_t n, int64_t E) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t &v : idx) {
      const uint32_t r = static_cast<uint32_t>(rng());
      v = r % 5 == 0 ? -1 : r % 10 < 5 ? E - 1 : static_cast<int64_t>(r % static_cast<uint32_t>(E));
    }
    return idx;
  };
  for (const Cfg &c : cfgs) {
    std::vector<int64_t> idx = make_idx(c.T * c.K, c.E);
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {c.T, c.K});
    Mirror id(ih, 0);
    expect_counts_on_every_grid(
        ih, id, c.E, 2, " T=" + std::to_string(c.T) + " K=" + std::to_string(c.K) + " E=" + std::to_string(c.E));
  }
  // Two streams, calls queued without a sync between them (deferred checks).
  const int64_t E = 9;
  std::vector<int64_t> a = make_idx(16262, E), b = make_idx(30000, E);
  Tensor ah = view(a, TSHMEM_MOE_INT64, {8131, 2}), bh = view(b, TSHMEM_MOE_INT64, {15000, 2});
  Mirror ad(ah, 0), bd(bh, 0);
  Out ra, rb, rfa, rfb;
  MOE_OK(tshmem_moe_group_count(&ah, E, &ra, nullptr));
  MOE_OK(tshmem_moe_group_count(&bh, E, &rb, nullptr));
  MOE_OK(tshmem_moe_aux_fi(&ah, E, 2, &rfa, nullptr));
  MOE_OK(tshmem_moe_aux_fi(&bh, E, 2, &rfb, nullptr));
  cudaStream_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&s2), cudaSuccess);
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_DEFERRED);
  constexpr int kCalls = 16;
  Out ga[kCalls], gb[kCalls], gfa[kCalls], gfb[kCalls];
  for (int i = 0; i < kCalls; ++i) {
    MOE_OK(tshmem_moe_group_count(&ad, E, &ga[i], s1));
    MOE_OK(tshmem_moe_group_count(&bd, E, &gb[i], s2));
    MOE_OK(tshmem_moe_aux_fi(&ad, E, 2, &gfa[i], s1));
    MOE_OK(tshmem_moe_aux_fi(&bd, E, 2, &gfb[i], s2));
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  MOE_OK(tshmem_moe_check_device_errors(0, nullptr));
  for (int i = 0; i < kCalls; ++i) {
    expect_same(ra.t, ga[i].t, "group_count stream 1 call " + std::to_string(i));
    expect_same(rb.t, gb[i].t, "group_count stream 2 call " + std::to_string(i));
    expect_same(rfa.t, gfa[i].t, "aux_fi stream 1 call " + std::to_string(i));
    expect_same(rfb.t, gfb[i].t, "aux_fi stream 2 call " + std::to_string(i));
  }
  // The per-thread default stream (no workspace: the cluster kernel).
  Out gp;
  MOE_OK(tshmem_moe_group_count(&ad, E, &gp, cudaStreamPerThread));
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  expect_same(ra.t, gp.t, "group_count on cudaStreamPerThread");
  // Under capture: a preallocated output, the graph replayed twice.
  std::vector<int32_t> zeros(static_cast<size_t>(E), 0);
  Tensor zh = view(zeros, TSHMEM_MOE_INT32, {E});
  Mirror od(zh, 0);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const tshmem_moe_status_t captured = tshmem_moe_group_count(&ad, E, od.ptr(), s1);
  ASSERT_EQ(cudaStreamEndCapture(s1, &graph), cudaSuccess);
  ASSERT_EQ(captured, TSHMEM_MOE_SUCCESS) << tshmem_moe_last_error();
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s1), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  expect_same(ra.t, od.d, "group_count graph replay");
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_SYNC);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

void free_mapping(tshmem_moe_fused_mapping_t &m) {
  Tensor *all[] = {&m.pos_to_expert, &m.pos_to_token, &m.pos_to_token_topk,    &m.token_topk_to_pos,
                   &m.expert_start,  &m.expert_end,   &m.num_tokens_per_expert};
  for (Tensor *t : all) tshmem_moe_tensor_free(t, nullptr);
}

void expect_same_mapping(const tshmem_moe_fused_mapping_t &a, const tshmem_moe_fused_mapping_t &b,
                         const std::string &tag) {
  expect_same(a.pos_to_expert, b.pos_to_expert, "pos_to_expert " + tag);
  expect_same(a.pos_to_token, b.pos_to_token, "pos_to_token " + tag);
  expect_same(a.pos_to_token_topk, b.pos_to_token_topk, "pos_to_token_topk " + tag);
  expect_same(a.token_topk_to_pos, b.token_topk_to_pos, "token_topk_to_pos " + tag);
  expect_same(a.expert_start, b.expert_start, "expert_start " + tag);
  expect_same(a.expert_end, b.expert_end, "expert_end " + tag);
  expect_same(a.num_tokens_per_expert, b.num_tokens_per_expert, "num_tokens_per_expert " + tag);
}

// The canonical (ascending f) order makes the GPU mapping bitwise equal to the reference, for every SM count.
TEST_F(MoeGpu, GetFusedMapping) {
  uint32_t seed = 100;
  for (const MoeParams &mp : moe_params()) {
    int64_t T = 0;
    std::vector<int64_t> idx = generate_topk_idx(4001, mp.K, mp.local, mp.ranks, seed++, &T);
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {T, mp.K});
    Mirror id(ih, 0);
    for (int64_t align : {64, 128}) {
      tshmem_moe_fused_mapping_t ref{};
      std::vector<int32_t> lr(static_cast<size_t>(mp.local)), lg(static_cast<size_t>(mp.local));
      int32_t fr = 0, fg = 0;
      MOE_OK(tshmem_moe_get_fused_mapping(&ih, mp.local, 0, align, 0, &ref, lr.data(), &fr, nullptr));
      for (int sms : sms_list()) {
        MOE_OK(tshmem_moe_set_num_sms(sms));
        tshmem_moe_fused_mapping_t got{};
        MOE_OK(tshmem_moe_get_fused_mapping(&id, mp.local, 0, align, 0, &got, lg.data(), &fg, nullptr));
        EXPECT_EQ(fg, 1);
        EXPECT_EQ(lr, lg);
        expect_same_mapping(ref, got, "K=" + std::to_string(mp.K) + " align=" + std::to_string(align));
        free_mapping(got);
      }
      // P given: no sync, longer arrays.
      const int64_t P = ref.pos_to_expert.shape[0] + 5;
      tshmem_moe_fused_mapping_t r2{}, g2{};
      MOE_OK(tshmem_moe_get_fused_mapping(&ih, mp.local, P, align, 0, &r2, nullptr, nullptr, nullptr));
      MOE_OK(tshmem_moe_get_fused_mapping(&id, mp.local, P, align, 1, &g2, nullptr, nullptr, nullptr));
      expect_same_mapping(r2, g2, "P given");
      free_mapping(r2);
      free_mapping(g2);
      free_mapping(ref);
      MOE_OK(tshmem_moe_set_num_sms(0));
    }
  }
  // T == 0 and all -1.
  for (int64_t T : {0, 100}) {
    std::vector<int64_t> idx(static_cast<size_t>(T * 4), -1);
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {T, 4});
    Mirror id(ih, 0);
    tshmem_moe_fused_mapping_t r{}, g{};
    MOE_OK(tshmem_moe_get_fused_mapping(&ih, 8, 0, 128, 0, &r, nullptr, nullptr, nullptr));
    MOE_OK(tshmem_moe_get_fused_mapping(&id, 8, 0, 128, 0, &g, nullptr, nullptr, nullptr));
    expect_same_mapping(r, g, "empty");
    free_mapping(r);
    free_mapping(g);
  }
}

// Wide expert counts (several 32-expert scan chunks, 8-warp blocks above E = 682) and slot counts past one
// load batch per warp (few blocks): bitwise equal to the reference for every SM count, with and without P.
TEST_F(MoeGpu, GetFusedMappingWideExperts) {
  uint32_t seed = 7;
  for (int64_t E : {33, 256, 682, 683, 1024}) {
    const int64_t T = 3001, K = 7;
    std::mt19937 rng(seed++);
    std::vector<int64_t> idx(static_cast<size_t>(T * K));
    for (int64_t &v : idx) v = static_cast<int64_t>(rng() % static_cast<uint32_t>(E + E / 4 + 1)) - 1;
    for (int64_t &v : idx) v = v < E ? v : -1;  // about a fifth of the slots skipped
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {T, K});
    Mirror id(ih, 0);
    for (int64_t align : {1, 16, 128}) {
      const std::string tag = "E=" + std::to_string(E) + " align=" + std::to_string(align);
      tshmem_moe_fused_mapping_t ref{};
      MOE_OK(tshmem_moe_get_fused_mapping(&ih, E, 0, align, 0, &ref, nullptr, nullptr, nullptr));
      for (int sms : sms_list()) {
        MOE_OK(tshmem_moe_set_num_sms(sms));
        tshmem_moe_fused_mapping_t got{};
        MOE_OK(tshmem_moe_get_fused_mapping(&id, E, 0, align, 0, &got, nullptr, nullptr, nullptr));
        expect_same_mapping(ref, got, tag + " sms=" + std::to_string(sms));
        free_mapping(got);
      }
      MOE_OK(tshmem_moe_set_num_sms(0));
      const int64_t P = ref.pos_to_expert.shape[0] + 1001;  // a tail of -1 rows shared by the blocks
      tshmem_moe_fused_mapping_t r2{}, g2{};
      MOE_OK(tshmem_moe_get_fused_mapping(&ih, E, P, align, 0, &r2, nullptr, nullptr, nullptr));
      MOE_OK(tshmem_moe_get_fused_mapping(&id, E, P, align, 1, &g2, nullptr, nullptr, nullptr));
      expect_same_mapping(r2, g2, tag + " P given");
      free_mapping(r2);
      free_mapping(g2);
      free_mapping(ref);
    }
  }
}

// The mapping at small and boundary sizes against the CPU reference: n = 255 and 256 (one block and two), TileKernels'
// small shapes, n = 131072 and 131073, T = 34300 K = 9 (the full grid), a rows table of 1024-cell rows (E = 1024,
// n = 4096), about a fifth of the ids -1, P from the sync path and given (a tail), bitwise for every SM count, with
// the rows table in the stream's workspace and (cudaStreamPerThread) in block 0's slots. Up to 48 k slots the
// default SM count takes the cluster kernel (GetFusedMappingCluster); an override of 1 SM takes the cooperative
// kernel from 3073 slots. (A bad id in a later block: GetFusedMappingValueErrors.) (A wide-grid variant for these
// sizes was measured 4-6 % slower than the narrow kernel and removed: docs/moe.md.)
TEST_F(MoeGpu, GetFusedMappingSmallShapes) {
  struct Cfg {
    int64_t T, K, E;
  };
  const Cfg cfgs[] = {{255, 1, 9},   {128, 2, 9},    {8131, 2, 9},  {8881, 2, 32}, {18477, 6, 9},
                      {16384, 8, 9}, {131073, 1, 9}, {34300, 9, 4}, {512, 8, 1024}};
  uint32_t seed = 31;
  for (const Cfg &c : cfgs) {
    std::mt19937 rng(seed++);
    std::vector<int64_t> idx(static_cast<size_t>(c.T * c.K));
    for (int64_t &v : idx) v = static_cast<int64_t>(rng() % static_cast<uint32_t>(c.E + c.E / 4 + 1)) - 1;
    for (int64_t &v : idx) v = v < c.E ? v : -1;
    Tensor ih = view(idx, TSHMEM_MOE_INT64, {c.T, c.K});
    Mirror id(ih, 0);
    for (int64_t align : {1, 128}) {
      const std::string tag = "T=" + std::to_string(c.T) + " K=" + std::to_string(c.K) + " E=" + std::to_string(c.E) +
                              " align=" + std::to_string(align);
      tshmem_moe_fused_mapping_t ref{};
      MOE_OK(tshmem_moe_get_fused_mapping(&ih, c.E, 0, align, 0, &ref, nullptr, nullptr, nullptr));
      const int64_t P = ref.pos_to_expert.shape[0] + 333;
      tshmem_moe_fused_mapping_t r2{};
      MOE_OK(tshmem_moe_get_fused_mapping(&ih, c.E, P, align, 0, &r2, nullptr, nullptr, nullptr));
      for (int sms : sms_list()) {
        MOE_OK(tshmem_moe_set_num_sms(sms));
        tshmem_moe_fused_mapping_t got{}, g2{};
        MOE_OK(tshmem_moe_get_fused_mapping(&id, c.E, 0, align, 0, &got, nullptr, nullptr, nullptr));
        expect_same_mapping(ref, got, tag + " sms=" + std::to_string(sms));
        MOE_OK(tshmem_moe_get_fused_mapping(&id, c.E, P, align, 1, &g2, nullptr, nullptr, nullptr));
        expect_same_mapping(r2, g2, tag + " P given sms=" + std::to_string(sms));
        free_mapping(got);
        free_mapping(g2);
      }
      MOE_OK(tshmem_moe_set_num_sms(0));
      // cudaStreamPerThread has no stream workspace: the rows table goes to block 0's slots instead.
      tshmem_moe_fused_mapping_t pt{};
      MOE_OK(tshmem_moe_get_fused_mapping(&id, c.E, 0, align, 0, &pt, nullptr, nullptr, cudaStreamPerThread));
      expect_same_mapping(ref, pt, tag + " on cudaStreamPerThread");
      free_mapping(pt);
      free_mapping(r2);
      free_mapping(ref);
    }
  }
}

// The mapping's cluster kernel (n <= blocks x 1024 threads x 3 slots, one cluster of up to 16 blocks, no more blocks
// than the SM-count override) against the CPU reference, bitwise, beside the cooperative kernel it hands over to:
// n = 0 and 1; n = 3072 and 3073 (one block's reach: with the override at 1, the cluster of one block, then the
// cooperative kernel); n = 24576 and 24580 (8 blocks' reach, where a cluster of 16 cannot be resident); n = 49152
// and 49156 (16 blocks' reach); TileKernels' small shapes; E = 1 and E = 1024 (shared memory past 48 KiB) and 33
// (two warps of experts); a fifth of the ids -1, all -1, every slot to one expert; alignment 1, 7 and 128; P from
// the sync path and given (a tail of -1 rows); SM-count overrides 1, 2, 4, 8, 12 and the device's.
TEST_F(MoeGpu, GetFusedMappingCluster) {
  struct Cfg {
    int64_t T, K, E;
  };
  const Cfg cfgs[] = {{0, 2, 9},     {1, 1, 9},     {3072, 1, 9},  {3073, 1, 9},   {6144, 4, 9},
                      {6145, 4, 9},  {12288, 4, 9}, {12289, 4, 9}, {8131, 2, 9},   {8881, 2, 32},
                      {10003, 2, 4}, {500, 3, 1},   {600, 7, 33},  {1000, 8, 1024}};
  int dev_sms = 0;
  MOE_OK(tshmem_moe_get_device_num_sms(0, &dev_sms));
  std::vector<int> sms_values;
  for (int v : {1, 2, 4, 8, 12, dev_sms})
    if (v <= dev_sms) sms_values.push_back(v);
  enum Ids { kRandom, kAllSkipped, kOneExpert };
  uint32_t seed = 57;
  for (const Cfg &c : cfgs)
    for (Ids ids : {kRandom, kAllSkipped, kOneExpert}) {
      if (ids != kRandom && c.T != 8131 && c.T != 3073 && c.E != 1024) continue;
      std::mt19937 rng(seed++);
      std::vector<int64_t> idx(static_cast<size_t>(c.T * c.K));
      for (int64_t &v : idx) {
        const int64_t r = static_cast<int64_t>(rng() % static_cast<uint32_t>(c.E + c.E / 4 + 1)) - 1;
        v = ids == kAllSkipped ? -1 : ids == kOneExpert ? c.E - 1 : r < c.E ? r : -1;
      }
      Tensor ih = view(idx, TSHMEM_MOE_INT64, {c.T, c.K});
      Mirror id(ih, 0);
      for (int64_t align : {1, 7, 128}) {
        const std::string tag = "T=" + std::to_string(c.T) + " K=" + std::to_string(c.K) + " E=" + std::to_string(c.E) +
                                " ids=" + std::to_string(static_cast<int>(ids)) + " align=" + std::to_string(align);
        tshmem_moe_fused_mapping_t ref{};
        MOE_OK(tshmem_moe_get_fused_mapping(&ih, c.E, 0, align, 0, &ref, nullptr, nullptr, nullptr));
        const int64_t P = ref.pos_to_expert.shape[0] + 1001;
        tshmem_moe_fused_mapping_t r2{};
        MOE_OK(tshmem_moe_get_fused_mapping(&ih, c.E, P, align, 0, &r2, nullptr, nullptr, nullptr));
        for (int sms : sms_values) {
          MOE_OK(tshmem_moe_set_num_sms(sms));
          tshmem_moe_fused_mapping_t got{}, g2{};
          MOE_OK(tshmem_moe_get_fused_mapping(&id, c.E, 0, align, 0, &got, nullptr, nullptr, nullptr));
          expect_same_mapping(ref, got, tag + " sms=" + std::to_string(sms));
          MOE_OK(tshmem_moe_get_fused_mapping(&id, c.E, P, align, 1, &g2, nullptr, nullptr, nullptr));
          expect_same_mapping(r2, g2, tag + " P given sms=" + std::to_string(sms));
          free_mapping(got);
          free_mapping(g2);
        }
        MOE_OK(tshmem_moe_set_num_sms(0));
        free_mapping(r2);
        free_mapping(ref);
      }
    }
}

// The cluster kernel's reports, as the cooperative kernel's: a bad id in a later block of the cluster (and in the
// one block of a cluster of one), a P below the aligned total; each followed by a clean call. Then the paths that have
// no stream workspace: cudaStreamPerThread, and a capture with preallocated outputs (filled with garbage first)
// replayed twice on another stream.
TEST_F(MoeGpu, GetFusedMappingClusterErrorsAndStreams) {
  const int64_t T = 8131, K = 2, E = 9;
  std::vector<int64_t> idx(static_cast<size_t>(T * K));
  std::mt19937 rng(77);
  for (int64_t &v : idx) v = static_cast<int64_t>(rng() % 10) - 1;
  Tensor ih = view(idx, TSHMEM_MOE_INT64, {T, K});
  struct Bad {
    int64_t pos, value;
    int sms;  // 0: the device's
  };
  for (const Bad bad : {Bad{15000, E + 3, 0}, Bad{15001, -2, 0}, Bad{3000, E, 1}}) {
    std::vector<int64_t> b = idx;
    b[static_cast<size_t>(bad.pos)] = bad.value;
    Tensor bh = view(b, TSHMEM_MOE_INT64, {bad.sms == 1 ? 1536 : T, K});  // n = 3072 with one block
    Mirror bd(bh, 0);
    MOE_OK(tshmem_moe_set_num_sms(bad.sms));
    tshmem_moe_fused_mapping_t m{};
    EXPECT_EQ(tshmem_moe_get_fused_mapping(&bd, E, 0, 128, 0, &m, nullptr, nullptr, nullptr),
              TSHMEM_MOE_ERR_INVALID_VALUE);
    const std::string want =
        "'topk_idx' holds " + std::to_string(bad.value) + " at flat position " + std::to_string(bad.pos);
    EXPECT_NE(last().find(want), std::string::npos) << last();
    MOE_OK(tshmem_moe_set_num_sms(0));
  }
  Mirror id(ih, 0);
  tshmem_moe_fused_mapping_t small{};
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&id, E, 1000, 128, 1, &small, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(last().find("num_expanded_tokens"), std::string::npos) << last();
  free_mapping(small);
  tshmem_moe_fused_mapping_t ref{}, good{};
  MOE_OK(tshmem_moe_get_fused_mapping(&ih, E, 0, 128, 0, &ref, nullptr, nullptr, nullptr));
  MOE_OK(tshmem_moe_get_fused_mapping(&id, E, 0, 128, 0, &good, nullptr, nullptr, nullptr));
  expect_same_mapping(ref, good, "after the errors");
  free_mapping(good);
  // cudaStreamPerThread.
  tshmem_moe_fused_mapping_t pt{};
  MOE_OK(tshmem_moe_get_fused_mapping(&id, E, 0, 128, 0, &pt, nullptr, nullptr, cudaStreamPerThread));
  expect_same_mapping(ref, pt, "on cudaStreamPerThread");
  free_mapping(pt);
  // Graph capture: P given, preallocated outputs, deferred checks (a synchronising check cannot be captured).
  const int64_t P = ref.pos_to_expert.shape[0] + 333;
  tshmem_moe_fused_mapping_t r2{};
  MOE_OK(tshmem_moe_get_fused_mapping(&ih, E, P, 128, 0, &r2, nullptr, nullptr, nullptr));
  std::vector<int32_t> rows(static_cast<size_t>(P), 0x7f7f7f7f), slots(static_cast<size_t>(T * K), 0x7f7f7f7f),
      experts(static_cast<size_t>(E), 0x7f7f7f7f);
  Tensor rows_h = view(rows, TSHMEM_MOE_INT32, {P}), slots_h = view(slots, TSHMEM_MOE_INT32, {T, K}),
         experts_h = view(experts, TSHMEM_MOE_INT32, {E});
  Mirror o1(rows_h, 0), o2(rows_h, 0), o3(rows_h, 0), o4(slots_h, 0), o5(experts_h, 0), o6(experts_h, 0),
      o7(experts_h, 0);
  tshmem_moe_fused_mapping_t g{*o1.ptr(), *o2.ptr(), *o3.ptr(), *o4.ptr(), *o5.ptr(), *o6.ptr(), *o7.ptr()};
  cudaStream_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&s2), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_DEFERRED);
  ASSERT_EQ(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const tshmem_moe_status_t captured = tshmem_moe_get_fused_mapping(&id, E, P, 128, 1, &g, nullptr, nullptr, s1);
  ASSERT_EQ(cudaStreamEndCapture(s1, &graph), cudaSuccess);
  ASSERT_EQ(captured, TSHMEM_MOE_SUCCESS) << tshmem_moe_last_error();
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaGraphLaunch(exec, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  MOE_OK(tshmem_moe_check_device_errors(0, nullptr));
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_SYNC);
  expect_same_mapping(r2, g, "graph replay");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  free_mapping(r2);
  free_mapping(ref);
}

// On the GPU too, a value outside [-1, E) and a P below the aligned total are reported, naming the tensor and
// the value, with every write in bounds; the next call on the device is clean.
TEST_F(MoeGpu, GetFusedMappingValueErrors) {
  const int64_t T = 20000, K = 8, E = 16;
  std::vector<int64_t> idx(static_cast<size_t>(T * K));
  std::mt19937 rng(11);
  for (int64_t &v : idx) v = static_cast<int64_t>(rng() % 17) - 1;
  idx[123457] = E + 3;  // in a block other than the first at the default grid
  Tensor ih = view(idx, TSHMEM_MOE_INT64, {T, K});
  Mirror id(ih, 0);
  tshmem_moe_fused_mapping_t m{};
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&id, E, 0, 64, 0, &m, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(last().find("'topk_idx' holds 19 at flat position 123457"), std::string::npos) << last();
  idx[123457] = -1;
  Mirror ok(ih, 0);
  tshmem_moe_fused_mapping_t small{};
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&ok, E, 1000, 64, 1, &small, nullptr, nullptr, nullptr),
            TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(last().find("num_expanded_tokens"), std::string::npos) << last();
  free_mapping(small);
  tshmem_moe_fused_mapping_t good{};
  MOE_OK(tshmem_moe_get_fused_mapping(&ok, E, 0, 64, 0, &good, nullptr, nullptr, nullptr));
  free_mapping(good);
}

struct Mapping {
  std::vector<int32_t> pos, pte;
  int64_t P = 0;
};
Mapping host_mapping(const std::vector<int64_t> &idx, int64_t T, int64_t K, int64_t E, int64_t align) {
  std::vector<int64_t> copy = idx;
  Tensor ih = view(copy, TSHMEM_MOE_INT64, {T, K});
  tshmem_moe_fused_mapping_t m{};
  EXPECT_EQ(tshmem_moe_get_fused_mapping(&ih, E, 0, align, 0, &m, nullptr, nullptr, nullptr), TSHMEM_MOE_SUCCESS);
  Mapping r;
  r.pos = as<int32_t>(m.token_topk_to_pos);
  r.pte = as<int32_t>(m.pos_to_expert);
  r.P = m.pos_to_expert.shape[0];
  free_mapping(m);
  return r;
}

TEST_F(MoeGpu, ExpandToFused) {
  const MoeParams cfgs[] = {{9, 8, 2}, {32, 8, 6}, {4, 64, 9}};
  uint32_t seed = 200;
  for (const MoeParams &mp : cfgs) {
    int64_t T = 0;
    std::vector<int64_t> idx = generate_topk_idx(4001, mp.K, mp.local, mp.ranks, seed++, &T);
    Mapping m = host_mapping(idx, T, mp.K, mp.local, 16);
    Tensor ph = view(m.pos, TSHMEM_MOE_INT32, {T, mp.K}), eh = view(m.pte, TSHMEM_MOE_INT32, {m.P});
    Mirror pd(ph, 0), ed(eh, 0);
    for (int64_t H : {576, 2048, 7168}) {
      if (mp.K == 9 && H != 576) continue;  // keeps the CPU reference time modest
      std::vector<uint16_t> x(static_cast<size_t>(T * H));
      std::mt19937 rng(static_cast<uint32_t>(H));
      for (uint16_t &v : x) v = static_cast<uint16_t>(rng());
      Tensor xh = view(x, TSHMEM_MOE_BFLOAT16, {T, H});
      Mirror xd(xh, 0);
      Out r, g;
      MOE_OK(tshmem_moe_expand_to_fused(&xh, &ph, &eh, &r, nullptr));
      MOE_OK(tshmem_moe_expand_to_fused(&xd, &pd, &ed, &g, nullptr));
      expect_same(r.t, g.t, "expand H=" + std::to_string(H));
      // With sf: fp8 activations, float32 row-major sf and packed int32 column-major sf.
      for (int64_t npc : {32, 128}) {
        std::vector<uint8_t> x8(static_cast<size_t>(T * H));
        for (uint8_t &v : x8) v = static_cast<uint8_t>(rng());
        Tensor x8h = view(x8, TSHMEM_MOE_FLOAT8_E4M3, {T, H});
        Mirror x8d(x8h, 0);
        const int64_t hsf = (H + npc - 1) / npc, hsfp = (hsf + 3) / 4;
        std::vector<float> sf(static_cast<size_t>(T * hsf));
        for (float &v : sf) v = std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
        std::vector<int32_t> sfp(static_cast<size_t>(T * hsfp));
        for (int32_t &v : sfp) v = static_cast<int32_t>(rng());
        Tensor sfh = view(sf, TSHMEM_MOE_FLOAT32, {T, hsf}), sfph = view(sfp, TSHMEM_MOE_INT32, {T, hsfp});
        Mirror sfd(sfh, 0), sfpd(sfph, 0);
        Out r1, s1, g1, t1, r2, s2, g2, t2;
        MOE_OK(tshmem_moe_expand_to_fused_with_sf(&x8h, &sfh, npc, &ph, &eh, 0, &r1, &s1, nullptr));
        MOE_OK(tshmem_moe_expand_to_fused_with_sf(&x8d, &sfd, npc, &pd, &ed, 0, &g1, &t1, nullptr));
        expect_same(r1.t, g1.t, "expand_with_sf x");
        expect_same(s1.t, t1.t, "expand_with_sf sf row-major");
        MOE_OK(tshmem_moe_expand_to_fused_with_sf(&x8h, &sfph, npc, &ph, &eh, 1, &r2, &s2, nullptr));
        MOE_OK(tshmem_moe_expand_to_fused_with_sf(&x8d, &sfpd, npc, &pd, &ed, 1, &g2, &t2, nullptr));
        expect_same(r2.t, g2.t, "expand_with_sf x packed");
        expect_same(s2.t, t2.t, "expand_with_sf sf column-major");
      }
    }
  }
}

// expand_to_fused's kernel paths: K = 40 (two passes of 32 destinations), rows longer than the 8 vectors per
// thread loaded before the positions (H = 8200 bf16: 1025 vectors of 16 bytes), 4-byte and 1-byte vectors
// (H = 6 bf16, H = 7 fp8), and sf rows wider than a block (H = 8200, npc 32: 257 sf words).
TEST_F(MoeGpu, ExpandToFusedPaths) {
  struct Cfg {
    int64_t K, local, H;
    tshmem_moe_dtype_t dtype;
  };
  const Cfg cfgs[] = {{40, 64, 8200, TSHMEM_MOE_BFLOAT16},
                      {6, 32, 8200, TSHMEM_MOE_BFLOAT16},
                      {6, 32, 6, TSHMEM_MOE_BFLOAT16},
                      {40, 64, 7, TSHMEM_MOE_FLOAT8_E4M3},
                      {6, 32, 8200, TSHMEM_MOE_FLOAT8_E4M3}};
  uint32_t seed = 500;
  for (const Cfg &c : cfgs) {
    int64_t T = 0;
    std::vector<int64_t> idx = generate_topk_idx(300, c.K, c.local, 2, seed++, &T);
    Mapping m = host_mapping(idx, T, c.K, c.local, 16);
    Tensor ph = view(m.pos, TSHMEM_MOE_INT32, {T, c.K}), eh = view(m.pte, TSHMEM_MOE_INT32, {m.P});
    Mirror pd(ph, 0), ed(eh, 0);
    const std::string tag = "expand K=" + std::to_string(c.K) + " H=" + std::to_string(c.H);
    std::mt19937 rng(seed);
    if (c.dtype == TSHMEM_MOE_BFLOAT16) {
      std::vector<uint16_t> x(static_cast<size_t>(T * c.H));
      for (uint16_t &v : x) v = static_cast<uint16_t>(rng());
      Tensor xh = view(x, TSHMEM_MOE_BFLOAT16, {T, c.H});
      Mirror xd(xh, 0);
      Out r, g;
      MOE_OK(tshmem_moe_expand_to_fused(&xh, &ph, &eh, &r, nullptr));
      MOE_OK(tshmem_moe_expand_to_fused(&xd, &pd, &ed, &g, nullptr));
      expect_same(r.t, g.t, tag);
      continue;
    }
    std::vector<uint8_t> x8(static_cast<size_t>(T * c.H));
    for (uint8_t &v : x8) v = static_cast<uint8_t>(rng());
    Tensor x8h = view(x8, TSHMEM_MOE_FLOAT8_E4M3, {T, c.H});
    Mirror x8d(x8h, 0);
    const int64_t npc = 32, hsf = (c.H + npc - 1) / npc;
    std::vector<float> sf(static_cast<size_t>(T * hsf));
    for (float &v : sf) v = std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10);
    Tensor sfh = view(sf, TSHMEM_MOE_FLOAT32, {T, hsf});
    Mirror sfd(sfh, 0);
    Out r1, s1, g1, t1;
    MOE_OK(tshmem_moe_expand_to_fused_with_sf(&x8h, &sfh, npc, &ph, &eh, 0, &r1, &s1, nullptr));
    MOE_OK(tshmem_moe_expand_to_fused_with_sf(&x8d, &sfd, npc, &pd, &ed, 0, &g1, &t1, nullptr));
    expect_same(r1.t, g1.t, tag + " with_sf x");
    expect_same(s1.t, t1.t, tag + " with_sf sf");
  }
  // T == 0: only padding blocks run (P = 300 rows, all padding: three blocks of 128 rows, the last partial).
  std::vector<uint16_t> x0;
  std::vector<int32_t> pos0, pte0(300, -1);
  Tensor xh = view(x0, TSHMEM_MOE_BFLOAT16, {0, 2048}), ph = view(pos0, TSHMEM_MOE_INT32, {0, 6});
  Tensor eh = view(pte0, TSHMEM_MOE_INT32, {300});
  Mirror xd(xh, 0), pd(ph, 0), ed(eh, 0);
  Out r, g;
  MOE_OK(tshmem_moe_expand_to_fused(&xh, &ph, &eh, &r, nullptr));
  MOE_OK(tshmem_moe_expand_to_fused(&xd, &pd, &ed, &g, nullptr));
  expect_same(r.t, g.t, "expand T=0");
}

TEST_F(MoeGpu, ReduceFused) {
  struct Cfg {
    MoeParams mp;
    int64_t H;
  };
  const Cfg cfgs[] = {{{9, 8, 2}, 7168}, {{32, 8, 6}, 2048}, {{4, 64, 9}, 256}};
  uint32_t seed = 300;
  for (const Cfg &c : cfgs) {
    int64_t T = 0;
    std::vector<int64_t> idx = generate_topk_idx(4001, c.mp.K, c.mp.local, c.mp.ranks, seed++, &T);
    Mapping m = host_mapping(idx, T, c.mp.K, c.mp.local, 1);
    const int64_t P = m.P, H = c.H, K = c.mp.K;
    Tensor ph = view(m.pos, TSHMEM_MOE_INT32, {T, K});
    Mirror pd(ph, 0);
    std::vector<float> xf = randn(static_cast<size_t>(P * H), seed), w(static_cast<size_t>(T * K));
    std::vector<float> xsf = randn(static_cast<size_t>(P), seed + 1), sf = {-1.7f};
    std::mt19937 rng(seed);
    for (float &v : w) v = static_cast<float>(rng() % 65536) / 65536.0f;
    std::vector<uint16_t> xb(xf.size());
    for (size_t i = 0; i < xf.size(); ++i) {  // bf16 by truncation: any bit pattern is a valid input
      uint32_t u;
      std::memcpy(&u, &xf[i], 4);
      xb[i] = static_cast<uint16_t>(u >> 16);
    }
    Tensor xfh = view(xf, TSHMEM_MOE_FLOAT32, {P, H}), xbh = view(xb, TSHMEM_MOE_BFLOAT16, {P, H});
    Tensor wh = view(w, TSHMEM_MOE_FLOAT32, {T, K}), xsfh = view(xsf, TSHMEM_MOE_FLOAT32, {P});
    Tensor sfh = view(sf, TSHMEM_MOE_FLOAT32, {1});
    Mirror xfd(xfh, 0), xbd(xbh, 0), wd(wh, 0), xsfd(xsfh, 0), sfd(sfh, 0);
    for (int bf : {0, 1})
      for (int fp8 : {0, 1})
        for (int with_w : {0, 1})
          for (int with_sf : {0, 1}) {
            Out r, g;
            MOE_OK(tshmem_moe_reduce_fused(bf ? &xbh : &xfh, with_sf ? &xsfh : nullptr, with_w ? &wh : nullptr, &ph,
                                           fp8 ? "e4m3" : "", fp8 ? &sfh : nullptr, &r, nullptr));
            MOE_OK(tshmem_moe_reduce_fused(bf ? &xbd : &xfd, with_sf ? &xsfd : nullptr, with_w ? &wd : nullptr, &pd,
                                           fp8 ? "e4m3" : "", fp8 ? &sfd : nullptr, &g, nullptr));
            expect_same(r.t, g.t,
                        "reduce H=" + std::to_string(H) + " bf16=" + std::to_string(bf) + " fp8=" +
                            std::to_string(fp8) + " w=" + std::to_string(with_w) + " xsf=" + std::to_string(with_sf));
          }
  }
}

// The reduce kernel picks its pass by the token's number of valid slots m (0, 1, 2-4, 5 and more; fp32: 0-1,
// 2 and more) and compacts slots per 32: token t has m = t % (K + 1) valid slots at scattered slot indices,
// for K = 9 and K = 40, and H whose chunk count is not a multiple of the pass width (288 chunks at H = 2304:
// 2.25 per thread) or below a block (32 chunks at H = 256, one warp).
TEST_F(MoeGpu, ReduceFusedEveryValidSlotCount) {
  uint32_t seed = 400;
  for (int64_t K : {9, 40})
    for (int64_t H : {256, 2304, 7168}) {
      if (K == 40 && H == 7168) continue;  // keeps the CPU reference time modest
      const int64_t T = 3 * (K + 1) + 5, P = 97;
      std::mt19937 rng(seed++);
      std::vector<int32_t> pos(static_cast<size_t>(T * K), -1);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<int64_t> slots(static_cast<size_t>(K));
        for (int64_t k = 0; k < K; ++k) slots[static_cast<size_t>(k)] = k;
        std::shuffle(slots.begin(), slots.end(), rng);
        for (int64_t i = 0; i < t % (K + 1); ++i)
          pos[static_cast<size_t>(t * K + slots[static_cast<size_t>(i)])] = static_cast<int32_t>(rng() % P);
      }
      std::vector<float> xf = randn(static_cast<size_t>(P * H), seed), w(static_cast<size_t>(T * K));
      std::vector<float> xsf = randn(static_cast<size_t>(P), seed + 1), sf = {0.75f};
      for (float &v : w) v = static_cast<float>(rng() % 65536) / 65536.0f;
      std::vector<uint16_t> xb(xf.size());
      for (size_t i = 0; i < xf.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &xf[i], 4);
        xb[i] = static_cast<uint16_t>(u >> 16);
      }
      Tensor ph = view(pos, TSHMEM_MOE_INT32, {T, K}), xfh = view(xf, TSHMEM_MOE_FLOAT32, {P, H});
      Tensor xbh = view(xb, TSHMEM_MOE_BFLOAT16, {P, H}), wh = view(w, TSHMEM_MOE_FLOAT32, {T, K});
      Tensor xsfh = view(xsf, TSHMEM_MOE_FLOAT32, {P}), sfh = view(sf, TSHMEM_MOE_FLOAT32, {1});
      Mirror pd(ph, 0), xfd(xfh, 0), xbd(xbh, 0), wd(wh, 0), xsfd(xsfh, 0), sfd(sfh, 0);
      for (int bf : {0, 1})
        for (int fp8 : {0, 1}) {
          Out r, g;
          MOE_OK(tshmem_moe_reduce_fused(bf ? &xbh : &xfh, &xsfh, &wh, &ph, fp8 ? "e4m3" : "", fp8 ? &sfh : nullptr, &r,
                                         nullptr));
          MOE_OK(tshmem_moe_reduce_fused(bf ? &xbd : &xfd, &xsfd, &wd, &pd, fp8 ? "e4m3" : "", fp8 ? &sfd : nullptr, &g,
                                         nullptr));
          expect_same(r.t, g.t,
                      "reduce K=" + std::to_string(K) + " H=" + std::to_string(H) + " bf16=" + std::to_string(bf) +
                          " fp8=" + std::to_string(fp8));
        }
    }
}

TEST_F(MoeGpu, ValueErrorsAreReportedNotUndefined) {
  std::vector<int64_t> idx = {0, 1, 5, -1};
  Tensor ih = view(idx, TSHMEM_MOE_INT64, {2, 2});
  Mirror id(ih, 0);
  Out c;
  EXPECT_EQ(tshmem_moe_group_count(&id, 4, &c, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE);
  EXPECT_NE(std::string(tshmem_moe_last_error()).find("holds 5"), std::string::npos) << tshmem_moe_last_error();
  // Deferred mode: the call stays asynchronous; the violation is reported by check_device_errors, once.
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_DEFERRED);
  Out c2;
  MOE_OK(tshmem_moe_group_count(&id, 4, &c2, nullptr));
  EXPECT_EQ(tshmem_moe_check_device_errors(0, nullptr), TSHMEM_MOE_ERR_INVALID_VALUE);
  MOE_OK(tshmem_moe_check_device_errors(0, nullptr));
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_SYNC);
  // The valid entries were still counted.
  EXPECT_EQ(as<int32_t>(c2.t), (std::vector<int32_t>{1, 1, 0, 0}));
  // An SM override beyond the device is refused where it is used, naming the device.
  int sms = 0;
  MOE_OK(tshmem_moe_get_device_num_sms(0, &sms));
  MOE_OK(tshmem_moe_set_num_sms(sms + 1));
  Out c3;
  std::vector<int64_t> ok = {0, 1};
  Tensor okh = view(ok, TSHMEM_MOE_INT64, {1, 2});
  Mirror okd(okh, 0);
  EXPECT_EQ(tshmem_moe_group_count(&okd, 4, &c3, nullptr), TSHMEM_MOE_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tshmem_moe_last_error()).find("cuda:0"), std::string::npos) << tshmem_moe_last_error();
}

}  // namespace
