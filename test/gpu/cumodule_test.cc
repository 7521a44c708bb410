// tshmemx_cumodule_init: a module loaded at run time gets the same device state as the registered units.
// The modules are PTX text (no nvcc at test time); the driver entry points the test itself needs are
// resolved through the runtime, like the library does, so this binary does not link libcuda either.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstring>
#include <string>

#include "gpu_test_env.h"
#include "tshmem/device/state_types.h"

namespace tshmem_test {
namespace {

struct Driver {
  PFN_cuModuleLoadData_v2000 load = nullptr;
  PFN_cuModuleUnload_v2000 unload = nullptr;
  PFN_cuModuleGetGlobal_v3020 get_global = nullptr;

  bool resolve() {
    cudaDriverEntryPointQueryResult q1, q2, q3;
    return cudaGetDriverEntryPointByVersion("cuModuleLoadData", reinterpret_cast<void **>(&load), 2000,
                                            cudaEnableDefault, &q1) == cudaSuccess &&
           cudaGetDriverEntryPointByVersion("cuModuleUnload", reinterpret_cast<void **>(&unload), 2000,
                                            cudaEnableDefault, &q2) == cudaSuccess &&
           cudaGetDriverEntryPointByVersion("cuModuleGetGlobal", reinterpret_cast<void **>(&get_global), 3020,
                                            cudaEnableDefault, &q3) == cudaSuccess &&
           load && unload && get_global;
  }
};

// A PTX module holding one byte array `name` of `bytes` bytes in state space `space`: .const (a module built
// without -rdc) or .global (built with -rdc, where the state is a __device__ variable: state.cuh says why).
std::string ptx_with_constant(const char *name, size_t bytes, const char *space = ".const") {
  return std::string(".version 7.8\n.target sm_75\n.address_size 64\n") + ".visible " + space + " .align 8 .b8 " +
         name + "[" + std::to_string(bytes) + "];\n";
}

TEST_P(GpuBackendTest, CuModuleInitFillsTheModulesState) {
  Driver driver;
  ASSERT_TRUE(driver.resolve()) << "driver entry points for the test";
  for (const char *space : {".const", ".global"}) {
    SCOPED_TRACE(space);
    const std::string ptx = ptx_with_constant("tshmemi_device_state_c", sizeof(tshmemi_device_state), space);
    CUmodule module = nullptr;
    ASSERT_EQ(driver.load(&module, ptx.c_str()), CUDA_SUCCESS);
    EXPECT_EQ(tshmemx_cumodule_init(module), 0) << tshmemx_last_error();

    CUdeviceptr address = 0;
    size_t bytes = 0;
    EXPECT_EQ(driver.get_global(&address, &bytes, module, "tshmemi_device_state_c"), CUDA_SUCCESS);
    tshmemi_device_state in_module, view;
    std::memset(&in_module, 0, sizeof(in_module));
    EXPECT_CUDA_OK(cudaMemcpy(&in_module, reinterpret_cast<void *>(address), sizeof(in_module), cudaMemcpyDefault));
    ASSERT_EQ(tshmemx_device_view(&view), 0);
    EXPECT_EQ(std::memcmp(&in_module, &view, sizeof(view)), 0) << "module state differs from the device view";
    EXPECT_EQ(in_module.my_pe, me_);
    EXPECT_EQ(in_module.heap_base, reinterpret_cast<uint64_t>(tshmemx_heap_base()));
    driver.unload(module);
  }
}

TEST_P(GpuBackendTest, CuModuleInitRejectsModulesWithoutTheState) {
  Driver driver;
  ASSERT_TRUE(driver.resolve());
  EXPECT_EQ(tshmemx_cumodule_init(nullptr), TSHMEM_ERR_INVALID_ARG);

  CUmodule missing = nullptr;
  ASSERT_EQ(driver.load(&missing, ptx_with_constant("something_else", 64).c_str()), CUDA_SUCCESS);
  EXPECT_EQ(tshmemx_cumodule_init(missing), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("-DTSHMEM_CUMODULE"), std::string::npos) << tshmemx_last_error();
  driver.unload(missing);

  CUmodule wrong_size = nullptr;
  ASSERT_EQ(driver.load(&wrong_size, ptx_with_constant("tshmemi_device_state_c", 96).c_str()), CUDA_SUCCESS);
  EXPECT_EQ(tshmemx_cumodule_init(wrong_size), TSHMEM_ERR_CONFIG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("96 bytes"), std::string::npos) << tshmemx_last_error();
  driver.unload(wrong_size);
}

}  // namespace
}  // namespace tshmem_test
