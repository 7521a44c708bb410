// The device state reaches every unit without -rdc: this unit, a unit in a shared library, a module loaded
// with dlopen after init (filled on arrival) and the by-value path all see the same my_pe, n_pes and peer
// table; the own slot is the heap base and ptr(p, my_pe) == p on the device (bug (c)).
#include <dlfcn.h>

#include <vector>

#include "device_test_util.h"
#include "tshmem/device/tshmem_device.cuh"

extern "C" int device_state_lib_read(long long *out);

namespace {

__global__ void read_constant(long long *out) {
  out[0] = tshmem::my_pe();
  out[1] = tshmem::n_pes();
  for (int pe = 0; pe < tshmem::n_pes() && pe < 8; ++pe)
    out[2 + pe] = static_cast<long long>(tshmemi::state().peer_base[pe]);
}

__global__ void read_by_value(const __grid_constant__ tshmemi_device_state st, long long *out) {
  out[0] = tshmem::my_pe(st);
  out[1] = tshmem::n_pes(st);
  for (int pe = 0; pe < tshmem::n_pes(st) && pe < 8; ++pe) out[2 + pe] = static_cast<long long>(st.peer_base[pe]);
}

std::vector<long long> expected() {
  std::vector<long long> want(10, 0);
  want[0] = tshmem_my_pe();
  want[1] = tshmem_n_pes();
  for (int pe = 0; pe < tshmem_n_pes() && pe < 8; ++pe)
    want[2 + pe] = static_cast<long long>(reinterpret_cast<uintptr_t>(tshmemx_peer_base(pe)));
  return want;
}

std::vector<long long> run_here(bool by_value) {
  long long *dev = nullptr;
  std::vector<long long> out(10, -1);
  TSHMEM_CUDA_EXPECT(cudaMalloc(&dev, 10 * sizeof(long long)));
  TSHMEM_CUDA_EXPECT(cudaMemset(dev, 0, 10 * sizeof(long long)));
  if (by_value) {
    tshmemi_device_state st;
    EXPECT_EQ(tshmemx_device_view(&st), 0) << tshmemx_last_error();
    read_by_value<<<1, 1>>>(st, dev);
  } else {
    read_constant<<<1, 1>>>(dev);
  }
  TSHMEM_CUDA_EXPECT(cudaMemcpy(out.data(), dev, 10 * sizeof(long long), cudaMemcpyDeviceToHost));
  TSHMEM_CUDA_EXPECT(cudaFree(dev));
  return out;
}

TEST(DeviceState, ThisUnitSeesTheTable) {
  TSHMEM_REQUIRE_GPU();
  EXPECT_EQ(run_here(false), expected());
}

TEST(DeviceState, ByValueViewMatches) {
  TSHMEM_REQUIRE_GPU();
  EXPECT_EQ(run_here(true), expected());
}

TEST(DeviceState, SharedLibraryUnitSeesTheSameState) {
  TSHMEM_REQUIRE_GPU();
  std::vector<long long> out(10, -1);
  EXPECT_EQ(device_state_lib_read(out.data()), 0);
  EXPECT_EQ(out, expected());
}

TEST(DeviceState, ModuleLoadedAfterInitIsFilledOnArrival) {
  TSHMEM_REQUIRE_GPU();
  void *handle = dlopen(TSHMEM_DEVICE_STATE_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using ReadFn = int (*)(long long *);
  auto read = reinterpret_cast<ReadFn>(dlsym(handle, "device_state_module_read"));
  ASSERT_NE(read, nullptr) << dlerror();
  std::vector<long long> out(10, -1);
  EXPECT_EQ(read(out.data()), 0);
  EXPECT_EQ(out, expected());
  dlclose(handle);  // the unit unregisters from its static destructor
}

// ---- bug (c): own slot == heap base, ptr(p, me) == p, mapped peers non-NULL --------------------------------

__global__ void check_ptr(char *p, size_t heap_bytes, long long *out) {
  const int me = tshmem::my_pe();
  out[0] = tshmem::ptr(p, me) == p;
  out[1] = tshmem::ptr(p + 100, me) == p + 100;
  out[2] = static_cast<long long>(tshmemi::state().peer_base[me]);
  long long null_peers = 0;
  for (int pe = 0; pe < tshmem::n_pes(); ++pe) null_peers += tshmem::ptr(p, pe) == nullptr;
  out[3] = null_peers;
  out[4] = tshmem::ptr(p, tshmem::n_pes()) == nullptr && tshmem::ptr(p, -1) == nullptr;  // never traps
  (void)heap_bytes;
}

TEST(DeviceState, OwnSlotIsHeapBaseAndPtrOfSelfIsIdentity) {
  TSHMEM_REQUIRE_GPU();
  tshmem_device_test::SymBuffer buf(4096), out(5 * sizeof(long long));
  check_ptr<<<1, 1>>>(buf.get(), tshmemx_heap_size(), out.get<long long>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  long long host[5] = {};
  TSHMEM_CUDA_EXPECT(cudaMemcpy(host, out.get(), sizeof(host), cudaMemcpyDeviceToHost));
  EXPECT_EQ(host[0], 1) << "ptr(p, my_pe) != p";
  EXPECT_EQ(host[1], 1);
  EXPECT_EQ(host[2], static_cast<long long>(reinterpret_cast<uintptr_t>(tshmemx_heap_base())));
  EXPECT_EQ(host[3], 0) << "a PE of this node has no mapping";  // the test runs on one node
  EXPECT_EQ(host[4], 1);
  EXPECT_EQ(tshmem_ptr(buf.get(), tshmem_my_pe()), buf.get()) << "host side";
}

}  // namespace
