// The threading model across real processes (MPI initialised with MPI_THREAD_MULTIPLE by the test main):
// the level tshmem provides and queries, bad arguments failing init on every PE, threads hammering the
// heap and put/get under TSHMEM_THREAD_MULTIPLE, and calls racing tshmem_finalize. The CI runs this binary
// once more built with ThreadSanitizer (scripts/test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_env.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace tshmem_test {
namespace {

constexpr int kThreads = 4;

class Threads : public ::testing::Test {
 protected:
  ScopedEnv backend_{"TSHMEM_MEM_BACKEND", "shm"};
  ScopedEnv size_{"TSHMEM_SYMMETRIC_SIZE", "16M"};
  std::string last_error() const { return tshmemx_last_error(); }

  // Init at MULTIPLE on every PE, or fail the test on every PE.
  void init_multiple() {
    int provided = -1;
    const int rc = tshmem_init_thread(TSHMEM_THREAD_MULTIPLE, &provided);
    ASSERT_TRUE(all_pes(rc == 0)) << last_error();
    ASSERT_EQ(provided, TSHMEM_THREAD_MULTIPLE);
  }
};

// A barrier for the threads of one PE (C++17 has none).
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_, arrived_ = 0, generation_ = 0;
};

TEST_F(Threads, InitThreadProvidesWhatWasAskedAndQueryTellsIt) {
  for (int level : {TSHMEM_THREAD_SINGLE, TSHMEM_THREAD_FUNNELED, TSHMEM_THREAD_SERIALIZED, TSHMEM_THREAD_MULTIPLE}) {
    int provided = -1;
    ASSERT_TRUE(all_pes(tshmem_init_thread(level, &provided) == 0)) << last_error();
    EXPECT_EQ(provided, level);
    int queried = -1;
    tshmem_query_thread(&queried);
    EXPECT_EQ(queried, level);
    tshmem_finalize();
  }
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << last_error();
  int queried = -1;
  tshmem_query_thread(&queried);
  EXPECT_EQ(queried, TSHMEM_THREAD_SINGLE) << "tshmem_init is tshmem_init_thread(TSHMEM_THREAD_SINGLE)";
  tshmem_finalize();
}

TEST_F(Threads, QueryBeforeInitSetsAnErrorAndWritesNothing) {
  int queried = 42;
  tshmem_query_thread(&queried);
  EXPECT_EQ(queried, 42);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_NOT_INITIALIZED);
  EXPECT_NE(last_error().find("tshmem_query_thread"), std::string::npos) << last_error();
}

