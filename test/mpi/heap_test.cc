// The collective symmetric heap across real processes: symmetric offsets, the symmetry check's verdicts
// (the first bug report among them), agreement on errors, exhaustion, calloc, free.
#include <cstring>
#include <vector>

#include "fixture.h"
#include "tshmem/device/internal_regions.h"

namespace tshmem_test {
namespace {

using Heap = TshmemTest;

// The first block of an empty heap starts right after tshmem's own region.
constexpr long long kFirstOffset = TSHMEM_INTERNAL_HEAP_BYTES;

long long offset_of(const void *p) {
  return p ? static_cast<long long>(static_cast<const char *>(p) - static_cast<const char *>(tshmemx_heap_base())) : -1;
}

bool same_everywhere(long long value) {
  for (long long v : allgather(value))
    if (v != value) return false;
  return true;
}

TEST_F(Heap, AllocationsHaveTheSameOffsetOnEveryPe) {
  std::vector<void *> blocks;
  for (size_t size : {1, 100, 4096, 65536, 1 << 20}) {
    void *p = tshmem_malloc(size);
    ASSERT_NE(p, nullptr) << last_error();
    EXPECT_TRUE(same_everywhere(offset_of(p)));
    blocks.push_back(p);
  }
  tshmem_free(blocks[1]);
  void *reused = tshmem_align(4096, 3000);
  ASSERT_NE(reused, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(reused) % 4096, 0u);
  EXPECT_TRUE(same_everywhere(offset_of(reused)));
  for (void *p : blocks)
    if (p != blocks[1]) tshmem_free(p);
  tshmem_free(reused);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
}

// Bug report 1: PE 1 allocates a private 4 KiB block before the shared one. Every PE must fail, with a
// message naming PE 1, and nothing may be allocated; the next matching allocation works.
TEST_F(Heap, PrivateAllocationBeforeASharedOneFailsEverywhereNamingThePe) {
  if (n_ < 2) GTEST_SKIP() << "needs 2 PEs to diverge";
  void *p = tshmem_malloc(me_ == 1 ? 4096 : 1 << 20);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  const std::string message = last_error();
  EXPECT_NE(message.find("tshmem_malloc"), std::string::npos) << message;
  EXPECT_NE(message.find(n_ == 2 ? "divergent PE 1." : "divergent PE 1."), std::string::npos) << message;
  EXPECT_NE(message.find("size=4096"), std::string::npos) << message;
  EXPECT_NE(message.find("size=1048576"), std::string::npos) << message;
  // Every PE holds the very same message.
  const auto lengths = allgather(static_cast<long long>(std::hash<std::string>{}(message)));
  for (long long h : lengths) EXPECT_EQ(h, lengths[0]);

  void *shared = tshmem_malloc(1 << 20);
  ASSERT_NE(shared, nullptr) << last_error();
  EXPECT_TRUE(same_everywhere(offset_of(shared)));
  EXPECT_EQ(offset_of(shared), kFirstOffset) << "the failed call left nothing allocated";
  tshmem_free(shared);
}

TEST_F(Heap, DivergentSizeOrderAlignmentAndKindAreAllCaught) {
  if (n_ < 2) GTEST_SKIP() << "needs 2 PEs to diverge";
  const bool odd = me_ % 2 == 1;
  // Order: A then B on even PEs, B then A on odd ones. Both calls fail.
  void *first = tshmem_malloc(odd ? 8192 : 4096);
  void *second = tshmem_malloc(odd ? 4096 : 8192);
  EXPECT_EQ(first, nullptr);
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);

  void *aligned = tshmem_align(odd ? 1024 : 512, 4096);
  EXPECT_EQ(aligned, nullptr);
  EXPECT_NE(last_error().find("alignment=1024"), std::string::npos) << last_error();

