// tshmem_moe_bench: each MoE kernel at the spec's benchmark shapes (T = 8001 for the gates, H = 7168 bf16,
// K = 6 for expand/reduce), reporting GB/s by the spec's byte counts and the fraction of the device-to-device
// copy bandwidth measured in the same run, plus an empty-kernel launch floor.
//   tshmem_moe_bench [--device N] [--iters N] [--json FILE]
// Without a CUDA device it prints a skip message and exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "tshmem/moe.h"

namespace {

using Tensor = tshmem_moe_tensor_t;

#define CHECK_MOE(expr)                                                                           \
  do {                                                                                            \
    tshmem_moe_status_t s_ = (expr);                                                              \
    if (s_ != TSHMEM_MOE_SUCCESS) {                                                               \
      std::fprintf(stderr, "%s failed: %s\n", #expr, tshmem_moe_last_error());                    \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define CHECK_CUDA(expr)                                                                          \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(e_));                     \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

int g_dev = 0, g_iters = 50;
std::vector<void*> g_allocs;

// A device tensor (uninitialised unless `host` is given), freed at exit.
Tensor dev_tensor(tshmem_moe_dtype_t dt, std::vector<int64_t> shape, const void* host = nullptr) {
  Tensor t = tshmem_moe_tensor_make(nullptr, dt, static_cast<int32_t>(shape.size()), shape.data(), g_dev);
  const size_t bytes = static_cast<size_t>(tshmem_moe_tensor_numel(&t)) * tshmem_moe_dtype_size(dt);
  if (bytes) {
    CHECK_CUDA(cudaMalloc(&t.data, bytes));
    g_allocs.push_back(t.data);
    if (host)
      CHECK_CUDA(cudaMemcpy(t.data, host, bytes, cudaMemcpyHostToDevice));
    else
      CHECK_CUDA(cudaMemset(t.data, 0, bytes));
  }
  return t;
}

double nbytes(const Tensor& t) { return static_cast<double>(tshmem_moe_tensor_numel(&t) * tshmem_moe_dtype_size(t.dtype)); }

// Mean time of one call in microseconds, after warm-up, by CUDA events around `iters` back-to-back calls.
double time_us(const std::function<void()>& fn, int iters) {
  for (int i = 0; i < 3; ++i) fn();
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  CHECK_CUDA(cudaEventRecord(a, nullptr));
  for (int i = 0; i < iters; ++i) fn();
  CHECK_CUDA(cudaEventRecord(b, nullptr));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1e3 * ms / iters;
}

struct Row {
  std::string kernel, shape;
  double us, bytes;
};

std::vector<int64_t> make_topk(int64_t T, int64_t K, int64_t E, bool with_minus1, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(T * K));
  std::vector<int64_t> perm(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) perm[e] = e;
    for (int64_t k = 0; k < K; ++k) {
      std::swap(perm[k], perm[k + static_cast<int64_t>(rng() % static_cast<uint32_t>(E - k))]);
      v[t * K + k] = (with_minus1 && rng() % 4 == 0) ? -1 : perm[k];
    }
  }
  return v;
}

}  // namespace

__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) g_dev = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) g_iters = std::atoi(argv[++i]);
    else {
      std::printf("usage: %s [--device N] [--iters N] [--json FILE]\n", argv[0]);
      return 0;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev <= g_dev) {
    std::printf("tshmem_moe_bench: SKIPPED: no CUDA device %d on this machine (found %d)\n", g_dev, ndev);
    return 0;
  }
  CHECK_CUDA(cudaSetDevice(g_dev));
  tshmem_moe_set_check_mode(TSHMEM_MOE_CHECK_DEFERRED);  // no per-call sync; checked once at the end
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, g_dev));

  // Roofline: device-to-device copy of 1 GiB, counting bytes read plus written.
  const size_t copy_bytes = size_t(1) << 30;
  void *ca = nullptr, *cb = nullptr;
  CHECK_CUDA(cudaMalloc(&ca, copy_bytes));
  CHECK_CUDA(cudaMalloc(&cb, copy_bytes));
  CHECK_CUDA(cudaMemset(ca, 1, copy_bytes));
  const double copy_us = time_us([&] { cudaMemcpyAsync(cb, ca, copy_bytes, cudaMemcpyDeviceToDevice, nullptr); }, 10);
  const double copy_gbs = 2.0 * copy_bytes / copy_us / 1e3;
  cudaFree(ca);
  cudaFree(cb);
  const double floor_us = time_us([] { empty_kernel<<<1, 32>>>(); }, 1000);

  std::vector<Row> rows;
  auto bench = [&](const std::string& k, const std::string& shape, double bytes, const std::function<void()>& fn) {
    rows.push_back({k, shape, time_us(fn, g_iters), bytes});
  };
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;

  // ---- gates at T = 8001 ----
  const int64_t T = 8001;
  {
    for (auto ek : {std::pair<int64_t, int64_t>{256, 8}, {72, 6}}) {
      const int64_t E = ek.first, K = ek.second;
      std::vector<float> s(static_cast<size_t>(T * E));
      for (float& v : s) v = nd(rng);
      Tensor st = dev_tensor(TSHMEM_MOE_FLOAT32, {T, E}, s.data());
      Tensor out = dev_tensor(TSHMEM_MOE_INT64, {T, K});
      bench("topk_gate", "T=8001 E=" + std::to_string(E) + " K=" + std::to_string(K), nbytes(st) + nbytes(out),
            [&] { CHECK_MOE(tshmem_moe_topk_gate(&st, K, &out, nullptr)); });
    }
    const int64_t E = 256, G = 8;
    std::vector<float> s(static_cast<size_t>(T * E));
    for (float& v : s) v = nd(rng);
    Tensor st = dev_tensor(TSHMEM_MOE_FLOAT32, {T, G, E / G}, s.data());
    Tensor out = dev_tensor(TSHMEM_MOE_INT64, {T, 4});
    bench("topk_sum_and_topk_group_idx", "T=8001 G=8 Epg=32 sum2 top4", nbytes(st) + nbytes(out),
          [&] { CHECK_MOE(tshmem_moe_topk_sum_and_topk_group_idx(&st, 2, 4, &out, nullptr)); });
    std::vector<float> bias(static_cast<size_t>(E));
    for (float& v : bias) v = nd(rng);
    for (int64_t rows_t : {T, int64_t{36}}) {
      Tensor lt = dev_tensor(TSHMEM_MOE_FLOAT32, {rows_t, E}, s.data());
      Tensor bt = dev_tensor(TSHMEM_MOE_FLOAT32, {E}, bias.data());
      std::vector<uint8_t> mask(static_cast<size_t>(rows_t), 1);
      if (rows_t == 36) std::fill(mask.begin() + 32, mask.end(), 0);  // the spec's 32 + 4 masked rows
      Tensor mt = dev_tensor(TSHMEM_MOE_BOOL, {rows_t}, mask.data());
      const int64_t D = 33, S = 2;
      std::vector<int32_t> map(static_cast<size_t>((E + S) * D)), cnt(static_cast<size_t>(E + S), 1);
      for (int64_t l = 0; l < E + S; ++l)
        for (int64_t j = 0; j < D; ++j) map[l * D + j] = static_cast<int32_t>(l);
      Tensor mapt = dev_tensor(TSHMEM_MOE_INT32, {E + S, D}, map.data());
      Tensor cntt = dev_tensor(TSHMEM_MOE_INT32, {E + S}, cnt.data());
      Tensor oi = dev_tensor(TSHMEM_MOE_INT64, {rows_t, 8 + S}), ow = dev_tensor(TSHMEM_MOE_FLOAT32, {rows_t, 8 + S});
      tshmem_moe_top2_sum_gate_params_t p{};
      p.num_topk = 8, p.num_groups = 8, p.num_topk_groups = 4, p.use_shared_as_routed = 1, p.num_shared_experts = S;
      p.routed_scaling_factor = 1.5f, p.num_ep_ranks = 4, p.tp_rank = 1, p.num_tp_ranks = 2;
      p.scoring_func = TSHMEM_MOE_SCORING_SIGMOID;
      bench("top2_sum_gate", "T=" + std::to_string(rows_t) + " R=256 G=8/4 K=8 S=2 sigmoid", nbytes(lt) + nbytes(bt),
            [&] { CHECK_MOE(tshmem_moe_top2_sum_gate(&lt, &bt, &p, &mt, nullptr, &mapt, &cntt, nullptr, &oi, &ow, nullptr)); });
    }
  }

  // ---- counting and index kernels: topk_idx of the spec's largest moe-params case (K=9, 4 local of 256) ----
  {
    const int64_t K = 9, E = 4, Tr = 34300;  // about the expected row count of generate_topk_idx there
    std::vector<int64_t> idx = make_topk(Tr, K, 256, false, 3);
    for (int64_t& v : idx) v = v < E ? v : -1;
    Tensor it = dev_tensor(TSHMEM_MOE_INT64, {Tr, K}, idx.data());
    const std::string shape = "T=34300 K=9 E=4";
    Tensor counts = dev_tensor(TSHMEM_MOE_INT32, {E}), fi = dev_tensor(TSHMEM_MOE_FLOAT32, {E});
    bench("group_count", shape, nbytes(it), [&] { CHECK_MOE(tshmem_moe_group_count(&it, E, &counts, nullptr)); });
    bench("aux_fi", shape, nbytes(it), [&] { CHECK_MOE(tshmem_moe_aux_fi(&it, E, K, &fi, nullptr)); });
    std::vector<float> w(static_cast<size_t>(Tr * K));
    for (float& v : w) v = static_cast<float>(rng() % 1000) / 1000.0f;
    Tensor wt = dev_tensor(TSHMEM_MOE_FLOAT32, {Tr, K}, w.data());
    Tensor den = dev_tensor(TSHMEM_MOE_FLOAT32, {Tr}), nw = dev_tensor(TSHMEM_MOE_FLOAT32, {Tr, K});
    bench("normalize_weight", shape, nbytes(wt) + nbytes(den) + nbytes(nw),
          [&] { CHECK_MOE(tshmem_moe_normalize_weight(&wt, &den, &nw, nullptr)); });
    Tensor mo = dev_tensor(TSHMEM_MOE_INT64, {Tr, K});
    bench("mask_indices_by_tp", shape + " n=256 tp=2", 2 * nbytes(it),
          [&] { CHECK_MOE(tshmem_moe_mask_indices_by_tp(&it, 256, 64, 1, 2, &mo, nullptr)); });
    // inplace_unique on group ids (72 groups of the 256 experts would not divide; use 8 groups of 32).
    std::vector<int64_t> g = make_topk(Tr, K, 256, true, 4);
    int64_t changed = 0;
    for (int64_t t = 0; t < Tr; ++t) {
      bool seen[8] = {};
      for (int64_t k = 0; k < K; ++k) {
        int64_t& v = g[t * K + k];
        if (v >= 0) v /= 32;
        if (v >= 0 && seen[v]) ++changed;
        if (v >= 0) seen[v] = true;
      }
    }
    Tensor gt = dev_tensor(TSHMEM_MOE_INT64, {Tr, K}, g.data());
    Tensor pristine = dev_tensor(TSHMEM_MOE_INT64, {Tr, K}, g.data());
    const double ub = time_us([&] { cudaMemcpyAsync(gt.data, pristine.data, nbytes(gt), cudaMemcpyDeviceToDevice, nullptr); }, g_iters);
    bench("inplace_unique_group_indices", "T=34300 K=9 G=8", nbytes(gt) + 4.0 * changed, [&] {
      cudaMemcpyAsync(gt.data, pristine.data, nbytes(gt), cudaMemcpyDeviceToDevice, nullptr);
      CHECK_MOE(tshmem_moe_inplace_unique_group_indices(&gt, 8, nullptr));
    });
    rows.back().us -= ub;  // minus the restoring copy, timed alone
    // get_fused_mapping, alignment 128, P given (no host sync).
    const int64_t P = Tr * K + 127 * E;
    tshmem_moe_fused_mapping_t m{};
    m.pos_to_expert = dev_tensor(TSHMEM_MOE_INT32, {P});
    m.pos_to_token = dev_tensor(TSHMEM_MOE_INT32, {P});
    m.pos_to_token_topk = dev_tensor(TSHMEM_MOE_INT32, {P});
    m.token_topk_to_pos = dev_tensor(TSHMEM_MOE_INT32, {Tr, K});
    m.expert_start = dev_tensor(TSHMEM_MOE_INT32, {E});
    m.expert_end = dev_tensor(TSHMEM_MOE_INT32, {E});
    m.num_tokens_per_expert = dev_tensor(TSHMEM_MOE_INT32, {E});
    const double mb = nbytes(it) + 3 * nbytes(m.pos_to_expert) + nbytes(m.token_topk_to_pos) + 3 * 4.0 * E;
    bench("get_fused_mapping", shape + " align=128", mb,
          [&] { CHECK_MOE(tshmem_moe_get_fused_mapping(&it, E, P, 128, 1, &m, nullptr, nullptr, nullptr)); });
  }

  // ---- expand / reduce at T = 8001, H = 7168, K = 6 (32 local experts, every slot valid) ----
  {
    const int64_t K = 6, E = 32, H = 7168;
    std::vector<int64_t> idx = make_topk(T, K, E, false, 5);
    Tensor it = dev_tensor(TSHMEM_MOE_INT64, {T, K}, idx.data());
    tshmem_moe_fused_mapping_t m{};
    CHECK_MOE(tshmem_moe_get_fused_mapping(&it, E, 0, 128, 0, &m, nullptr, nullptr, nullptr));
    const int64_t P = m.pos_to_expert.shape[0];
    std::vector<uint16_t> xh(static_cast<size_t>(T * H));
    for (uint16_t& v : xh) v = static_cast<uint16_t>(rng() & 0x3fff);
    Tensor x = dev_tensor(TSHMEM_MOE_BFLOAT16, {T, H}, xh.data());
    Tensor xf = dev_tensor(TSHMEM_MOE_BFLOAT16, {P, H});
    const std::string shape = "T=8001 H=7168 K=6 P=" + std::to_string(P);
    bench("expand_to_fused", shape + " bf16", nbytes(x) + nbytes(m.token_topk_to_pos) + nbytes(m.pos_to_expert) + nbytes(xf),
          [&] { CHECK_MOE(tshmem_moe_expand_to_fused(&x, &m.token_topk_to_pos, &m.pos_to_expert, &xf, nullptr)); });
    Tensor x8 = dev_tensor(TSHMEM_MOE_FLOAT8_E4M3, {T, H}, xh.data());
    Tensor sf = dev_tensor(TSHMEM_MOE_FLOAT32, {T, H / 128});
    Tensor x8f = dev_tensor(TSHMEM_MOE_FLOAT8_E4M3, {P, H}), sff = dev_tensor(TSHMEM_MOE_FLOAT32, {P, H / 128});
    bench("expand_to_fused_with_sf", shape + " fp8 npc=128 sf fp32 row-major",
          nbytes(x8) + nbytes(sf) + nbytes(m.token_topk_to_pos) + nbytes(m.pos_to_expert) + nbytes(x8f) + nbytes(sff),
          [&] {
            CHECK_MOE(tshmem_moe_expand_to_fused_with_sf(&x8, &sf, 128, &m.token_topk_to_pos, &m.pos_to_expert, 0,
                                                         &x8f, &sff, nullptr));
          });
    std::vector<float> w(static_cast<size_t>(T * K), 0.25f);
    Tensor wt = dev_tensor(TSHMEM_MOE_FLOAT32, {T, K}, w.data());
    Tensor y = dev_tensor(TSHMEM_MOE_BFLOAT16, {T, H});
    const double valid = static_cast<double>(T * K);
    bench("reduce_fused", shape + " bf16 weights", nbytes(m.token_topk_to_pos) + nbytes(y) + valid * H * 2 + nbytes(wt),
          [&] { CHECK_MOE(tshmem_moe_reduce_fused(&xf, nullptr, &wt, &m.token_topk_to_pos, "", nullptr, &y, nullptr)); });
    Tensor* all[] = {&m.pos_to_expert, &m.pos_to_token, &m.pos_to_token_topk, &m.token_topk_to_pos,
                     &m.expert_start, &m.expert_end, &m.num_tokens_per_expert};
    for (Tensor* t : all) tshmem_moe_tensor_free(t, nullptr);
  }
  CHECK_MOE(tshmem_moe_check_device_errors(g_dev, nullptr));

  std::printf("# tshmem_moe_bench on %s (device %d, %d SMs)\n", prop.name, g_dev, prop.multiProcessorCount);
  std::printf("# roofline: device-to-device copy %.1f GB/s (1 GiB, read + write); launch floor (empty kernel) %.2f us\n",
              copy_gbs, floor_us);
  std::printf("%-30s %-48s %10s %10s %9s %9s\n", "kernel", "shape", "time_us", "GB/s", "roofline", "x_floor");
  FILE* jf = json ? std::fopen(json, "a") : nullptr;
  for (const Row& r : rows) {
    const double gbs = r.bytes / r.us / 1e3;
    std::printf("%-30s %-48s %10.2f %10.1f %8.1f%% %9.2f\n", r.kernel.c_str(), r.shape.c_str(), r.us, gbs,
                100.0 * gbs / copy_gbs, r.us / floor_us);
    if (jf)
      std::fprintf(jf,
                   "{\"bench\":\"tshmem_moe\",\"kernel\":\"%s\",\"shape\":\"%s\",\"time_us\":%.3f,\"bytes\":%.0f,"
                   "\"gbps\":%.2f,\"copy_gbps\":%.2f,\"roofline_fraction\":%.4f,\"launch_floor_us\":%.3f,"
                   "\"device\":\"%s\"}\n",
                   r.kernel.c_str(), r.shape.c_str(), r.us, r.bytes, gbs, copy_gbs, gbs / copy_gbs, floor_us, prop.name);
  }
  if (jf) std::fclose(jf);
  for (void* p : g_allocs) cudaFree(p);
  return 0;
}