TEST_F(Threads, ABadLevelOnOnePeFailsInitOnEveryPe) {
  const int bad_pe = world_size() - 1;
  int provided = -1;
  const int rc = tshmem_init_thread(world_rank() == bad_pe ? 7 : TSHMEM_THREAD_MULTIPLE, &provided);
  EXPECT_EQ(rc, TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("requested = 7 is not a thread level"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("PE " + std::to_string(bad_pe)), std::string::npos) << last_error();
  EXPECT_EQ(tshmem_my_pe(), -1) << "nothing initialised";

  const int rc_null = tshmem_init_thread(TSHMEM_THREAD_SINGLE, world_rank() == 0 ? nullptr : &provided);
  EXPECT_EQ(rc_null, TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("provided is NULL"), std::string::npos) << last_error();
  EXPECT_EQ(tshmem_my_pe(), -1);
}

// Under MULTIPLE: every thread of every PE allocates at once (identical requests, so any lock order gives the
// same offsets on every PE), writes its blocks, puts into its slot of every PE's mailbox and reads it back,
// then the threads call barrier_all at once. Nothing may be handed out twice, no call may report an
// asymmetry, and every put must land.
TEST_F(Threads, ThreadsHammerMallocFreeAndPutmem) {
  init_multiple();
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  constexpr int kBlocksPerThread = 24, kRounds = 200;
  constexpr size_t kBlock = 4096;
  auto *mailbox = static_cast<long *>(tshmem_calloc(static_cast<size_t>(n) * kThreads, sizeof(long)));
  ASSERT_NE(mailbox, nullptr) << last_error();

  std::vector<std::vector<unsigned char *>> blocks(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::string> first_error(kThreads);
  ThreadBarrier phase(kThreads);
  auto fail = [&](int t, const std::string &what) {
    if (failures.fetch_add(1) == 0 || first_error[static_cast<size_t>(t)].empty())
      first_error[static_cast<size_t>(t)] = what;
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      const unsigned char pattern = static_cast<unsigned char>(0x10 * (t + 1) + me);
      for (int i = 0; i < kBlocksPerThread; ++i) {
        void *block = tshmem_malloc(kBlock);
        if (block == nullptr) return fail(t, "tshmem_malloc: " + std::string(tshmemx_last_error()));
        std::memset(block, pattern, kBlock);
        blocks[static_cast<size_t>(t)].push_back(static_cast<unsigned char *>(block));
      }
      for (int round = 1; round <= kRounds; ++round) {
        const long note = (static_cast<long>(me) << 40) | (static_cast<long>(t) << 32) | round;
        for (int pe = 0; pe < n; ++pe) {
          if (tshmem_putmem(&mailbox[me * kThreads + t], &note, sizeof note, pe) != 0)
            return fail(t, "tshmem_putmem: " + std::string(tshmemx_last_error()));
          long back = 0;
          if (tshmem_getmem(&back, &mailbox[me * kThreads + t], sizeof back, pe) != 0 || back != note)
            return fail(t, "tshmem_getmem read " + std::to_string(back) + ", expected " + std::to_string(note));
        }
        if (tshmem_my_pe() != me || tshmem_ptr(mailbox, me) != mailbox) return fail(t, "queries changed");
      }
      phase.wait();  // every thread's blocks are written: now check nobody else's landed in them
      for (unsigned char *block : blocks[static_cast<size_t>(t)])
        for (size_t b = 0; b < kBlock; b += 512)
          if (block[b] != pattern) return fail(t, "a block was handed to two threads");
      for (int i = 0; i < 10; ++i) tshmem_barrier_all();
    });
  }
  for (std::thread &worker : workers) worker.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(first_error[static_cast<size_t>(t)], "") << "thread " << t;
  ASSERT_TRUE(all_pes(failures.load() == 0));

  // The same set of blocks on every PE (each a different thread's on each PE): free them in address order.
  std::vector<unsigned char *> all;
  for (auto &list : blocks) all.insert(all.end(), list.begin(), list.end());
  std::sort(all.begin(), all.end());
  for (unsigned char *block : all) {
    tshmem_free(block);
    EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
  }
  tshmem_barrier_all();
  for (int pe = 0; pe < n; ++pe)
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(mailbox[pe * kThreads + t], (static_cast<long>(pe) << 40) | (static_cast<long>(t) << 32) | kRounds);
  tshmem_free(mailbox);
  tshmem_finalize();
}

// Under MULTIPLE: threads keep calling while the main thread finalizes. Every call either succeeds (it ran
// before the teardown) or fails with TSHMEM_ERR_NOT_INITIALIZED; none touches freed state (ThreadSanitizer and
// the heap's unmapping would show it).
TEST_F(Threads, CallsRacingFinalizeFailCleanly) {
  init_multiple();
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  auto *target = static_cast<long *>(tshmem_calloc(static_cast<size_t>(kThreads), sizeof(long)));
  ASSERT_NE(target, nullptr) << last_error();
  tshmem_barrier_all();

  std::atomic<bool> go{false};
  std::atomic<int> unexpected{0}, succeeded{0}, refused{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      const long note = t;
      for (;;) {
        const int rc = tshmem_putmem(&target[t], &note, sizeof note, (me + 1) % n);
        const int pe = tshmem_my_pe();
        if (pe != me && pe != -1) unexpected.fetch_add(1);
        if (rc == 0) {
          succeeded.fetch_add(1);
          continue;
        }
        // Refused once, refused for good: the context is gone, not half torn down.
        if (rc != TSHMEM_ERR_NOT_INITIALIZED || tshmem_my_pe() != -1 || tshmem_ptr(target, me) != nullptr)
          unexpected.fetch_add(1);
        refused.fetch_add(1);
        return;
      }
    });
  }
  go.store(true);
  while (succeeded.load() < 100 * kThreads && refused.load() == 0) std::this_thread::yield();  // the race is on
  tshmem_finalize();
  for (std::thread &worker : workers) worker.join();
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(refused.load(), kThreads) << "every thread saw the context go";
  EXPECT_EQ(tshmem_my_pe(), -1);
  EXPECT_TRUE(all_pes(true));
}

}  // namespace
}  // namespace tshmem_test
