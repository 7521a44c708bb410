// tshmemx_buffer_register_symmetric / _unregister_symmetric on shm with real processes (np 1, 2, 4): every refusal
// (bad argument, a backend that cannot register, an unknown address) on every PE with the same message, PEs that
// disagree named, nothing left waiting. Registration itself (vmm) is tested on a GPU by
// tshmem_nvshmem_compat_gpu.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tshmem/tshmem.h"

namespace {

class Register : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(tshmem_init(), 0) << tshmemx_last_error(); }
  static void TearDownTestSuite() { tshmem_finalize(); }
};

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

constexpr size_t kBytes = 2u << 20;

void expect_refused(void *got, const char *rule) {
  EXPECT_EQ(got, nullptr);
  const std::string message = tshmemx_last_error();
  EXPECT_TRUE(has(message, "tshmemx_buffer_register_symmetric")) << message;
  EXPECT_TRUE(has(message, rule)) << message;
  EXPECT_TRUE(has(message, "failed on PE")) << "every PE reports every PE's failure: " << message;
  tshmem_barrier_all();  // nobody was left waiting
}

TEST_F(Register, BadArgumentsFailOnEveryPe) {
  std::vector<char> host(kBytes);
  expect_refused(tshmemx_buffer_register_symmetric(nullptr, kBytes, 0), "buf is NULL");
  expect_refused(tshmemx_buffer_register_symmetric(host.data(), 0, 0), "size is 0");
  expect_refused(tshmemx_buffer_register_symmetric(host.data(), kBytes, 1), "flags = 1: no flag is defined");
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
}

TEST_F(Register, ShmBackendCannotRegister) {
  std::vector<char> host(kBytes);
  expect_refused(tshmemx_buffer_register_symmetric(host.data(), kBytes, 0),
                 "the shm backend cannot register buffers (only vmm maps a cuMemCreate allocation");
  EXPECT_TRUE(has(tshmemx_last_error(), "TSHMEM_MEM_BACKEND=vmm")) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_CONFIG);
}

TEST_F(Register, DivergentSizesAreNamed) {
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (n < 2) GTEST_SKIP() << "needs two PEs to disagree";
  std::vector<char> host(2 * kBytes);
  EXPECT_EQ(tshmemx_buffer_register_symmetric(host.data(), me == n - 1 ? 2 * kBytes : kBytes, 0), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  const std::string message = tshmemx_last_error();
  EXPECT_TRUE(has(message, "collective calls differ across PEs")) << message;
  EXPECT_TRUE(has(message, "divergent PE " + std::to_string(n - 1) + ".")) << message;
  EXPECT_TRUE(has(message, "tshmemx_buffer_register_symmetric(size=" + std::to_string(2 * kBytes) + ")")) << message;
  tshmem_barrier_all();
}

TEST_F(Register, UnregisterRefusesWhatIsNotRegistered) {
  int *block = static_cast<int *>(tshmem_malloc(64));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(tshmemx_buffer_unregister_symmetric(nullptr, kBytes), TSHMEM_ERR_INVALID_ARG);
  EXPECT_TRUE(has(tshmemx_last_error(), "addr is NULL")) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_buffer_unregister_symmetric(block, 64), TSHMEM_ERR_INVALID_ARG);
  EXPECT_TRUE(has(tshmemx_last_error(), "is no registered buffer")) << tshmemx_last_error();
  EXPECT_TRUE(has(tshmemx_last_error(), "failed on PE")) << tshmemx_last_error();
  tshmem_free(block);
}

}  // namespace
