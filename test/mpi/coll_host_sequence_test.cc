// Long runs of host collectives on the shm heap, back to back with no barrier between them: kinds alternate, the
// broadcast's root moves, each result is checked. One call of the run is wrong on one PE: with the symmetry check
// (tshmem) a mismatch, named alike on every PE; built without it (tshmem_nocheck, TSHMEM_TEST_NOCHECK) the wrong call
// is a refused argument, on the root (every PE refuses, nothing written) or on one member (refused there only).
// Either way every later call of the run still works. Without the check a broadcast's root does not wait for its
// members, so the runs also cover a root far ahead of them (more broadcasts than the ring has entries).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fixture.h"
#include "tshmem/tshmemx.h"

namespace {

using tshmem_test::TshmemTest;

constexpr int kCalls = 200;
constexpr size_t kInts = 16;  // per PE and call: 64 bytes

int value(int call, int pe, size_t i) { return call * 1000003 + pe * 1009 + static_cast<int>(i); }

class CollHostSequence : public TshmemTest {
 protected:
  void SetUp() override {
    TshmemTest::SetUp();
    dst_ = static_cast<int *>(tshmem_malloc(kInts * sizeof(int) * static_cast<size_t>(n_)));
    src_ = static_cast<int *>(tshmem_malloc(kInts * sizeof(int) * static_cast<size_t>(n_)));
    ASSERT_NE(dst_, nullptr);
    ASSERT_NE(src_, nullptr);
  }
  void TearDown() override {
    tshmem_free(src_);
    tshmem_free(dst_);
    TshmemTest::TearDown();
  }
  /// Call `i` of a run on WORLD (kind i % 6), every result checked; `wrong`: this PE's call is the wrong one (a
  /// broadcast's or a reduce's). Returns the call's status.
  int call(int i, bool wrong) {
    const int kind = i % 6;
    for (size_t e = 0; e < kInts * static_cast<size_t>(n_); ++e) src_[e] = value(i, me_, e);
    std::memset(dst_, 0xff, kInts * sizeof(int) * static_cast<size_t>(n_));
    const size_t bytes = kInts * sizeof(int);
    int rc = 0;
    switch (kind) {
      case 0: {
        rc = tshmem_int_sum_reduce(TSHMEM_TEAM_WORLD, dst_, src_, wrong ? kInts / 2 : kInts);
        for (size_t e = 0; e < kInts && rc == 0; ++e) {
          int want = 0;
          for (int k = 0; k < n_; ++k) want += value(i, k, e);
          EXPECT_EQ(dst_[e], want) << "reduce, call " << i << ", element " << e;
        }
        break;
      }
      case 1:
      case 4: {
        const int root = (i / 6) % n_;
        rc = tshmemi_host_broadcast(TSHMEM_TEAM_WORLD, wrong ? broken_dst() : dst_, src_, wrong_bytes(bytes, wrong),
                                    root);
        for (size_t e = 0; e < kInts && rc == 0; ++e)
          EXPECT_EQ(dst_[e], value(i, root, e)) << "broadcast from " << root << ", call " << i << ", element " << e;
        break;
      }
      case 2: {
        rc = tshmemi_host_fcollect(TSHMEM_TEAM_WORLD, dst_, src_, wrong ? bytes / 2 : bytes);
        for (int k = 0; k < n_ && rc == 0; ++k)
          EXPECT_EQ(dst_[k * kInts + 3], value(i, k, 3)) << "fcollect, call " << i;
        break;
      }
      case 3: {
        rc = tshmemi_host_alltoall(TSHMEM_TEAM_WORLD, dst_, src_, bytes);
        for (int k = 0; k < n_ && rc == 0; ++k)
          EXPECT_EQ(dst_[k * kInts + 5], value(i, k, static_cast<size_t>(me_) * kInts + 5)) << "alltoall, call " << i;
        break;
      }
      default: rc = tshmem_barrier(TSHMEM_TEAM_WORLD); break;
    }
    return rc;
  }
#ifdef TSHMEM_TEST_NOCHECK
  // Without the check a wrong call is a refused argument: a dst outside the heap, the same byte count.
  int *broken_dst() { return &off_heap_[0]; }
  static size_t wrong_bytes(size_t bytes, bool) { return bytes; }
#else
  int *broken_dst() { return dst_; }
  static size_t wrong_bytes(size_t bytes, bool wrong) { return wrong ? bytes / 2 : bytes; }
#endif
  int *dst_ = nullptr, *src_ = nullptr;
  int off_heap_[kInts * 8] = {};
};

#ifndef TSHMEM_TEST_NOCHECK
// A mismatch at call k on one PE, for a broadcast and for a reduce: every PE refuses that call with the same error
// naming the PE, and every other call of the run completes with the right result.
TEST_F(CollHostSequence, AMismatchInALongRunIsNamedOnEveryPeAndTheRunGoesOn) {
  const int odd = n_ - 1;
  for (int k : {103, 150}) {  // a broadcast, then a reduce
    for (int i = 0; i < kCalls; ++i) {
      const int rc = call(i, i == k && me_ == odd);
      if (i != k) {
        ASSERT_EQ(rc, 0) << "call " << i << ": " << last_error();
        continue;
      }
      ASSERT_EQ(rc, TSHMEM_ERR_ASYMMETRIC) << "call " << i;
      const std::string message = last_error();
      EXPECT_NE(message.find("divergent PE " + std::to_string(odd) + "."), std::string::npos) << message;
      EXPECT_NE(message.find(k % 6 == 0 ? "count=8" : "nbytes=32"), std::string::npos) << message;
      for (size_t e = 0; e < kInts; ++e) ASSERT_EQ(dst_[e], -1) << "a refused call wrote dst";
    }
  }
}
#else
// The root passes a dst outside the heap at call k: every PE refuses it, naming the root, and no member writes dst.
// Then a member does: it alone refuses the call; the root and the other members complete it.
TEST_F(CollHostSequence, ARefusedBroadcastInALongRunAndTheRunGoesOn) {
  if (tshmem_team_n_pes(TSHMEMX_TEAM_NODE) != n_) GTEST_SKIP() << "WORLD spans nodes: its broadcast takes no ring";
  const int k = 103;  // a broadcast
  const int root = (k / 6) % n_, member = (root + 1) % n_;
  for (int wrong_pe : {root, member}) {
    for (int i = 0; i < kCalls; ++i) {
      const int rc = call(i, i == k && me_ == wrong_pe);
      if (i != k || (wrong_pe == member && me_ != member)) {
        ASSERT_EQ(rc, 0) << "call " << i << ": " << last_error();
        continue;
      }
      ASSERT_EQ(rc, TSHMEM_ERR_INVALID_ARG) << "call " << i;
      const std::string message = last_error();
      EXPECT_EQ(message.rfind("tshmem_broadcastmem failed on PE " + std::to_string(wrong_pe) + ":", 0), 0u) << message;
      EXPECT_NE(message.find(wrong_pe == root ? "no dst was written on any PE" : "no dst was written on PE"),
                std::string::npos)
          << message;
      for (size_t e = 0; e < kInts; ++e) ASSERT_EQ(dst_[e], -1) << "a refused broadcast wrote dst";
    }
  }
}
#endif

// Many more broadcasts than the ring has entries, on WORLD and on NODE, the root changing every call, each PE
// overwriting its source at once after each call: every member gets every broadcast's data.
TEST_F(CollHostSequence, ThousandBroadcastsFromMovingRoots) {
  for (tshmem_team_t team : {TSHMEM_TEAM_WORLD, TSHMEMX_TEAM_NODE}) {
    const int size = tshmem_team_n_pes(team);
    for (int i = 0; i < 1000; ++i) {
      const int root = (i * 7) % size;
      for (size_t e = 0; e < kInts; ++e) src_[e] = value(i, me_, e);
      ASSERT_EQ(tshmemi_host_broadcast(team, dst_, src_, kInts * sizeof(int), root), 0) << last_error();
      const int root_pe = tshmem_team_translate_pe(team, root, TSHMEM_TEAM_WORLD);
      for (size_t e = 0; e < kInts; ++e)
        ASSERT_EQ(dst_[e], value(i, root_pe, e)) << "team " << team << ", call " << i << ", element " << e;
    }
  }
  tshmem_barrier_all();
}

}  // namespace
