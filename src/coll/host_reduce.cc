#include "coll/host_reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tshmemi {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else {  // zero or subnormal: mant x 2^-24, exact in float
    float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fff;                                  // NaN: the canonical one, as the GPU
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504: infinity
  if (ax < 0x38800000u) {
    // Below the smallest normal half: adding 0.5 leaves the value's multiple of 2^-24 (rounded to nearest even)
    // in the low mantissa bits.
    float v;
    std::memcpy(&v, &ax, 4);
    v += 0.5f;
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return static_cast<uint16_t>(sign | (b - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;  // rebias the exponent (15 - 127) and round to nearest even
  return static_cast<uint16_t>(sign | (ax >> 13));
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fff;  // NaN: the canonical one, as the GPU
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

namespace {

struct half_bits {
  uint16_t v;
};
struct bf16_bits {
  uint16_t v;
};

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, half_bits> || std::is_same_v<T, bf16_bits>, float, T>;

template <class T>
inline acc_t<T> to_acc(T x) {
  if constexpr (std::is_same_v<T, half_bits>)
    return half_to_float(x.v);
  else if constexpr (std::is_same_v<T, bf16_bits>)
    return bfloat16_to_float(x.v);
  else
    return x;
}

template <class T>
inline T from_acc(acc_t<T> a) {
  if constexpr (std::is_same_v<T, half_bits>)
    return half_bits{float_to_half(a)};
  else if constexpr (std::is_same_v<T, bf16_bits>)
    return bf16_bits{float_to_bfloat16(a)};
  else
    return a;
}

template <tshmemx_redop_t Op, class A>
inline A combine(A acc, A x) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    if constexpr (Op == TSHMEMX_OP_MIN) return x < acc ? x : acc;
    if constexpr (Op == TSHMEMX_OP_MAX) return x > acc ? x : acc;
    if constexpr (Op == TSHMEMX_OP_PROD) return static_cast<A>(static_cast<U>(acc) * static_cast<U>(x));
    if constexpr (Op == TSHMEMX_OP_AND) return static_cast<A>(acc & x);
    if constexpr (Op == TSHMEMX_OP_OR) return static_cast<A>(acc | x);
    if constexpr (Op == TSHMEMX_OP_XOR) return static_cast<A>(acc ^ x);
    return static_cast<A>(static_cast<U>(acc) + static_cast<U>(x));
  } else {
    if constexpr (Op == TSHMEMX_OP_MIN) return std::fmin(acc, x);
    if constexpr (Op == TSHMEMX_OP_MAX) return std::fmax(acc, x);
    if constexpr (Op == TSHMEMX_OP_PROD) return acc * x;
    return acc + x;  // the bitwise operators never reach a float type (checked)
  }
}

template <class T, tshmemx_redop_t Op>
void reduce_typed(void *dst_v, const void *const *srcs, int n, size_t count) {
  T *dst = static_cast<T *>(dst_v);
  // A few elements (a small collective's whole call): element by element, its sum in a register, the members in
  // the same order as below, so the result is the same.
  constexpr size_t kFew = 16;
  if (count <= kFew) {
    for (size_t j = 0; j < count; ++j) {
      acc_t<T> a = to_acc(static_cast<const T *>(srcs[0])[j]);
      for (int k = 1; k < n; ++k) a = combine<Op>(a, to_acc(static_cast<const T *>(srcs[k])[j]));
      dst[j] = from_acc<T>(a);
    }
    return;
  }
  // Blocks of elements, member by member: each element still sees its members in order, and the inner loops
  // stream through memory (and vectorise).
  constexpr size_t kBlock = 1024;
  acc_t<T> acc[kBlock];
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t len = std::min(kBlock, count - first);
    const T *s0 = static_cast<const T *>(srcs[0]) + first;
    for (size_t j = 0; j < len; ++j) acc[j] = to_acc(s0[j]);
    for (int k = 1; k < n; ++k) {
      const T *sk = static_cast<const T *>(srcs[k]) + first;
      for (size_t j = 0; j < len; ++j) acc[j] = combine<Op>(acc[j], to_acc(sk[j]));
    }
    for (size_t j = 0; j < len; ++j) dst[first + j] = from_acc<T>(acc[j]);
  }
}

template <class T>
void reduce_op(tshmemx_redop_t op, void *dst, const void *const *srcs, int n, size_t count) {
  switch (op) {
    case TSHMEMX_OP_MIN: return reduce_typed<T, TSHMEMX_OP_MIN>(dst, srcs, n, count);
    case TSHMEMX_OP_MAX: return reduce_typed<T, TSHMEMX_OP_MAX>(dst, srcs, n, count);
    case TSHMEMX_OP_PROD: return reduce_typed<T, TSHMEMX_OP_PROD>(dst, srcs, n, count);
    case TSHMEMX_OP_AND: return reduce_typed<T, TSHMEMX_OP_AND>(dst, srcs, n, count);
    case TSHMEMX_OP_OR: return reduce_typed<T, TSHMEMX_OP_OR>(dst, srcs, n, count);
    case TSHMEMX_OP_XOR: return reduce_typed<T, TSHMEMX_OP_XOR>(dst, srcs, n, count);
    case TSHMEMX_OP_SUM:
    case TSHMEMX_NUM_OPS: break;
  }
  reduce_typed<T, TSHMEMX_OP_SUM>(dst, srcs, n, count);
}

}  // namespace

void host_reduce(tshmemx_dtype_t dtype, tshmemx_redop_t op, void *dst, const void *const *srcs, int n, size_t count) {
  switch (dtype) {
    case TSHMEMX_DTYPE_FLOAT: return reduce_op<float>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_HALF: return reduce_op<half_bits>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_BFLOAT16: return reduce_op<bf16_bits>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_INT32: return reduce_op<int32_t>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_INT64: return reduce_op<int64_t>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_DOUBLE: return reduce_op<double>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_UINT32: return reduce_op<uint32_t>(op, dst, srcs, n, count);
    case TSHMEMX_DTYPE_UINT64: return reduce_op<uint64_t>(op, dst, srcs, n, count);
    case TSHMEMX_NUM_DTYPES: break;
  }
}

}  // namespace tshmemi
