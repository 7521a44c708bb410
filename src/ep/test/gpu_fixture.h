// What both GPU suites of tshmem_ep (normal and low-latency mode) stand on: the skip reason set by main, the
// assertion macros, device arrays filled from host vectors, and main itself (MPI, the GPU check, tshmem_init,
// the suite's shared buffer destroyed at the end).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tshmem/ep.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace tshmem_ep {

/// Why this PE skips the GPU tests; empty when they run (set by gpu_test_main).
inline std::string g_skip = "tshmem_init did not run";

#define EP_OK(call) ASSERT_EQ((call), TSHMEM_EP_SUCCESS) << #call << ": " << tshmem_ep_last_error()
#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call
#define REQUIRE_GPU() \
  if (!::tshmem_ep::g_skip.empty()) GTEST_SKIP() << ::tshmem_ep::g_skip

/// A device array of `count` T, every byte `kFill` at first or a copy of a host vector; freed at scope exit.
template <class T, unsigned char kFill>
struct DeviceArray {
  T *p = nullptr;
  explicit DeviceArray(size_t count) {
    if (cudaMalloc(&p, sizeof(T) * (count ? count : 1)) != cudaSuccess) p = nullptr;
    if (p) cudaMemset(p, kFill, sizeof(T) * (count ? count : 1));
  }
  explicit DeviceArray(const std::vector<T> &v) : DeviceArray(v.size()) {
    if (p && !v.empty()) cudaMemcpy(p, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice);
  }
  ~DeviceArray() { cudaFree(p); }
  std::vector<T> host(size_t count) const {
    std::vector<T> v(count);
    if (count) cudaMemcpy(v.data(), p, sizeof(T) * count, cudaMemcpyDeviceToHost);
    return v;
  }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;
};

/// main() of a GPU suite: every PE skips (with the reason) unless every PE has a GPU and tshmem starts with a GPU
/// heap. `buffer` is the suite's shared buffer, destroyed before tshmem_finalize.
inline int gpu_test_main(int argc, char **argv, tshmem_ep_buffer_t (*buffer)()) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int devices = 0;
  const int have = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  bool inited = false;
  if (!all) {
    g_skip = "no CUDA device on some PE";
  } else if (tshmem_init() != 0) {
    g_skip = std::string("tshmem_init failed: ") + tshmemx_last_error();
  } else {
    inited = true;
    g_skip = tshmemx_cuda_device() >= 0 ? "" : "no GPU heap";
  }
  const int rc = RUN_ALL_TESTS();
  if (inited) {
    tshmem_ep_buffer_destroy(buffer());
    tshmem_finalize();
  }
  MPI_Finalize();
  return rc;
}

}  // namespace tshmem_ep
