// The vmm heap backed as it is used (docs/design.md, "A GPU heap backed as it is used"): init backs only a first
// chunk of an 8 GiB heap; allocations past the backed part grow it on every PE alike, and peers' writes across a
// chunk boundary land (from the host and from a kernel through the peer's mapping); an allocation the device cannot
// back fails on every PE with the same message, with nothing lost; host calls refuse the part not yet backed.
// Nothing here times anything: what init does is observed through tshmemx_heap_backed_bytes.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_env.h"
#include "tshmem/device/internal_regions.h"  // TSHMEM_INTERNAL_HEAP_BYTES
#include "tshmem/tshmemx.h"

namespace tshmem_test {
namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

__global__ void fill_words(uint32_t *dst, size_t words, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = seed * 2654435761u + static_cast<uint32_t>(i);
}

uint32_t word(uint32_t seed, size_t i) { return seed * 2654435761u + static_cast<uint32_t>(i); }

/// Every PE's text, by PE.
std::vector<std::string> allgather_text(const std::string &mine) {
  char buf[4096] = {};
  std::strncpy(buf, mine.c_str(), sizeof(buf) - 1);
  std::vector<char> all(sizeof(buf) * static_cast<size_t>(world_size()));
  MPI_Allgather(buf, sizeof(buf), MPI_CHAR, all.data(), sizeof(buf), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int pe = 0; pe < world_size(); ++pe) out.emplace_back(all.data() + sizeof(buf) * static_cast<size_t>(pe));
  return out;
}

bool same_on_every_pe(long long mine) {
  for (long long v : allgather(mine))
    if (v != mine) return false;
  return true;
}

class LazyHeap : public ::testing::Test {
 protected:
  void init(const char *backend, const char *heap) {
    TSHMEM_SKIP_WITHOUT_GPUS();
    ScopedEnv b("TSHMEM_MEM_BACKEND", backend);
    ScopedEnv s("TSHMEM_SYMMETRIC_SIZE", heap);
    const int rc = tshmem_init();
    const std::string error = tshmemx_last_error();
    ASSERT_TRUE(all_pes(rc == 0)) << "tshmem_init (" << backend << ", heap " << heap << "): " << error;
    inited_ = true;
    me_ = tshmem_my_pe();
    n_ = tshmem_n_pes();
  }
  void TearDown() override {
    if (inited_) tshmem_finalize();
  }
  uint64_t offset_of(const void *p) const {
    return static_cast<uint64_t>(static_cast<const char *>(p) - static_cast<const char *>(tshmemx_heap_base()));
  }

