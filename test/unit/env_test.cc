// The one environment parser: every malformed value is an error naming the variable, the value and the
// rule; defaults come from the same table; foreign multicast switches are read their owners' way.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "env.h"
#include "fake_env.h"

namespace tshmemi {
namespace {

using tshmem_test::fake_env;
using tshmem_test::fake_getenv;

class Env : public ::testing::Test {
 protected:
  void SetUp() override { fake_env().clear(); }
  Status parse(EnvOptions *options) { return parse_env(options, fake_getenv); }
};

TEST_F(Env, DefaultsComeFromTheTable) {
  EnvOptions options;
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS) << tshmemx_last_error();
  EXPECT_EQ(options.symmetric_size, 1ull << 30);
  EXPECT_EQ(options.mem_backend, "auto");
  EXPECT_EQ(options.device, -1);
  EXPECT_FALSE(options.allow_shared_gpu);
  EXPECT_EQ(options.bind, "auto");
  EXPECT_FALSE(options.disable_nvls);
  EXPECT_EQ(options.wait_timeout_ms, 0);
  EXPECT_EQ(options.debug, "warn");
  EXPECT_FALSE(options.nvls_forbidden());
}

TEST_F(Env, SizesWithSuffixes) {
  const std::pair<const char *, uint64_t> cases[] = {{"4096", 4096},         {"64K", 64ull << 10}, {"64k", 64ull << 10},
                                                     {"512M", 512ull << 20}, {"2G", 2ull << 30},   {"1T", 1ull << 40},
                                                     {"64KiB", 64ull << 10}, {"8MB", 8ull << 20}};
  for (const auto &c : cases) {
    uint64_t value = 0;
    EXPECT_EQ(parse_size("TSHMEM_SYMMETRIC_SIZE", c.first, &value), TSHMEM_SUCCESS) << c.first;
    EXPECT_EQ(value, c.second) << c.first;
  }
}

TEST_F(Env, EveryMalformedSizeIsAnError) {
  for (const char *bad : {"", " ", "abc", "-1", "+5", "1.5G", "12Q", "1GG", "1 G", "0x10", "99999999999999999999",
                          "17179869184T", "G", "1Gx"}) {
    uint64_t value = 7;
    EXPECT_EQ(parse_size("TSHMEM_SYMMETRIC_SIZE", bad, &value), TSHMEM_ERR_CONFIG) << "'" << bad << "'";
    EXPECT_EQ(value, 7u) << "nothing is written on error";
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find("TSHMEM_SYMMETRIC_SIZE='"), std::string::npos) << message;
    EXPECT_NE(message.find(bad), std::string::npos) << message;
  }
}

// strtoull skips leading whitespace and accepts a sign: " -1" used to read as 2^64 - 1.
TEST_F(Env, SizesWithWhitespaceOrSignsAreRefusedByRule) {
  const std::pair<const char *, const char *> cases[] = {
      {" -1", "no whitespace"}, {"+1G", "no sign"},
      {"1 G", "no whitespace"}, {" 1G", "no whitespace"},
      {"1G ", "no whitespace"}, {"\t8M", "no whitespace"},
      {"-0", "no sign"},        {"K1", "starts with a decimal digit"}};
  for (const auto &c : cases) {
    uint64_t value = 7;
    EXPECT_EQ(parse_size("TSHMEM_SYMMETRIC_SIZE", c.first, &value), TSHMEM_ERR_CONFIG) << "'" << c.first << "'";
    EXPECT_EQ(value, 7u);
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find(std::string("TSHMEM_SYMMETRIC_SIZE='") + c.first + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.second), std::string::npos) << message;
  }
  int64_t number = 7;
  EXPECT_EQ(parse_int("TSHMEM_DEVICE", " 1", &number), TSHMEM_ERR_CONFIG);
  EXPECT_EQ(parse_int("TSHMEM_DEVICE", "1 ", &number), TSHMEM_ERR_CONFIG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("no whitespace"), std::string::npos);
  EXPECT_EQ(number, 7);
  EXPECT_EQ(parse_int("TSHMEM_DEVICE", "-1", &number), TSHMEM_SUCCESS);
  EXPECT_EQ(number, -1);
}

