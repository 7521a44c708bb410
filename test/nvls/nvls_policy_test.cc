// The multicast policy, proved by counting: with any of TSHMEM_DISABLE_NVLS=1, NVSHMEM_DISABLE_NVLS=1,
// NCCL_NVLS_ENABLE=0 set, nvls_local_policy makes no multicast driver call at all -- not a resolution, not a
// query (nvls_driver_calls() counts both). The allowed path runs against stub entry points (this machine
// and CI have no GPU; the GPU test host must never use multicast), which also shows the counter works:
// without a variable the same call is counted.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "env.h"
#include "fake_env.h"
#include "nvls/nvls.h"
#include "nvls/nvls_driver.h"

namespace tshmemi {
namespace {

using tshmem_test::fake_env;
using tshmem_test::fake_getenv;

int g_supported = 1;
constexpr size_t kGranularity = 2u << 20;

CUresult CUDAAPI stub_device_get(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stub_device_get_attribute(int *value, CUdevice_attribute attribute, CUdevice) {
  *value = attribute == CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED ? g_supported : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stub_granularity(size_t *granularity, const CUmulticastObjectProp *, CUmulticastGranularity_flags) {
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI stub_never_called() { return CUDA_ERROR_NOT_SUPPORTED; }  // the policy calls no other entry

bool stub_resolver(const char *name, unsigned, void **slot) {
  if (std::strcmp(name, "cuDeviceGet") == 0)
    *slot = reinterpret_cast<void *>(&stub_device_get);
  else if (std::strcmp(name, "cuDeviceGetAttribute") == 0)
    *slot = reinterpret_cast<void *>(&stub_device_get_attribute);
  else if (std::strcmp(name, "cuMulticastGetGranularity") == 0)
    *slot = reinterpret_cast<void *>(&stub_granularity);
  else
    *slot = reinterpret_cast<void *>(&stub_never_called);
  return true;
}

class NvlsPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_env().clear();
    g_supported = 1;
    nvls_set_resolver_for_testing(&stub_resolver);
  }
  void TearDown() override { nvls_set_resolver_for_testing(nullptr); }

  NvlsDecision decide(const std::string &backend = "vmm", uint64_t heap_size = 1u << 30) {
    EXPECT_EQ(parse_env(&env_, fake_getenv), TSHMEM_SUCCESS) << tshmemx_last_error();
    NvlsPolicyInput input;
    input.env = &env_;
    input.backend = backend;
    input.cuda_device = 0;
    input.local_n_pes = 2;
    input.heap_base = 64ull << 30;
    input.heap_size = heap_size;
    nvls_reset_driver_calls();
    return nvls_local_policy(input);
  }

  EnvOptions env_;
};

struct Forbidding {
  const char *name;
  const char *value;
};

TEST_F(NvlsPolicy, EachVariableForbidsWithZeroDriverCalls) {
  const Forbidding cases[] = {
      {"TSHMEM_DISABLE_NVLS", "1"},  {"TSHMEM_DISABLE_NVLS", "yes"},   {"NVSHMEM_DISABLE_NVLS", "1"},
      {"NVSHMEM_DISABLE_NVLS", "y"}, {"NVSHMEM_DISABLE_NVLS", "true"}, {"NCCL_NVLS_ENABLE", "0"},
      {"NCCL_NVLS_ENABLE", "false"}, {"NCCL_NVLS_ENABLE", "off"},
  };
  for (const Forbidding &c : cases) {
    fake_env().clear();
    fake_env()[c.name] = c.value;
    const NvlsDecision decision = decide();
    EXPECT_FALSE(decision.use) << c.name << "=" << c.value;
    EXPECT_EQ(nvls_driver_calls(), 0u) << c.name << "=" << c.value << ": a multicast driver entry was touched";
    EXPECT_NE(decision.reason.find(c.name), std::string::npos) << decision.reason;
  }
}

TEST_F(NvlsPolicy, AllThreeSetTogetherStillZeroCalls) {
  fake_env() = {{"TSHMEM_DISABLE_NVLS", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}, {"NCCL_NVLS_ENABLE", "0"}};
  EXPECT_FALSE(decide().use);
  EXPECT_EQ(nvls_driver_calls(), 0u);
}

TEST_F(NvlsPolicy, VariablesThatDoNotForbid) {
  // NVSHMEM: first character in 0NnFf is false; NCCL: a non-zero number keeps it on.
  const Forbidding cases[] = {{"TSHMEM_DISABLE_NVLS", "0"},
                              {"NVSHMEM_DISABLE_NVLS", "0"},
                              {"NVSHMEM_DISABLE_NVLS", "no"},
                              {"NCCL_NVLS_ENABLE", "1"},
                              {"NCCL_NVLS_ENABLE", "2"}};
  for (const Forbidding &c : cases) {
    fake_env().clear();
    fake_env()[c.name] = c.value;
    EXPECT_TRUE(decide().use) << c.name << "=" << c.value;
    EXPECT_GT(nvls_driver_calls(), 0u);
  }
}

TEST_F(NvlsPolicy, AllowedPathIsCounted) {
  const NvlsDecision decision = decide();
  EXPECT_TRUE(decision.use) << decision.reason;
  EXPECT_EQ(decision.granularity, kGranularity);
  EXPECT_GT(nvls_driver_calls(), 0u) << "the counter must see the allowed path, or the zero above proves nothing";
}

TEST_F(NvlsPolicy, UnsupportedDeviceTurnsItOff) {
  g_supported = 0;
  const NvlsDecision decision = decide();
  EXPECT_FALSE(decision.use);
  EXPECT_NE(decision.reason.find("no multicast support"), std::string::npos) << decision.reason;
}

TEST_F(NvlsPolicy, OtherBackendsMakeNoDriverCall) {
  for (const char *backend : {"ipc", "shm"}) {
    EXPECT_FALSE(decide(backend).use) << backend;
    EXPECT_EQ(nvls_driver_calls(), 0u) << backend;
  }
}

TEST_F(NvlsPolicy, HeapNotAMultipleOfTheGranularity) {
  const NvlsDecision decision = decide("vmm", 3u << 20);
  EXPECT_FALSE(decision.use);
  EXPECT_NE(decision.reason.find("granularity"), std::string::npos) << decision.reason;
}

TEST_F(NvlsPolicy, RealResolverForbiddenMakesNoCall) {
  // The production resolver (cudaGetDriverEntryPointByVersion), as on the GPU test host: never reached.
  nvls_set_resolver_for_testing(nullptr);
  for (const char *name : {"TSHMEM_DISABLE_NVLS", "NVSHMEM_DISABLE_NVLS"}) {
    fake_env().clear();
    fake_env()[name] = "1";
    EXPECT_FALSE(decide().use);
    EXPECT_EQ(nvls_driver_calls(), 0u) << name;
  }
  fake_env() = {{"NCCL_NVLS_ENABLE", "0"}};
  EXPECT_FALSE(decide().use);
  EXPECT_EQ(nvls_driver_calls(), 0u);
}

}  // namespace
}  // namespace tshmemi
