// CPU references of low-latency mode (low_latency/ll_reference.h).
#include "low_latency/ll_reference.h"

#include <cmath>
#include <cstring>

namespace tshmem_ep {
namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

}  // namespace

float float_from_bf16(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

uint16_t bf16_from_float(float v) {
  const uint32_t b = bits_of(v);
  if (std::isnan(v)) return static_cast<uint16_t>((b >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>((b + rounding) >> 16);
}

uint8_t fp8_e4m3_from_float(float v) {
  if (std::isnan(v)) return 0x7f;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  const double a = std::fabs(static_cast<double>(v));
  if (a >= 448.0) return sign | 0x7e;  // saturate to the largest finite value
  uint8_t code;
  if (a < 0.015625) {  // subnormal: steps of 2^-9; 8 steps round up to the smallest normal, whose code is 8
    code = static_cast<uint8_t>(std::nearbyint(a * 512.0));
  } else {
    int e;
    const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    const int exp = e - 1;               // a in [2^exp, 2^(exp + 1))
    int mant = static_cast<int>(std::nearbyint((a / std::ldexp(1.0, exp) - 1.0) * 8.0));
    int be = exp + 7;
    if (mant == 8) {
      mant = 0;
      ++be;
    }
    code = static_cast<uint8_t>((be << 3) | mant);
    if (code > 0x7e) code = 0x7e;
    (void)f;
  }
  return sign | code;
}

void ll_quantize_row_reference(const uint16_t *x, int hidden, bool round_scale, uint8_t *out, float *scales) {
  const float kInv = 1.0f / 448.0f;
  for (int g = 0; g < hidden / 128; ++g) {
    float amax = 1e-4f;
    for (int i = 0; i < 128; ++i) amax = std::fmax(amax, std::fabs(float_from_bf16(x[g * 128 + i])));
    float scale, scale_inv;
    if (round_scale) {
      const uint32_t b = bits_of(amax * kInv);
      const int e = static_cast<int>((b >> 23) & 0xff) - 127 + ((b & 0x7fffff) != 0);
      scale = float_of(static_cast<uint32_t>(-e + 127) << 23);
      scale_inv = float_of(static_cast<uint32_t>(e + 127) << 23);
    } else {
      scale_inv = amax * kInv;
      scale = 448.0f / amax;
    }
    for (int i = 0; i < 128; ++i) {
      const float prod = float_from_bf16(x[g * 128 + i]) * scale;
      out[g * 128 + i] = fp8_e4m3_from_float(prod);
    }
    scales[g] = scale_inv;
  }
}

std::vector<LlDispatchOut> ll_dispatch_reference(const LlShape &s, const std::vector<LlPeInput> &in) {
  const int N = s.n_pes, E = s.num_experts, L = E / N, M = s.max_tokens, H = s.hidden, K = s.num_topk;
  const size_t rows = static_cast<size_t>(N) * M;
  const size_t elem = s.fp8 ? 1 : 2;
  const int S = H / 128;
  std::vector<LlDispatchOut> out(N);
  for (int p = 0; p < N; ++p) {
    LlDispatchOut &o = out[p];
    o.recv_x.assign(static_cast<size_t>(L) * rows * H * elem, 0);
    if (s.fp8) o.recv_scales.assign(static_cast<size_t>(L) * rows * S * (s.ue8m0 ? 1 : 4), 0);
    o.recv_count.assign(L, 0);
    o.src_info.assign(static_cast<size_t>(L) * rows, 0);
    o.layout_range.assign(static_cast<size_t>(L) * N, 0);
    for (int le = 0; le < L; ++le) {
      const int64_t ex = static_cast<int64_t>(p) * L + le;
      int begin = 0;
      for (int r = 0; r < N; ++r) {
        int count = 0;
        const bool cut = in[p].masked[r] || in[r].masked[p];
        for (int t = 0; t < in[r].num_tokens && !cut; ++t)
          for (int k = 0; k < K; ++k) {
            if (in[r].topk_idx[static_cast<size_t>(t) * K + k] != ex) continue;
            const size_t j = static_cast<size_t>(begin) + count++;
            const uint16_t *xr = in[r].x.data() + static_cast<size_t>(t) * H;
            o.src_info[le * rows + j] = t;
            uint8_t *dst = o.recv_x.data() + (le * rows + j) * H * elem;
            if (!s.fp8) {
              std::memcpy(dst, xr, static_cast<size_t>(H) * 2);
              continue;
            }
            std::vector<float> sc(S);
            ll_quantize_row_reference(xr, H, s.round_scale, dst, sc.data());
            for (int g = 0; g < S; ++g) {
              if (s.ue8m0) {
                o.recv_scales[((static_cast<size_t>(le) * (S / 4) + g / 4) * rows + j) * 4 + g % 4] =
                    static_cast<uint8_t>(bits_of(sc[g]) >> 23);
              } else {
                std::memcpy(o.recv_scales.data() + ((static_cast<size_t>(le) * S + g) * rows + j) * 4, &sc[g], 4);
              }
            }
          }
        o.layout_range[static_cast<size_t>(le) * N + r] =
            static_cast<int64_t>(static_cast<uint32_t>(count)) | (static_cast<int64_t>(begin) << 32);
        begin += count;
      }
      o.recv_count[le] = begin;
    }
  }
  return out;
}

std::vector<std::vector<uint16_t>> ll_combine_reference(const LlShape &s, const std::vector<LlPeInput> &in,
                                                        const std::vector<LlDispatchOut> &d,
                                                        const std::vector<std::vector<uint16_t>> &y) {
  const int N = s.n_pes, E = s.num_experts, L = E / N, H = s.hidden, K = s.num_topk;
  const size_t rows = static_cast<size_t>(N) * s.max_tokens;
  std::vector<std::vector<uint16_t>> out(N);
  for (int p = 0; p < N; ++p) {
    out[p].assign(static_cast<size_t>(in[p].num_tokens) * H, 0);
    for (int t = 0; t < in[p].num_tokens; ++t) {
      std::vector<float> acc(H, 0.0f);
      for (int k = 0; k < K; ++k) {
        const int64_t ex = in[p].topk_idx[static_cast<size_t>(t) * K + k];
        if (ex < 0 || ex >= E) continue;
        const int r = static_cast<int>(ex / L), le = static_cast<int>(ex % L);
        if (in[p].masked[r] || in[r].masked[p]) continue;
        // The row of (p, t) among expert ex's rows on PE r.
        const int64_t range = d[r].layout_range[static_cast<size_t>(le) * N + p];
        const int count = static_cast<int>(range & 0xffffffff), begin = static_cast<int>(range >> 32);
        int j = -1;
        for (int i = 0; i < count && j < 0; ++i)
          if (d[r].src_info[le * rows + begin + i] == t) j = begin + i;
        if (j < 0) continue;
        const float w = in[p].topk_weights[static_cast<size_t>(t) * K + k];
        const uint16_t *row = y[r].data() + (le * rows + j) * H;
        for (int c = 0; c < H; ++c) {
          const float prod = float_from_bf16(row[c]) * w;
          acc[c] = acc[c] + prod;
        }
      }
      for (int c = 0; c < H; ++c) out[p][static_cast<size_t>(t) * H + c] = bf16_from_float(acc[c]);
    }
  }
  return out;
}

}  // namespace tshmem_ep
