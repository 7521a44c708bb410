// The CPU side of the collective tests (coll_test.cu, coll_spanning_test.cu): host element traits and the
// documented reduction order — team index 0..n-1, floats accumulated in f32 and rounded once to the element
// type, integers wrapping — so that comparisons are bitwise; and the copies to and from the device.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "device_test_util.h"
#include "tshmem/tshmemx.h"

namespace tshmem_coll_reference {

/// float and the integers accumulate in their own type; the 16-bit floats (below) in f32.
template <class T>
struct Traits {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>);
  static constexpr tshmemx_dtype_t kDtype = std::is_same_v<T, float>     ? TSHMEMX_DTYPE_FLOAT
                                            : std::is_same_v<T, int32_t> ? TSHMEMX_DTYPE_INT32
                                                                         : TSHMEMX_DTYPE_INT64;
  static T to_acc(T x) { return x; }
  static T from_acc(T a) { return a; }
};
template <>
struct Traits<__half> {
  static constexpr tshmemx_dtype_t kDtype = TSHMEMX_DTYPE_HALF;
  static float to_acc(__half x) { return __half2float(x); }
  static __half from_acc(float a) { return __float2half_rn(a); }
};
template <>
struct Traits<__nv_bfloat16> {
  static constexpr tshmemx_dtype_t kDtype = TSHMEMX_DTYPE_BFLOAT16;
  static float to_acc(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __nv_bfloat16 from_acc(float a) { return __float2bfloat16_rn(a); }
};

template <class A>
A combine(tshmemx_redop_t op, A acc, A x) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    if (op == TSHMEMX_OP_SUM) return static_cast<A>(static_cast<U>(acc) + static_cast<U>(x));
    if (op == TSHMEMX_OP_MIN) return x < acc ? x : acc;
    return x > acc ? x : acc;
  } else {
    if (op == TSHMEMX_OP_SUM) return acc + x;
    if (op == TSHMEMX_OP_MIN) return std::fmin(acc, x);
    return std::fmax(acc, x);
  }
}

/// op over PEs 0..n-1 of value(pe, first + i), in that order; `value` is the test's (int, size_t) -> T.
template <class T, class Value>
std::vector<T> reduce_in_order(tshmemx_redop_t op, int n, size_t first, size_t count, Value value) {
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    auto acc = Traits<T>::to_acc(value(0, first + i));
    for (int pe = 1; pe < n; ++pe) acc = combine(op, acc, Traits<T>::to_acc(value(pe, first + i)));
    out[i] = Traits<T>::from_acc(acc);
  }
  return out;
}

/// What every reducing collective is tested with: each element type with a Traits entry, and each op.
using ReduceTypes = ::testing::Types<float, __half, __nv_bfloat16, int32_t, int64_t>;
inline constexpr tshmemx_redop_t kOps[] = {TSHMEMX_OP_SUM, TSHMEMX_OP_MIN, TSHMEMX_OP_MAX};

/// The inputs of a collective test: PE `pe`'s element i has varied signs and fractions (plus `offset`: a third
/// makes an f32 sum depend on its order) or, for integers, magnitudes that wrap when summed.
struct InputPattern {
  float offset;

  template <class T>
  T value(int pe, size_t i) const {
    const long long k = static_cast<long long>((i * 7919 + static_cast<size_t>(pe) * 104729 + 13) % 2001) - 1000;
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(k * (sizeof(T) == 8 ? 4000000000000000LL : 1000000LL));
    else
      return Traits<T>::from_acc(static_cast<float>(k) / 256.0f + offset);
  }
  /// PE `pe`'s elements first .. first + count - 1.
  template <class T>
  std::vector<T> values(int pe, size_t first, size_t count) const {
    std::vector<T> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = value<T>(pe, first + i);
    return v;
  }
  /// op over PEs 0..n-1 of value(pe, first + i), in that order.
  template <class T>
  std::vector<T> reference(tshmemx_redop_t op, int n, size_t first, size_t count) const {
    return reduce_in_order<T>(op, n, first, count, [this](int pe, size_t i) { return value<T>(pe, i); });
  }
};

template <class T>
std::vector<T> download(const T *device, size_t count) {
  std::vector<T> host(count);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

template <class T>
void upload(T *device, const std::vector<T> &host) {
  TSHMEM_CUDA_EXPECT(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
}

inline const char *op_name(tshmemx_redop_t op) {
  return op == TSHMEMX_OP_SUM ? "sum" : op == TSHMEMX_OP_MIN ? "min" : "max";
}

}  // namespace tshmem_coll_reference
