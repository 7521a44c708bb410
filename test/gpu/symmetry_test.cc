// Bug report (a): PE 1 allocated a private block before the shared one, so the PEs' heaps diverged and a
// write through PE 0's view of PE 1's buffer landed elsewhere. tshmem must refuse the mismatched call on
// every PE; with matching calls the write must land exactly where PE 1 reads.
#include <cstdint>
#include <vector>

#include "gpu_test_env.h"

namespace tshmem_test {
namespace {

constexpr size_t kShared = 1 << 20;
constexpr size_t kSlotBase = 4096;  // away from the block's start, so a wrong base shows as a wrong place

uint64_t magic_of(int pe) { return 0x7473686d656d0000ull | static_cast<uint64_t>(pe); }
size_t slot_of(int pe) { return kSlotBase + 8 * static_cast<size_t>(pe); }

TEST_P(GpuBackendTest, PrivateBlockBeforeSharedOneFailsOnEveryPe) {
  if (n_ < 2) GTEST_SKIP() << "needs at least 2 PEs";
  // PE 1's extra private 4 KiB block meets PE 0's shared allocation in the same collective call.
  void *diverged = tshmem_malloc(me_ == 1 ? 4096 : kShared);
  const int code = tshmemx_last_error_code();
  const std::string message = tshmemx_last_error();
  EXPECT_EQ(diverged, nullptr);
  EXPECT_EQ(code, TSHMEM_ERR_ASYMMETRIC) << message;
  EXPECT_NE(message.find("divergent PE 1"), std::string::npos) << message;
  EXPECT_NE(message.find("4096"), std::string::npos) << message;
  EXPECT_TRUE(all_pes(diverged == nullptr)) << "some PE got a block from an asymmetric call";
}

TEST_P(GpuBackendTest, WriteThroughPeerViewLandsWhereThePeerReads) {
  char *buf = static_cast<char *>(tshmem_calloc(1, kShared));
  ASSERT_TRUE(all_pes(buf != nullptr)) << tshmemx_last_error();
  // Same offset on every PE.
  const auto offsets = allgather(static_cast<long long>(buf - static_cast<char *>(tshmemx_heap_base())));
  for (int pe = 0; pe < n_; ++pe) {
    EXPECT_EQ(offsets[static_cast<size_t>(pe)], offsets[0]) << "PE " << pe;
  }

  // Every PE writes its magic value into every other PE's copy (both directions at once), at its own slot,
  // with a plain cudaMemcpy through the address tshmem_ptr gives.
  const uint64_t magic = magic_of(me_);
  for (int pe = 0; pe < n_; ++pe) {
    if (pe == me_) continue;
    char *remote = static_cast<char *>(tshmem_ptr(buf, pe));
    EXPECT_NE(remote, nullptr) << "no load/store view of PE " << pe;
    if (remote != nullptr) {
      EXPECT_CUDA_OK(cudaMemcpy(remote + slot_of(me_), &magic, sizeof(magic), cudaMemcpyHostToDevice));
    }
  }
  tshmem_barrier_all();

  std::vector<uint64_t> slots(static_cast<size_t>(n_) + 1, ~0ull);
  EXPECT_CUDA_OK(cudaMemcpy(slots.data(), buf + kSlotBase, slots.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  for (int pe = 0; pe < n_; ++pe) {
    const uint64_t expected = pe == me_ ? 0 : magic_of(pe);  // nobody writes my own slot
    EXPECT_EQ(slots[static_cast<size_t>(pe)], expected) << "slot of PE " << pe << " on PE " << me_;
  }
  EXPECT_EQ(slots[static_cast<size_t>(n_)], 0u) << "a write landed past the last slot";
  tshmem_barrier_all();
  tshmem_free(buf);
}

}  // namespace
}  // namespace tshmem_test