TEST_F(Env, MalformedValuesOfEveryKindFailInit) {
  const std::pair<const char *, const char *> cases[] = {
      {"TSHMEM_SYMMETRIC_SIZE", "lots"},      {"TSHMEM_SYMMETRIC_SIZE", "1K"},  // below the minimum
      {"TSHMEM_SYMMETRIC_SIZE", "256T"},                                        // at the 2^48 limit
      {"TSHMEM_MEM_BACKEND", "nvme"},         {"TSHMEM_DEVICE", "first"},         {"TSHMEM_DEVICE", "1.0"},
      {"TSHMEM_ALLOW_SHARED_GPU", "maybe"},   {"TSHMEM_BIND", "cores"},           {"TSHMEM_DISABLE_NVLS", "2"},
      {"TSHMEM_WAIT_TIMEOUT_MS", "10s"},      {"TSHMEM_DEBUG", "verbose"},        {"TSHMEM_DEBUG_SUBSYS", "HEAP,DISK"},
      {"TSHMEM_DEBUG_NODE_SIZE", "-1"},       {"TSHMEM_DEBUG_NODE_SIZE", "two"},  {"TSHMEM_DEBUG_NODE_SIZE", "100000"},
      {"TSHMEM_COLL_PDL", "sometimes"},       {"TSHMEM_INIT_TIMEOUT_MS", "0"},    {"TSHMEM_INIT_TIMEOUT_MS", "-5"},
      {"TSHMEM_INIT_TIMEOUT_MS", "86400001"}, {"TSHMEM_UCX_GPU_DIRECT", "maybe"}, {"TSHMEM_DEBUG_UCX_STAGED", "2"}};
  for (const auto &c : cases) {
    fake_env().clear();
    fake_env()[c.first] = c.second;
    EnvOptions options;
    EXPECT_EQ(parse(&options), TSHMEM_ERR_CONFIG) << c.first << "=" << c.second;
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find(c.first), std::string::npos) << message;
  }
}

TEST_F(Env, BoolsAndChoices) {
  for (const char *yes : {"1", "true", "YES", "on"}) {
    bool value = false;
    EXPECT_EQ(parse_bool("B", yes, &value), TSHMEM_SUCCESS);
    EXPECT_TRUE(value) << yes;
  }
  for (const char *no : {"0", "False", "no", "OFF"}) {
    bool value = true;
    EXPECT_EQ(parse_bool("B", no, &value), TSHMEM_SUCCESS);
    EXPECT_FALSE(value) << no;
  }
  std::string choice;
  EXPECT_EQ(parse_choice("C", "VMM", "auto|vmm|ipc|shm", &choice), TSHMEM_SUCCESS);
  EXPECT_EQ(choice, "vmm");
  EXPECT_EQ(parse_choice("C", "vm", "auto|vmm|ipc|shm", &choice), TSHMEM_ERR_CONFIG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("auto|vmm|ipc|shm"), std::string::npos);
}

TEST_F(Env, MulticastSwitchesAreReadTheirOwnersWay) {
  EnvOptions options;
  fake_env()["TSHMEM_DISABLE_NVLS"] = "1";
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_TRUE(options.nvls_forbidden());

  // NVSHMEM: a first character in "0NnFf" is false, anything else true.
  for (const auto &c : std::map<std::string, bool>{
           {"1", true}, {"yes", true}, {"0", false}, {"no", false}, {"false", false}, {"Y", true}, {"", false}}) {
    fake_env().clear();
    fake_env()["NVSHMEM_DISABLE_NVLS"] = c.first;
    ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
    EXPECT_EQ(options.nvls_forbidden(), c.second) << "NVSHMEM_DISABLE_NVLS=" << c.first;
  }
  // NCCL: NCCL_NVLS_ENABLE=0 disables; something unparseable disables too (we stay safe).
  for (const auto &c : std::map<std::string, bool>{
           {"0", true}, {"1", false}, {"2", false}, {"false", true}, {"off", true}, {"0x0", true}}) {
    fake_env().clear();
    fake_env()["NCCL_NVLS_ENABLE"] = c.first;
    ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
    EXPECT_EQ(options.nvls_forbidden(), c.second) << "NCCL_NVLS_ENABLE=" << c.first;
  }
}

