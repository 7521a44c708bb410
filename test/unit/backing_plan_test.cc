// The bookkeeping of a heap backed as it is used (mem/backing_plan.h): which ranges the next allocation backs,
// geometric growth of the prefix, a tail backed apart (the spanning collectives' area), and the backed() answer
// that host calls check.
#include <gtest/gtest.h>

#include "mem/backing_plan.h"

namespace tshmemi {
namespace {

constexpr uint64_t kG = 2ull << 20;  // a 2 MiB granularity, as on Hopper
constexpr uint64_t kHeap = 8ull << 30;

TEST(BackingPlan, FirstChunkThenGeometricGrowth) {
  BackingPlan plan(kHeap, kG);
  EXPECT_EQ(plan.backed_bytes(), 0u);
  EXPECT_FALSE(plan.backed(0, 1));
  plan.add({0, 36 * kG});
  EXPECT_EQ(plan.prefix(), 36 * kG);
  EXPECT_TRUE(plan.backed(0, 36 * kG));
  EXPECT_FALSE(plan.backed(36 * kG - 1, 2));
  EXPECT_TRUE(plan.plan(0, 36 * kG, true).empty()) << "all of it is backed";

  // A block that ends just past the prefix: the prefix doubles.
  auto next = plan.plan(0, 36 * kG + 1, true);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].offset, 36 * kG);
  EXPECT_EQ(next[0].bytes, 36 * kG);
  // Without the geometric step: exactly the granules the block needs.
  next = plan.plan(0, 36 * kG + 1, false);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].bytes, kG);

  // A block far past twice the prefix: exactly what it needs (granularity-aligned).
  next = plan.plan(0, 1ull << 30, true);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].end(), 1ull << 30);
  plan.add(next[0]);
  EXPECT_EQ(plan.prefix(), 1ull << 30);
  EXPECT_EQ(plan.backed_bytes(), 1ull << 30);
  EXPECT_TRUE(plan.backed(36 * kG - 8, 16)) << "across the boundary of two chunks";
}

TEST(BackingPlan, GrowthStopsAtTheHeapsEnd) {
  BackingPlan plan(64 * kG, kG);
  plan.add({0, 40 * kG});
  const auto next = plan.plan(0, 41 * kG, true);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].end(), 64 * kG);
  plan.add(next[0]);
  EXPECT_TRUE(plan.plan(0, 100 * kG, true).empty()) << "past the heap's end nothing is backed";
  EXPECT_FALSE(plan.backed(63 * kG, 2 * kG)) << "a range past the heap's end is not backed";
  EXPECT_TRUE(plan.backed(0, 64 * kG));
}

TEST(BackingPlan, TailBackedApartAndPrefixGrowthStopsAtIt) {
  BackingPlan plan(kHeap, kG);
  plan.add({0, 4 * kG});
  // The tail, from an offset that is not granule-aligned: its first granule is included.
  auto tail = plan.plan(kHeap - 3 * kG - 5, kHeap, true);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].offset, kHeap - 4 * kG);
  EXPECT_EQ(tail[0].end(), kHeap);
  plan.add(tail[0]);
  EXPECT_EQ(plan.prefix(), 4 * kG);
  EXPECT_TRUE(plan.backed(kHeap - 100, 100));
  EXPECT_FALSE(plan.backed(4 * kG, 1));
  EXPECT_EQ(plan.backed_bytes(), 8 * kG);

  // The prefix grows up to the tail and no further, and then the heap is backed whole.
  const auto rest = plan.plan(0, kHeap - 4 * kG, true);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].offset, 4 * kG);
  EXPECT_EQ(rest[0].end(), kHeap - 4 * kG);
  plan.add(rest[0]);
  EXPECT_EQ(plan.prefix(), kHeap) << "the prefix joins the tail";
  EXPECT_TRUE(plan.backed(0, kHeap));
  EXPECT_TRUE(plan.plan(0, kHeap, true).empty());
}

TEST(BackingPlan, GapsBetweenChunksAreBackedEachOnItsOwn) {
  BackingPlan plan(100 * kG, kG);
  plan.add({0, 10 * kG});
  plan.add({20 * kG, 10 * kG});
  plan.add({50 * kG, 10 * kG});
  const auto gaps = plan.plan(5 * kG, 55 * kG, false);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].offset, 10 * kG);
  EXPECT_EQ(gaps[0].bytes, 10 * kG);
  EXPECT_EQ(gaps[1].offset, 30 * kG);
  EXPECT_EQ(gaps[1].bytes, 20 * kG);
  EXPECT_FALSE(plan.backed(5 * kG, 20 * kG));
  EXPECT_TRUE(plan.backed(22 * kG, 8 * kG));
  EXPECT_TRUE(plan.backed(0, 0));
}

}  // namespace
}  // namespace tshmemi