  void *kind = odd ? tshmem_calloc(1, 4096) : tshmem_malloc(4096);
  EXPECT_EQ(kind, nullptr);
  EXPECT_NE(last_error().find("tshmem_calloc(size=4096)"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("tshmem_malloc(size=4096)"), std::string::npos) << last_error();

  // A barrier on one PE against an allocation on the others: an error, not a hang.
  if (me_ == 1) {
    tshmem_barrier_all();
  } else {
    EXPECT_EQ(tshmem_malloc(64), nullptr);
  }
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  EXPECT_NE(last_error().find("tshmem_barrier_all()"), std::string::npos) << last_error();

  void *ok = tshmem_malloc(4096);
  ASSERT_NE(ok, nullptr) << last_error();
  EXPECT_EQ(offset_of(ok), kFirstOffset);
  tshmem_free(ok);
}

TEST_F(Heap, FinalizeAgainstAnAllocationIsAnErrorNotAHang) {
  if (n_ < 2) GTEST_SKIP() << "needs 2 PEs to diverge";
  if (me_ == 1) {
    tshmem_finalize();
    EXPECT_EQ(tshmem_my_pe(), 1) << "finalize did nothing: tshmem is still initialised";
  } else {
    EXPECT_EQ(tshmem_malloc(64), nullptr);
  }
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  EXPECT_NE(last_error().find("tshmem_finalize()"), std::string::npos) << last_error();
  void *ok = tshmem_malloc(64);  // every PE is back in step
  EXPECT_NE(ok, nullptr) << last_error();
  tshmem_free(ok);
}

TEST_F(Heap, DivergentFreeFreesNothing) {
  if (n_ < 2) GTEST_SKIP() << "needs 2 PEs to diverge";
  void *a = tshmem_malloc(4096);
  void *b = tshmem_malloc(4096);
  ASSERT_TRUE(a && b);
  tshmem_free(me_ == 1 ? b : a);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  EXPECT_NE(last_error().find("tshmem_free"), std::string::npos) << last_error();
  tshmemx_clear_last_error();
  // Both blocks are still live everywhere: freeing them in step succeeds.
  tshmem_free(a);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
  tshmem_free(b);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
}

TEST_F(Heap, BadFreesAreErrorsOnEveryPeNotCrashes) {
  void *a = tshmem_malloc(4096);
  ASSERT_NE(a, nullptr);
  int on_stack = 0;
  // Outside the heap, only on PE 0: every PE fails, the message names PE 0.
  tshmem_free(me_ == 0 ? static_cast<void *>(&on_stack) : a);
  EXPECT_EQ(tshmemx_last_error_code(), n_ > 1 ? TSHMEM_ERR_ASYMMETRIC : TSHMEM_ERR_INVALID_ARG) << last_error();
  EXPECT_NE(last_error().find("PE 0"), std::string::npos) << last_error();

  tshmem_free(static_cast<char *>(a) + 256);  // interior pointer, everywhere
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("not the start of a live block"), std::string::npos) << last_error();

  tshmem_free(a);
  tshmemx_clear_last_error();
  tshmem_free(a);  // twice
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("freed twice"), std::string::npos) << last_error();

  tshmemx_clear_last_error();
  tshmem_free(nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << "free(NULL) is allowed";
}

TEST_F(Heap, ZeroSizeAndBadAlignment) {
  tshmemx_clear_last_error();
  EXPECT_EQ(tshmem_malloc(0), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << "size 0 is no error";
  EXPECT_EQ(tshmem_align(3, 64), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("alignment 3 is not a power of two"), std::string::npos) << last_error();
  EXPECT_EQ(tshmem_calloc(SIZE_MAX / 2, 4), nullptr) << "count * size overflows";
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_OUT_OF_MEMORY);
}

TEST_F(Heap, ExhaustionIsAgreedAndRecoverable) {
  void *big = tshmem_malloc(12 << 20);
  ASSERT_NE(big, nullptr) << last_error();
  EXPECT_EQ(tshmem_malloc(8 << 20), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_OUT_OF_MEMORY);
  EXPECT_NE(last_error().find("exhausted"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("TSHMEM_SYMMETRIC_SIZE"), std::string::npos) << last_error();
  tshmem_free(big);
  void *again = tshmem_malloc(8 << 20);
  EXPECT_NE(again, nullptr) << last_error();
  tshmem_free(again);
}

TEST_F(Heap, CallocZeroesEveryPesCopy) {
  void *dirty = tshmem_malloc(1 << 16);
  ASSERT_NE(dirty, nullptr);
  std::memset(dirty, 0xab, 1 << 16);
  tshmem_free(dirty);
  auto *zeroed = static_cast<unsigned char *>(tshmem_calloc(1 << 14, 4));
  ASSERT_EQ(static_cast<void *>(zeroed), dirty) << "same block reused, so zeroing is observable";
  bool all_zero = true;
  for (int i = 0; i < (1 << 16); ++i) all_zero = all_zero && zeroed[i] == 0;
  EXPECT_TRUE(all_pes(all_zero));
  tshmem_free(zeroed);
}

TEST_F(Heap, FinalizeWithLiveBlocksIsClean) {
  ASSERT_NE(tshmem_malloc(4096), nullptr);
  // TearDown finalizes with the block live: the heap goes with the backend.
}

}  // namespace
}  // namespace tshmem_test