// The launcher's placement (read before MPI starts, to start CUDA meanwhile): the first launcher that gives a
// local rank wins; what is not a count reads as unknown, never as an error.
TEST_F(Env, LauncherPlacementIsReadFromTheLaunchersOwnVariables) {
  EnvOptions options;
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_EQ(options.launcher.local_rank, -1);
  EXPECT_EQ(options.launcher.size, -1);

  fake_env() = {{"OMPI_COMM_WORLD_RANK", "5"},       {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"SLURM_LOCALID", "3"},        {"SLURM_PROCID", "7"}};
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_EQ(options.launcher.rank, 5);
  EXPECT_EQ(options.launcher.size, 8);
  EXPECT_EQ(options.launcher.local_rank, 1);
  EXPECT_EQ(options.launcher.local_size, 4);

  // Slurm gives no per-host count unless the job has one node.
  fake_env() = {{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "2"}};
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_EQ(options.launcher.local_rank, 2);
  EXPECT_EQ(options.launcher.local_size, -1);
  fake_env()["SLURM_NNODES"] = "1";
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_EQ(options.launcher.local_size, 4);

  // MPICH's Hydra.
  fake_env() = {{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}};
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_EQ(options.launcher.local_rank, 1);
  EXPECT_EQ(options.launcher.local_size, 2);

  for (const char *bad : {"", "-1", "x", "1x", " 1", "99999999999"}) {
    fake_env() = {{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", bad}};
    ASSERT_EQ(parse(&options), TSHMEM_SUCCESS) << "OMPI_COMM_WORLD_SIZE=" << bad;
    EXPECT_EQ(options.launcher.size, -1) << "OMPI_COMM_WORLD_SIZE=" << bad;
    EXPECT_EQ(options.launcher.local_rank, 0);
  }
}

TEST_F(Env, TableListsEveryVariableOnceWithADescription) {
  std::map<std::string, int> seen;
  for (const EnvVarInfo &row : env_table()) {
    EXPECT_EQ(std::string(row.name).rfind("TSHMEM_", 0), 0u);
    EXPECT_GT(std::string(row.description).size(), 10u) << row.name;
    EXPECT_EQ(++seen[row.name], 1) << row.name;
    if (row.kind == EnvKind::Choice) {
      EXPECT_NE(std::string(row.choices), "") << row.name;
    }
  }
  EXPECT_EQ(seen.size(), 22u);
}

// The proxy's sizes and the bounds are checked when the environment is parsed: a value that would fail only once
// a job spans nodes fails on one node too, naming the variable, the value and the rule.
TEST_F(Env, ProxySizesAndBoundsAreCheckedWhenParsed) {
  const struct {
    const char *name, *value, *rule;
  } cases[] = {
      {"TSHMEM_PROXY_RING", "3", "TSHMEM_PROXY_RING=3: must be a power of two in [2, 16777216]"},
      {"TSHMEM_PROXY_RING", "1", "TSHMEM_PROXY_RING=1: must be a power of two"},
      {"TSHMEM_PROXY_CHUNK", "32", "TSHMEM_PROXY_CHUNK=32: must be in [64, 268435456] bytes"},
      {"TSHMEM_PROXY_STAGE_MAX", "2M", "TSHMEM_PROXY_STAGE_MAX=2097152: must be in [0, 1048576] bytes"},
      {"TSHMEM_PROXY_TIMEOUT_MS", "0", "TSHMEM_PROXY_TIMEOUT_MS=0: must be 1 to 86400000"},
      {"TSHMEM_WAIT_TIMEOUT_MS", "-1", "TSHMEM_WAIT_TIMEOUT_MS=-1: must be 0 (forever) to 86400000"},
      {"TSHMEM_WAIT_WARN_MS", "-1", "TSHMEM_WAIT_WARN_MS=-1: must be 0 (no warning) to 86400000"},
      {"TSHMEM_WAIT_WARN_MS", "86400001", "TSHMEM_WAIT_WARN_MS=86400001: must be 0 (no warning) to 86400000"},
  };
  for (const auto &c : cases) {
    fake_env().clear();
    fake_env()[c.name] = c.value;
    EnvOptions options;
    EXPECT_EQ(parse(&options), TSHMEM_ERR_CONFIG) << c.name << "=" << c.value;
    EXPECT_NE(std::string(tshmemx_last_error()).find(c.rule), std::string::npos) << tshmemx_last_error();
  }
  fake_env().clear();
  EnvOptions options;
  ASSERT_EQ(parse(&options), TSHMEM_SUCCESS);
  EXPECT_EQ(options.proxy_timeout_ms, 300000);  // generous, but finite
}

}  // namespace
}  // namespace tshmemi
