// Host-side bit-level conversions used by the CPU references, written to match the CUDA intrinsics the
// kernels use (__float2bfloat16_rn, __nv_cvt_float_to_fp8 with __NV_SATFINITE) bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tshmem_moe {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

// Round to nearest even; NaN becomes the canonical quiet NaN, as cuda_bf16's conversion does.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(0x7fffu);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// float -> float8_e4m3fn, round to nearest even, saturating to +-448 (the port's documented choice, docs/moe.md,
// reduce_fused); NaN -> 0x7f with the sign.
inline uint8_t f32_to_e4m3_sat(float f) {
  const uint32_t u = f32_bits(f);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint8_t>(sign | 0x7f);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7e);  // covers inf (SATFINITE)
  uint32_t code;
  if (a < 0.015625f) {  // below 2^-6: subnormal grid of step 2^-9 (scaling by 2^9 is exact)
    code = static_cast<uint32_t>(std::nearbyint(a * 512.0f));  // may round up to 8 = the smallest normal
  } else {
    int e = 0;
    const float m = std::frexp(a, &e);            // a = m * 2^e, m in [0.5, 1)
    const int exp = e - 1;                        // a = (2m) * 2^exp, 2m in [1, 2)
    const float frac = (2.0f * m - 1.0f) * 8.0f;  // exact
    uint32_t q = static_cast<uint32_t>(std::nearbyint(frac));
    code = static_cast<uint32_t>(exp + 7) * 8u + q;  // q == 8 carries into the exponent, as it should
  }
  if (code > 0x7eu) code = 0x7eu;
  return static_cast<uint8_t>(sign | code);
}

}  // namespace tshmem_moe
