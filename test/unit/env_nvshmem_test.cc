// NVSHMEM's names of the variables tshmem understands (src/env_defs.h, TSHMEM_ENV_NVSHMEM_NAMES): read only
// when asked (a program initialised through the NVSHMEM compat headers), never over a TSHMEM_ value, and a
// malformed one is an error under its own name.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "env.h"
#include "fake_env.h"

namespace tshmemi {
namespace {

using tshmem_test::fake_env;
using tshmem_test::fake_getenv;

class EnvNvshmemNames : public ::testing::Test {
 protected:
  void SetUp() override { fake_env().clear(); }
};

TEST_F(EnvNvshmemNames, SymmetricSizeReadOnlyWhenAsked) {
  fake_env()["NVSHMEM_SYMMETRIC_SIZE"] = "256M";
  EnvOptions options;
  ASSERT_EQ(parse_env(&options, fake_getenv, false), TSHMEM_SUCCESS) << tshmemx_last_error();
  EXPECT_EQ(options.symmetric_size, 1ull << 30) << "a plain tshmem program ignores NVSHMEM_SYMMETRIC_SIZE";
  ASSERT_EQ(parse_env(&options, fake_getenv, true), TSHMEM_SUCCESS) << tshmemx_last_error();
  EXPECT_EQ(options.symmetric_size, 256ull << 20);
}

TEST_F(EnvNvshmemNames, TshmemNameWins) {
  fake_env()["NVSHMEM_SYMMETRIC_SIZE"] = "256M";
  fake_env()["TSHMEM_SYMMETRIC_SIZE"] = "64M";
  EnvOptions options;
  ASSERT_EQ(parse_env(&options, fake_getenv, true), TSHMEM_SUCCESS) << tshmemx_last_error();
  EXPECT_EQ(options.symmetric_size, 64ull << 20);
}

TEST_F(EnvNvshmemNames, MalformedValueNamesTheNvshmemVariable) {
  fake_env()["NVSHMEM_SYMMETRIC_SIZE"] = "lots";
  EnvOptions options;
  EXPECT_EQ(parse_env(&options, fake_getenv, true), TSHMEM_ERR_CONFIG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("NVSHMEM_SYMMETRIC_SIZE"), std::string::npos)
      << tshmemx_last_error();
}

TEST_F(EnvNvshmemNames, OnlyListedNamesAreRead) {
  fake_env()["NVSHMEM_DEBUG"] = "not-a-level";  // NVSHMEM's own variable, not in tshmem's list: ignored
  EnvOptions options;
  ASSERT_EQ(parse_env(&options, fake_getenv, true), TSHMEM_SUCCESS) << tshmemx_last_error();
  EXPECT_EQ(options.debug, "warn");
}

}  // namespace
}  // namespace tshmemi
