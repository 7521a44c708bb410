// Shared by the device-API GPU tests: one tshmem_init for the whole binary, a skip (with the reason, the
// same on every PE) when there is no GPU heap, symmetric buffers with RAII, CUDA checks that fail the test.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "mpi_test_env.h"
#include "tshmem/tshmem.h"

namespace tshmem_device_test {

/// Empty when the GPU tests can run on every PE; otherwise why not (identical on all PEs).
const std::string &skip_reason();

/// Installs MPI, then an environment that runs tshmem_init before the tests and tshmem_finalize after.
void install_environment(int *argc, char ***argv);

/// True when some PE is on another node (every operation to it goes through the off-node proxy); the same on
/// every PE. Tests shrink their request counts then: with PEs sharing one GPU, every cross-process dependency
/// waits for a GPU time slice (about 2 ms on the H200 test host), so the on-node sizes would run for hours.
bool job_spans_nodes();

/// A symmetric allocation of `bytes`, zeroed on every PE; freed (collectively) at scope exit.
class SymBuffer {
 public:
  explicit SymBuffer(size_t bytes);
  ~SymBuffer();
  SymBuffer(const SymBuffer &) = delete;
  SymBuffer &operator=(const SymBuffer &) = delete;
  template <class T = char>
  T *get() const {
    return static_cast<T *>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void *ptr_;
  size_t bytes_;
};

}  // namespace tshmem_device_test

/// Skip the test on every PE when there is no GPU heap (consistent: the reason was agreed at init).
#define TSHMEM_REQUIRE_GPU()                                                                               \
  do {                                                                                                     \
    if (!::tshmem_device_test::skip_reason().empty()) GTEST_SKIP() << ::tshmem_device_test::skip_reason(); \
  } while (0)

/// A CUDA call that must succeed (fails the test, does not return: PEs stay in step).
#define TSHMEM_CUDA_EXPECT(call)                                                           \
  do {                                                                                     \
    const cudaError_t tshmem_rc_ = (call);                                                 \
    EXPECT_EQ(tshmem_rc_, cudaSuccess) << #call << ": " << cudaGetErrorString(tshmem_rc_); \
  } while (0)