  bool inited_ = false;
  int me_ = -1, n_ = 0;
};

TEST_F(LazyHeap, InitBacksOnlyTheFirstChunkOfAn8GiBHeap) {
  init("vmm", "8G");
  if (!inited_) return;
  const uint64_t backed = tshmemx_heap_backed_bytes();
  EXPECT_EQ(tshmemx_heap_size(), 8 * kGiB);
  EXPECT_GE(backed, uint64_t{TSHMEM_INTERNAL_HEAP_BYTES}) << "tshmem's own region is backed at init";
  EXPECT_LT(backed, 8 * kGiB) << "init backed the whole heap";
  EXPECT_LE(backed, uint64_t{TSHMEM_INTERNAL_HEAP_BYTES} + 64 * kMiB) << "init backs a first chunk only";
  EXPECT_TRUE(same_on_every_pe(static_cast<long long>(backed))) << "every PE backs the same part";
  // The peer table is as before: the own slot is the own base, every node peer has a base.
  EXPECT_EQ(tshmem_ptr(tshmemx_heap_base(), me_), tshmemx_heap_base());
  for (int pe = 0; pe < n_; ++pe) EXPECT_NE(tshmem_ptr(tshmemx_heap_base(), pe), nullptr) << "PE " << pe;
}

TEST_F(LazyHeap, IpcBacksTheWholeHeapAtInit) {
  init("ipc", "1G");
  if (!inited_) return;
  EXPECT_EQ(tshmemx_heap_backed_bytes(), tshmemx_heap_size());
}

// Each PE writes a pattern into the next PE's copy of `block` (a kernel through the peer mapping, or host putmem);
// each then checks its own copy holds its predecessor's pattern, across the chunk boundary too.
void write_to_next_and_check(void *block, size_t bytes, int me, int n, bool from_kernel, uint32_t salt) {
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t words = bytes / sizeof(uint32_t);
  if (from_kernel) {
    auto *remote = static_cast<uint32_t *>(tshmem_ptr(block, next));
    ASSERT_NE(remote, nullptr);
    fill_words<<<264, 256>>>(remote, words, static_cast<uint32_t>(me) + salt);
    EXPECT_CUDA_OK(cudaGetLastError());
    EXPECT_CUDA_OK(cudaDeviceSynchronize());
  } else {
    std::vector<uint32_t> src(words);
    for (size_t i = 0; i < words; ++i) src[i] = word(static_cast<uint32_t>(me) + salt, i);
    EXPECT_EQ(tshmem_putmem(block, src.data(), bytes, next), 0) << tshmemx_last_error();
  }
  tshmem_barrier_all();
  std::vector<uint32_t> mine(words);
  EXPECT_CUDA_OK(cudaMemcpy(mine.data(), block, bytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0, first_wrong = words;
  for (size_t i = 0; i < words; ++i)
    if (mine[i] != word(static_cast<uint32_t>(prev) + salt, i)) {
      if (wrong++ == 0) first_wrong = i;
    }
  EXPECT_EQ(wrong, 0u) << "PE " << me << ": " << wrong << " words of PE " << prev << "'s "
                       << (from_kernel ? "kernel" : "putmem") << " are wrong, the first at byte "
                       << first_wrong * sizeof(uint32_t);
  tshmem_barrier_all();
}

TEST_F(LazyHeap, AllocationsGrowTheBackedPartAndPeersWriteAcrossChunkBoundaries) {
  init("vmm", "8G");
  if (!inited_) return;
  const uint64_t first = tshmemx_heap_backed_bytes();
  // Inside the first chunk: nothing grows.
  void *inside = tshmem_malloc(first - TSHMEM_INTERNAL_HEAP_BYTES - 2 * kMiB);
  ASSERT_TRUE(all_pes(inside != nullptr)) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_heap_backed_bytes(), first);

  // A block across the first chunk's end: the heap grows (geometrically: at least twice the first chunk).
  void *across = tshmem_malloc(8 * kMiB);
  ASSERT_TRUE(all_pes(across != nullptr)) << tshmemx_last_error();
  EXPECT_LT(offset_of(across), first);
  EXPECT_GT(offset_of(across) + 8 * kMiB, first) << "the block should cross the first chunk's end";
  const uint64_t second = tshmemx_heap_backed_bytes();
  EXPECT_GE(second, 2 * first);
  EXPECT_TRUE(same_on_every_pe(static_cast<long long>(second)));
  write_to_next_and_check(across, 8 * kMiB, me_, n_, true, 1);
  write_to_next_and_check(across, 8 * kMiB, me_, n_, false, 2);

  // A large block: the heap grows to hold it; calloc's block reads zero on every PE.
  void *large = tshmem_calloc(1, 1 * kGiB + 12345);
  ASSERT_TRUE(all_pes(large != nullptr)) << tshmemx_last_error();
  const uint64_t third = tshmemx_heap_backed_bytes();
  EXPECT_GE(third, offset_of(large) + 1 * kGiB + 12345);
  EXPECT_LT(third, 8 * kGiB);
  EXPECT_TRUE(same_on_every_pe(static_cast<long long>(third)));
  {
    std::vector<uint8_t> bytes(1 * kGiB + 12345);
    EXPECT_CUDA_OK(cudaMemcpy(bytes.data(), large, bytes.size(), cudaMemcpyDeviceToHost));
    size_t nonzero = 0;
    for (uint8_t b : bytes) nonzero += b != 0;
    EXPECT_EQ(nonzero, 0u) << "tshmem_calloc's block is not zero";
  }
  write_to_next_and_check(large, 1 * kGiB, me_, n_, true, 3);

  // Free does not give memory back; the backed part serves the next allocation without growing.
  tshmem_free(large);
  EXPECT_EQ(tshmemx_heap_backed_bytes(), third);
  void *again = tshmem_malloc(512 * kMiB);
  ASSERT_TRUE(all_pes(again != nullptr)) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_heap_backed_bytes(), third);
  tshmem_free(again);
  tshmem_free(across);
  tshmem_free(inside);
}

TEST_F(LazyHeap, HostCallsRefuseThePartNotYetBacked) {
  init("vmm", "8G");
  if (!inited_) return;
  char *past = static_cast<char *>(tshmemx_heap_base()) + tshmemx_heap_backed_bytes() + 4096;
  uint64_t value = 42;
  const int rc = tshmem_putmem(past, &value, sizeof(value), (me_ + 1) % n_);
  EXPECT_EQ(rc, TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("past the part of the heap backed by memory"), std::string::npos)
      << tshmemx_last_error();
  tshmem_barrier_all();
}

TEST_F(LazyHeap, AnAllocationTheDeviceCannotBackFailsOnEveryPeWithTheSameMessage) {
  // A heap larger than the device's memory: its addresses are reserved, its memory cannot all be created.
  TSHMEM_SKIP_WITHOUT_GPUS();
  cudaDeviceProp prop;
  EXPECT_CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  long long total = static_cast<long long>(prop.totalGlobalMem);
  for (long long v : allgather(total)) total = v > total ? v : total;
  const uint64_t heap = (static_cast<uint64_t>(total) / kGiB + 16) * kGiB;
  const std::string heap_text = std::to_string(heap);
  init("vmm", heap_text.c_str());
  if (!inited_) return;
  void *keep = tshmem_malloc(4 * kMiB);
  ASSERT_TRUE(all_pes(keep != nullptr)) << tshmemx_last_error();
  const uint64_t backed = tshmemx_heap_backed_bytes();

  const uint64_t too_much = static_cast<uint64_t>(total) + 4 * kGiB;
  void *p = tshmem_malloc(too_much);
  const std::string error = tshmemx_last_error();
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(error.find("tshmem_malloc(size = " + std::to_string(too_much) + ")"), std::string::npos) << error;
  EXPECT_NE(error.find("cannot be backed by device memory"), std::string::npos) << error;
  EXPECT_NE(error.find("TSHMEM_SYMMETRIC_SIZE"), std::string::npos) << error;
  EXPECT_NE(error.find("Nothing was allocated"), std::string::npos) << error;
  for (const std::string &other : allgather_text(error)) EXPECT_EQ(other, error) << "PEs report different messages";
  EXPECT_EQ(tshmemx_heap_backed_bytes(), backed) << "a refused allocation left memory backed";

  // Where PEs share a device, one PE may create its part and another not: every PE still refuses alike.
  if (n_ > 1) {
    void *q = tshmem_calloc(1, static_cast<uint64_t>(total) * 6 / 10);
    const bool refused = q == nullptr;
    EXPECT_TRUE(same_on_every_pe(refused ? 1 : 0)) << "PEs disagree on the allocation";
    if (refused) {
      const std::string text = tshmemx_last_error();
      for (const std::string &other : allgather_text(text)) EXPECT_EQ(other, text);
      EXPECT_EQ(tshmemx_heap_backed_bytes(), backed);
    } else {
      tshmem_free(q);
    }
  }

  // Nothing was lost: the earlier block is intact and usable, and the next allocation works.
  write_to_next_and_check(keep, 4 * kMiB, me_, n_, false, 7);
  void *small = tshmem_malloc(64 * kMiB);
  EXPECT_TRUE(all_pes(small != nullptr)) << tshmemx_last_error();
  write_to_next_and_check(small, 64 * kMiB, me_, n_, true, 8);
  tshmem_free(small);
  tshmem_free(keep);
}

}  // namespace
}  // namespace tshmem_test

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tshmem_test::install_mpi_environment(&argc, &argv);
  return RUN_ALL_TESTS();
}
