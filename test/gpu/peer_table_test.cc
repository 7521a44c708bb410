// Bug report (c): a peer table with a hole (the own slot left 0) made tshmem_ptr(p, my_pe) NULL. With 1 PE
// and with 2: the own slot is the heap base, tshmem_ptr(p, my_pe) == p, no mapped peer's slot is 0; and the
// device view (the state every kernel reads) says the same, including its global-memory mirror.
#include <cstdint>
#include <vector>

#include "gpu_test_env.h"
#include "tshmem/device/state_types.h"

namespace tshmem_test {
namespace {

TEST_P(GpuBackendTest, OwnSlotIsHeapBaseAndNoMappedPeerIsNull) {
  char *base = static_cast<char *>(tshmemx_heap_base());
  ASSERT_TRUE(all_pes(base != nullptr));
  EXPECT_EQ(tshmemx_peer_base(me_), base);
  EXPECT_STREQ(tshmemx_backend_name(), GetParam().c_str());
  EXPECT_GE(tshmemx_cuda_device(), 0);

  char *p = static_cast<char *>(tshmem_malloc(4096));
  ASSERT_TRUE(all_pes(p != nullptr)) << tshmemx_last_error();
  EXPECT_EQ(tshmem_ptr(p, me_), p);
  EXPECT_EQ(tshmem_ptr(p + 100, me_), p + 100);
  const bool single_node = tshmemx_local_n_pes() == n_;
  for (int pe = 0; pe < n_; ++pe) {
    char *peer = static_cast<char *>(tshmemx_peer_base(pe));
    if (single_node) {
      EXPECT_NE(peer, nullptr) << "node-local PE " << pe << " has no mapping on PE " << me_;
    }
    if (peer != nullptr) {
      EXPECT_EQ(tshmem_ptr(p, pe), peer + (p - base)) << "PE " << pe;
    }
    if (pe != me_ && peer != nullptr) {
      EXPECT_NE(peer, base) << "PE " << pe << "'s heap mapped at our own base";
    }
  }
  EXPECT_EQ(tshmem_ptr(p, n_), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_PE);
  EXPECT_EQ(tshmem_ptr(p, -1), nullptr);
  tshmem_free(p);
}

TEST_P(GpuBackendTest, DeviceViewDescribesThisPe) {
  tshmemi_device_state state;
  ASSERT_EQ(tshmemx_device_view(&state), 0) << tshmemx_last_error();
  EXPECT_EQ(state.version, TSHMEMI_DEVICE_STATE_VERSION);
  EXPECT_EQ(state.size, sizeof(tshmemi_device_state));
  EXPECT_EQ(state.my_pe, me_);
  EXPECT_EQ(state.n_pes, n_);
  EXPECT_TRUE(state.flags & TSHMEMI_STATE_INITIALIZED);
  EXPECT_TRUE(state.flags & TSHMEMI_STATE_GPU_HEAP);
  EXPECT_FALSE(state.flags & TSHMEMI_STATE_MULTICAST) << "multicast must stay off here";
  EXPECT_EQ(state.mc_base, 0u);
  EXPECT_EQ(state.local_n_pes, tshmemx_local_n_pes());
  EXPECT_EQ(state.heap_base, reinterpret_cast<uint64_t>(tshmemx_heap_base()));
  EXPECT_EQ(state.heap_size, tshmemx_heap_size());
  EXPECT_EQ(state.wait_timeout_ns, 250u * 1000000u);  // TSHMEM_WAIT_TIMEOUT_MS=250 in the fixture
  EXPECT_EQ(state.peer_base[me_], state.heap_base);
  for (int pe = 0; pe < n_; ++pe)
    EXPECT_EQ(state.peer_base[pe], reinterpret_cast<uint64_t>(tshmemx_peer_base(pe))) << "PE " << pe;
  for (int pe = n_; pe < TSHMEM_MAX_PES; ++pe) {
    EXPECT_EQ(state.peer_base[pe], 0u) << "slot past n_pes: " << pe;
  }

  ASSERT_NE(state.peer_base_global, nullptr);
  std::vector<uint64_t> mirror(static_cast<size_t>(n_), 0);
  EXPECT_CUDA_OK(
      cudaMemcpy(mirror.data(), state.peer_base_global, mirror.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  for (int pe = 0; pe < n_; ++pe) {
    EXPECT_EQ(mirror[static_cast<size_t>(pe)], state.peer_base[pe]) << "mirror, PE " << pe;
  }
}

}  // namespace
}  // namespace tshmem_test
