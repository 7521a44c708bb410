// The heap allocator alone: determinism, fragmentation, coalescing, alignment, exhaustion.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "heap/allocator.h"

namespace tshmemi {
namespace {

constexpr uint64_t kAlign = 256;

TEST(HeapAllocator, FirstFitByAddressAndExactReuse) {
  HeapAllocator heap(0, 1 << 20, kAlign);
  const auto a = heap.allocate(1000, 0), b = heap.allocate(1, 0), c = heap.allocate(4096, 0);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b, 1024u);  // 1000 rounds up to 1024
  EXPECT_EQ(*c, 1280u);
  ASSERT_TRUE(heap.release(*b));
  EXPECT_EQ(*heap.allocate(200, 0), 1024u);  // the hole is reused first
  EXPECT_TRUE(heap.consistent());
}

TEST(HeapAllocator, CoalescesNeighboursBothSides) {
  HeapAllocator heap(0, 64 * kAlign, kAlign);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(*heap.allocate(kAlign, 0));
  EXPECT_FALSE(heap.allocate(1, 0));
  for (int i = 0; i < 64; i += 2) ASSERT_TRUE(heap.release(blocks[static_cast<size_t>(i)]));
  EXPECT_EQ(heap.free_ranges(), 32u);
  EXPECT_FALSE(heap.allocate(2 * kAlign, 0)) << "fragmented: no two adjacent free blocks";
  for (int i = 1; i < 64; i += 2) ASSERT_TRUE(heap.release(blocks[static_cast<size_t>(i)]));
  EXPECT_EQ(heap.free_ranges(), 1u);
  EXPECT_EQ(heap.largest_free(), 64 * kAlign);
  EXPECT_TRUE(heap.consistent());
}

TEST(HeapAllocator, AlignmentIsHonouredAndPaddingStaysFree) {
  HeapAllocator heap(0, 1 << 20, kAlign);
  ASSERT_TRUE(heap.allocate(100, 0));
  const auto aligned = heap.allocate(100, 65536);
  ASSERT_TRUE(aligned);
  EXPECT_EQ(*aligned % 65536, 0u);
  EXPECT_EQ(*heap.allocate(100, 0), 256u) << "the padding before an aligned block is reusable";
  EXPECT_TRUE(heap.consistent());
}

TEST(HeapAllocator, ReservedPrefixIsNeverHandedOut) {
  HeapAllocator heap(65536, 1 << 20, kAlign);
  EXPECT_EQ(*heap.allocate(1, 0), 65536u);
}

TEST(HeapAllocator, ExhaustionFailsWithoutChangingState) {
  HeapAllocator heap(0, 4096, kAlign);
  EXPECT_FALSE(heap.allocate(4097, 0));
  EXPECT_FALSE(heap.allocate(0, 0)) << "size 0 allocates nothing";
  EXPECT_FALSE(heap.allocate(UINT64_MAX, 0));
  EXPECT_EQ(heap.bytes_free(), 4096u);
  EXPECT_TRUE(heap.allocate(4096, 0));
  EXPECT_FALSE(heap.allocate(1, 0));
  EXPECT_EQ(heap.bytes_free(), 0u);
}

TEST(HeapAllocator, ReleaseOfUnknownOffsetChangesNothing) {
  HeapAllocator heap(0, 1 << 16, kAlign);
  const auto a = heap.allocate(1024, 0);
  EXPECT_FALSE(heap.release(*a + 256)) << "interior pointer";
  EXPECT_TRUE(heap.release(*a));
  EXPECT_FALSE(heap.release(*a)) << "double free";
  EXPECT_EQ(heap.bytes_free(), uint64_t{1} << 16);
}

TEST(HeapAllocator, RollbackRestoresTheExactFreeList) {
  HeapAllocator heap(0, 1 << 20, kAlign);
  std::vector<uint64_t> keep;
  for (int i = 0; i < 10; ++i) keep.push_back(*heap.allocate(777 * (i + 1), 0));
  heap.release(keep[3]);
  heap.release(keep[7]);
  const auto before_free = heap.bytes_free();
  const auto before_ranges = heap.free_ranges();
  const auto tentative = heap.allocate(3000, 4096);
  ASSERT_TRUE(tentative);
  heap.release(*tentative);
  EXPECT_EQ(heap.bytes_free(), before_free);
  EXPECT_EQ(heap.free_ranges(), before_ranges);
  // And the next allocation lands where it would have without the tentative one.
  HeapAllocator twin(0, 1 << 20, kAlign);
  for (int i = 0; i < 10; ++i) twin.allocate(777 * (i + 1), 0);
  twin.release(keep[3]);
  twin.release(keep[7]);
  EXPECT_EQ(*heap.allocate(5000, 0), *twin.allocate(5000, 0));
}

// Random sequences of malloc/align/free: two allocators fed the same sequence agree on every offset
// (what makes the symmetric heap symmetric), blocks never overlap, accounting stays exact.
TEST(HeapAllocator, RandomSequencesAreDeterministicAndConsistent) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    HeapAllocator a(65536, 8 << 20, kAlign), b(65536, 8 << 20, kAlign);
    std::map<uint64_t, uint64_t> live;  // offset -> requested size
    for (int step = 0; step < 2000; ++step) {
      const bool do_free = !live.empty() && (rng() % 3 == 0);
      if (do_free) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        ASSERT_TRUE(a.release(it->first));
        ASSERT_TRUE(b.release(it->first));
        live.erase(it);
      } else {
        const uint64_t size = 1 + rng() % (rng() % 8 == 0 ? 1 << 20 : 8192);
        const uint64_t alignment = rng() % 4 == 0 ? uint64_t{1} << (rng() % 17) : 0;
        const auto x = a.allocate(size, alignment), y = b.allocate(size, alignment);
        ASSERT_EQ(x.has_value(), y.has_value());
        if (!x) continue;  // exhausted: both agree
        ASSERT_EQ(*x, *y);
        if (alignment) {
          ASSERT_EQ(*x % alignment, 0u);
        }
        ASSERT_EQ(*x % kAlign, 0u);
        // No overlap with the neighbours.
        auto next = live.lower_bound(*x);
        if (next != live.end()) {
          ASSERT_LE(*x + size, next->first);
        }
        if (next != live.begin()) {
          auto prev = std::prev(next);
          ASSERT_LE(prev->first + prev->second, *x);
        }
        live.emplace(*x, size);
      }
      if (step % 100 == 0) {
        ASSERT_TRUE(a.consistent()) << "seed " << seed << " step " << step;
      }
    }
    for (const auto &block : live) ASSERT_TRUE(a.release(block.first));
    EXPECT_EQ(a.free_ranges(), 1u);
    EXPECT_EQ(a.bytes_free(), (8u << 20) - 65536u);
    EXPECT_TRUE(a.consistent());
  }
}

}  // namespace
}  // namespace tshmemi
