// A tshmem instance per test (MPI outlives it), on the shm backend unless the test says otherwise.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "mpi_test_env.h"
#include "tshmem/tshmem.h"

namespace tshmem_test {

class TshmemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
    ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "16M");
    const int rc = tshmem_init();
    ASSERT_TRUE(all_pes(rc == 0)) << "tshmem_init: " << tshmemx_last_error();
    me_ = tshmem_my_pe();
    n_ = tshmem_n_pes();
  }
  void TearDown() override { tshmem_finalize(); }

  std::string last_error() const { return tshmemx_last_error(); }
  int me_ = -1, n_ = 0;
};

}  // namespace tshmem_test
