// The CPU side of the collective tests (coll_test.cu, coll_spanning_test.cu): host element traits and the
// documented reduction order — team index 0..n-1, floats accumulated in f32 and rounded once to the element
// type, integers wrapping — so that comparisons are bitwise; and the copies to and from the device.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "device_test_util.h"
#include "tshmem/tshmemx.h"

namespace tshmem_coll_reference {

template <class T>
struct Traits;
template <>
struct Traits<float> {
  static constexpr tshmemx_dtype_t kDtype = TSHMEMX_DTYPE_FLOAT;
  static float to_acc(float x) { return x; }
  static float from_acc(float a) { return a; }
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
template <>
struct Traits<int32_t> {
  static constexpr tshmemx_dtype_t kDtype = TSHMEMX_DTYPE_INT32;
  static int32_t to_acc(int32_t x) { return x; }
  static int32_t from_acc(int32_t a) { return a; }
};
template <>
struct Traits<int64_t> {
  static constexpr tshmemx_dtype_t kDtype = TSHMEMX_DTYPE_INT64;
  static int64_t to_acc(int64_t x) { return x; }
  static int64_t from_acc(int64_t a) { return a; }
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
