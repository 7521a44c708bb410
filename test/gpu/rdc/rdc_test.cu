// The device API under separate compilation (-rdc): 16 units, each with its own kernel, device-link
// into one program with one device state (16 per-unit copies would not fit the 64 KiB constant bank), and
// every unit's kernel reaches the right peer: each writes a distinct value into the next PE's inbox, and
// every PE checks all 16 slots against what its previous PE's units wrote. The same program links a shared
// library built without -rdc and dlopens a module built without and one built with -rdc: each binary keeps its
// own copy, and all see the same state.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "device_test_util.h"
#include "rdc_units.h"
#include "tshmem/device/tshmem_device.cuh"

__device__ int rdc_value(int pe, int unit) { return 1000 * (pe + 1) + unit; }

extern "C" int device_state_lib_read(long long *out);  // device_state_lib.cu, built without -rdc

namespace {

using UnitPut = cudaError_t (*)(int *);

const UnitPut kUnitPuts[] = {rdc_unit_put_0,  rdc_unit_put_1,  rdc_unit_put_2,  rdc_unit_put_3,
                             rdc_unit_put_4,  rdc_unit_put_5,  rdc_unit_put_6,  rdc_unit_put_7,
                             rdc_unit_put_8,  rdc_unit_put_9,  rdc_unit_put_10, rdc_unit_put_11,
                             rdc_unit_put_12, rdc_unit_put_13, rdc_unit_put_14, rdc_unit_put_15};
static_assert(sizeof(kUnitPuts) / sizeof(kUnitPuts[0]) == kRdcUnits, "one launcher per unit");

/// Same as rdc_value, on the host.
int expected_value(int pe, int unit) { return 1000 * (pe + 1) + unit; }

__global__ void read_my_pe(int *out) { *out = tshmem::my_pe(); }

/// my_pe and n_pes as the host API reports them (what every binary's device state must say).
std::vector<long long> expected_pes() { return {tshmem_my_pe(), tshmem_n_pes()}; }

/// my_pe and n_pes as the module at `path` (device_state_lib.cu as a module, dlopened now) sees them.
std::vector<long long> read_through_module(const std::string &path) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  if (handle == nullptr) return {};
  using ReadFn = int (*)(long long *);
  auto read = reinterpret_cast<ReadFn>(dlsym(handle, "device_state_module_read"));
  EXPECT_NE(read, nullptr) << dlerror();
  std::vector<long long> out(10, -1);
  if (read != nullptr) EXPECT_EQ(read(out.data()), 0);
  dlclose(handle);
  out.resize(2);
  return out;
}

TEST(DeviceRdc, EveryUnitReachesTheNextPe) {
  TSHMEM_REQUIRE_GPU();
  tshmem_device_test::SymBuffer inbox(kRdcUnits * sizeof(int));
  for (int unit = 0; unit < kRdcUnits; ++unit) TSHMEM_CUDA_EXPECT(kUnitPuts[unit](inbox.get<int>()));
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();

  std::vector<int> got(kRdcUnits, -1);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(got.data(), inbox.get(), inbox.bytes(), cudaMemcpyDeviceToHost));
  const int prev = (tshmem_my_pe() + tshmem_n_pes() - 1) % tshmem_n_pes();
  for (int unit = 0; unit < kRdcUnits; ++unit)
    EXPECT_EQ(got[unit], expected_value(prev, unit)) << "slot " << unit << " on PE " << tshmem_my_pe();
  tshmem_barrier_all();  // no PE frees the inbox while another still writes
}

// The unit that holds main reads the same state as the generated ones.
TEST(DeviceRdc, MainUnitSeesTheState) {
  TSHMEM_REQUIRE_GPU();
  int *dev = nullptr;
  int my_pe = -1;
  TSHMEM_CUDA_EXPECT(cudaMalloc(&dev, sizeof(int)));
  read_my_pe<<<1, 1>>>(dev);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&my_pe, dev, sizeof(int), cudaMemcpyDeviceToHost));
  TSHMEM_CUDA_EXPECT(cudaFree(dev));
  EXPECT_EQ(my_pe, tshmem_my_pe());
}

TEST(DeviceRdc, SharedLibraryWithoutRdcSeesTheState) {
  TSHMEM_REQUIRE_GPU();
  std::vector<long long> out(10, -1);
  EXPECT_EQ(device_state_lib_read(out.data()), 0);
  out.resize(2);
  EXPECT_EQ(out, expected_pes());
}

TEST(DeviceRdc, ModulesWithAndWithoutRdcSeeTheState) {
  TSHMEM_REQUIRE_GPU();
  EXPECT_EQ(read_through_module(TSHMEM_DEVICE_STATE_MODULE_PATH), expected_pes()) << "module without -rdc";
  EXPECT_EQ(read_through_module(TSHMEM_DEVICE_RDC_MODULE_PATH), expected_pes()) << "module with -rdc";
}

}  // namespace
