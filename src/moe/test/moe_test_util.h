// Helpers of the tshmem_moe tests: host views over std::vector, device mirrors, strided gathers for
// byte-wise comparison, and the reference topk_idx generator (receive side of an EP dispatch; docs/moe.md,
// "Reference inputs and benchmark shapes").
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "tshmem/moe.h"

namespace moe_test {

using Tensor = tshmem_moe_tensor_t;
constexpr int kCpu = TSHMEM_MOE_DEVICE_CPU;

template <class T>
Tensor view(std::vector<T> &v, tshmem_moe_dtype_t dtype, std::initializer_list<int64_t> shape, int device = kCpu) {
  std::vector<int64_t> s(shape);
  return tshmem_moe_tensor_make(v.data(), dtype, static_cast<int32_t>(s.size()), s.data(), device);
}

inline Tensor empty_out() {
  Tensor t{};
  return t;
}

// Logical elements of a view in row-major order, honouring strides (host or device memory).
inline std::vector<uint8_t> gather(const Tensor &t) {
  const size_t es = tshmem_moe_dtype_size(t.dtype);
  const int64_t n = tshmem_moe_tensor_numel(&t);
  std::vector<uint8_t> out(static_cast<size_t>(n) * es);
  if (n == 0) return out;
  int64_t extent = 1;  // highest linear offset + 1
  for (int i = 0; i < t.ndim; ++i) extent += (t.shape[i] - 1) * t.strides[i];
  std::vector<uint8_t> raw(static_cast<size_t>(extent) * es);
  if (t.device == kCpu) {
    std::memcpy(raw.data(), t.data, raw.size());
  } else {
    // On the tensor's own device, after its work: stream-ordered pool memory of another device is not
    // accessible from the current one.
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(t.device);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(raw.data(), t.data, raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaSetDevice(prev);
  }
  std::vector<int64_t> idx(static_cast<size_t>(t.ndim), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int i = 0; i < t.ndim; ++i) off += idx[i] * t.strides[i];
    std::memcpy(out.data() + static_cast<size_t>(e) * es, raw.data() + static_cast<size_t>(off) * es, es);
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (++idx[i] < t.shape[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

template <class T>
std::vector<T> as(const Tensor &t) {
  std::vector<uint8_t> b = gather(t);
  std::vector<T> v(b.size() / sizeof(T));
  if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// A library-allocated output, freed at scope exit.
struct Out {
  Tensor t{};
  ~Out() { tshmem_moe_tensor_free(&t, nullptr); }
  Tensor *operator&() { return &t; }
};

// A copy of a host tensor on `device` (cudaMalloc), freed at scope exit.
struct Mirror {
  Tensor d{};
  Mirror(const Tensor &h, int device) {
    d = h;
    d.device = device;
    d.data = nullptr;
    const size_t bytes = static_cast<size_t>(tshmem_moe_tensor_numel(&h)) * tshmem_moe_dtype_size(h.dtype);
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(device);
    if (bytes) {
      EXPECT_EQ(cudaMalloc(&d.data, bytes), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(d.data, h.data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
    cudaSetDevice(prev);
  }
  ~Mirror() {
    if (d.data) cudaFree(d.data);
  }
  Mirror(const Mirror &) = delete;
  Mirror &operator=(const Mirror &) = delete;
  const Tensor *operator&() const { return &d; }
  Tensor *ptr() { return &d; }
};

inline int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

#define MOE_REQUIRE_GPUS(n)                                                              \
  do {                                                                                   \
    const int have_ = ::moe_test::gpu_count();                                           \
    if (have_ < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA GPU(s), found " << have_; \
  } while (0)

#define MOE_OK(expr) ASSERT_EQ((expr), TSHMEM_MOE_SUCCESS) << tshmem_moe_last_error()

// The calling thread's last error message, for find().
inline std::string last() { return tshmem_moe_last_error(); }

// generate_topk_idx: S*R rows pick K distinct experts of E*R uniformly (the top-K of iid scores), ids
// not local (>= E) become -1, rows that are all -1 are dropped. Rows have no duplicate and >= 1 valid entry.
inline std::vector<int64_t> generate_topk_idx(int64_t S, int64_t K, int64_t E, int64_t R, uint32_t seed,
                                              int64_t *rows) {
  std::mt19937 rng(seed);
  const int64_t tot = E * R;
  std::vector<int64_t> perm(static_cast<size_t>(tot));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(S * K * 2));
  for (int64_t r = 0; r < S * R; ++r) {
    for (int64_t i = 0; i < tot; ++i) perm[i] = i;
    bool any = false;
    std::vector<int64_t> row(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) {
      std::uniform_int_distribution<int64_t> d(k, tot - 1);
      std::swap(perm[k], perm[d(rng)]);
      row[k] = perm[k] < E ? perm[k] : -1;
      any = any || row[k] >= 0;
    }
    if (any) out.insert(out.end(), row.begin(), row.end());
  }
  *rows = static_cast<int64_t>(out.size()) / K;
  return out;
}

}  // namespace moe_test
