// The node's shared-memory rendezvous (bootstrap/node_sync.h) with threads as PEs: the same results on every PE
// as an allreduce, barrier ordering across many calls (the two slots are reused), every PE failing alike when the
// calls differ, and more PEs than CPUs.
#include "bootstrap/node_sync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tshmemi {
namespace {

struct Pages {
  explicit Pages(int n) {
    for (int i = 0; i < n; ++i) {
      void *page = std::aligned_alloc(kNodeSyncBytes, kNodeSyncBytes);
      std::memset(page, 0, kNodeSyncBytes);
      pages.push_back(page);
    }
  }
  ~Pages() {
    for (void *page : pages) std::free(page);
  }
  std::vector<void *> pages;
};

// Runs body(pe, sync) on n threads, each a PE with its own NodeSync over the same pages.
template <class Body>
void run_pes(int n, Body body) {
  Pages pages(n);
  std::vector<std::thread> threads;
  for (int pe = 0; pe < n; ++pe)
    threads.emplace_back([&, pe] {
      NodeSync sync(pages.pages, pe);
      body(pe, sync);
    });
  for (std::thread &t : threads) t.join();
}

TEST(NodeSync, EveryPeGetsTheSameReductions) {
  constexpr int kPes = 4, kCalls = 2000;
  std::vector<int> failures(kPes, 0);
  run_pes(kPes, [&](int pe, NodeSync &sync) {
    for (int call = 0; call < kCalls; ++call) {
      const int64_t in[3] = {pe * 10 + call, -pe, call};
      int64_t mins[3], maxs[3], sums[3];
      ASSERT_EQ(sync.allreduce(in, mins, 3, ReduceOp::kMin), TSHMEM_SUCCESS);
      ASSERT_EQ(sync.allreduce(in, maxs, 3, ReduceOp::kMax), TSHMEM_SUCCESS);
      ASSERT_EQ(sync.allreduce(in, sums, 3, ReduceOp::kSum), TSHMEM_SUCCESS);
      const bool ok = mins[0] == call && mins[1] == -(kPes - 1) && mins[2] == call &&
                      maxs[0] == (kPes - 1) * 10 + call && maxs[1] == 0 && maxs[2] == call &&
                      sums[0] == 60 + kPes * call && sums[1] == -6 && sums[2] == kPes * call;
      failures[pe] += ok ? 0 : 1;
    }
  });
  for (int pe = 0; pe < kPes; ++pe) EXPECT_EQ(failures[pe], 0) << "PE " << pe;
}

TEST(NodeSync, ABarrierOrdersWhatEachPeWroteBefore) {
  constexpr int kPes = 3, kRounds = 5000;
  std::vector<std::atomic<int>> board(kPes);  // relaxed: only the barrier orders them
  for (auto &cell : board) cell.store(0);
  std::vector<int> stale(kPes, 0);
  run_pes(kPes, [&](int pe, NodeSync &sync) {
    for (int round = 1; round <= kRounds; ++round) {
      board[pe].store(round, std::memory_order_relaxed);
      ASSERT_EQ(sync.allreduce(nullptr, nullptr, 0, ReduceOp::kMin), TSHMEM_SUCCESS);
      for (int other = 0; other < kPes; ++other)
        if (board[other].load(std::memory_order_relaxed) < round) ++stale[pe];
      ASSERT_EQ(sync.allreduce(nullptr, nullptr, 0, ReduceOp::kMin), TSHMEM_SUCCESS);  // nobody writes round + 1 yet
    }
  });
  for (int pe = 0; pe < kPes; ++pe) EXPECT_EQ(stale[pe], 0) << "PE " << pe;
}

TEST(NodeSync, DifferentCallsFailOnEveryPeWithTheSameMessage) {
  constexpr int kPes = 3;
  std::vector<std::string> messages(kPes);
  std::vector<Status> statuses(kPes);
  run_pes(kPes, [&](int pe, NodeSync &sync) {
    const int64_t in[2] = {1, 2};
    int64_t out[2];
    statuses[pe] = sync.allreduce(in, out, pe == 1 ? 1 : 2, ReduceOp::kMax);
    messages[pe] = last_error_message();
    // The next call still meets: the failed one used its slot like any other.
    EXPECT_EQ(sync.allreduce(in, out, 2, ReduceOp::kMin), TSHMEM_SUCCESS);
  });
  for (int pe = 0; pe < kPes; ++pe) {
    EXPECT_EQ(statuses[pe], TSHMEM_ERR_INTERNAL);
    EXPECT_EQ(messages[pe], messages[0]);
  }
  EXPECT_NE(messages[0].find("1: max of 1 words"), std::string::npos) << messages[0];
}

TEST(NodeSync, MorePesThanCpus) {
  const int pes = 2 * static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  std::vector<int64_t> results(static_cast<size_t>(pes));
  run_pes(pes, [&](int pe, NodeSync &sync) {
    int64_t in = pe, out = -1;
    for (int call = 0; call < 200; ++call) ASSERT_EQ(sync.allreduce(&in, &out, 1, ReduceOp::kMax), TSHMEM_SUCCESS);
    results[static_cast<size_t>(pe)] = out;
  });
  for (int64_t r : results) EXPECT_EQ(r, pes - 1);
}

TEST(NodeSync, AnAllreduceTooLongForASlotIsRefused) {
  Pages pages(1);
  NodeSync sync(pages.pages, 0);
  int64_t in[NodeSync::kMaxWords + 1] = {}, out[NodeSync::kMaxWords + 1];
  EXPECT_EQ(sync.allreduce(in, out, NodeSync::kMaxWords + 1, ReduceOp::kMin), TSHMEM_ERR_INTERNAL);
  EXPECT_EQ(sync.allreduce(in, out, NodeSync::kMaxWords, ReduceOp::kMin), TSHMEM_SUCCESS);
}

}  // namespace
}  // namespace tshmemi
