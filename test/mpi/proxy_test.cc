// The off-node proxy driven by CPU producers that post to this PE's device channel exactly what a kernel
// posts (proxy_types.h, the one request layout). The heap is shm (host memory), so each target reads what
// arrived directly. Nodes come from TSHMEM_DEBUG_NODE_SIZE in the environment (1 when unset); the MPI
// transport from OMPI_MCA_btl (the launcher's default is shared memory; the ctest entries also run tcp).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_env.h"
#include "tshmem/device/internal_regions.h"
#include "tshmem/device/proxy_types.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

#include <gtest/gtest.h>

namespace tshmem_test {
namespace {

uint8_t pattern(int pe, size_t i, size_t salt) { return static_cast<uint8_t>(pe * 31 + i * 7 + salt * 13 + 1); }

class ProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to make 2 nodes";
    const char *size = std::getenv("TSHMEM_DEBUG_NODE_SIZE");
    node_size_ = size != nullptr ? std::atoi(size) : 1;
    if (node_size_ <= 0 || world_size() % node_size_ != 0 || node_size_ == world_size())
      GTEST_SKIP() << "TSHMEM_DEBUG_NODE_SIZE=" << node_size_ << " makes no second node of " << world_size() << " PEs";
  }
  void TearDown() override {
    if (initialised_) tshmem_finalize();
  }

  // Starts tshmem on shm with nodes of node_size_ PEs, and optionally a small ring and chunk.
  void start(const char *ring = "1024", const char *chunk = "16K") {
    ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
    ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "32M");
    ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", std::to_string(node_size_).c_str());
    ScopedEnv ring_size("TSHMEM_PROXY_RING", ring);
    ScopedEnv chunk_size("TSHMEM_PROXY_CHUNK", chunk);  // small: large puts take many chunks
    const int rc = tshmem_init();
    if (rc != 0) std::fprintf(stderr, "[PE %d] tshmem_init: %s\n", world_rank(), tshmemx_last_error());  // every PE
    ASSERT_TRUE(all_pes(rc == 0)) << (rc == 0 ? "" : tshmemx_last_error());
    initialised_ = true;
    me_ = tshmem_my_pe();
    n_ = tshmem_n_pes();
    channel_ = tshmemi_proxy_device_channel();
    ASSERT_NE(channel_, nullptr) << "the job spans nodes: the proxy must run";
    EXPECT_EQ(channel_->layout, TSHMEMI_PROXY_LAYOUT);
  }

  int other_node(int step = 1) const { return (me_ + step * node_size_) % n_; }
  bool same_node(int pe) const { return pe / node_size_ == me_ / node_size_; }
  uint64_t offset_of(const void *symmetric) const {
    return static_cast<uint64_t>(static_cast<const char *>(symmetric) - static_cast<const char *>(tshmemx_heap_base()));
  }

  uint64_t post(tshmemi_proxy_request request) { return tshmemi_proxy_post(channel_, &request); }
  uint64_t put(void *dest, const void *src, size_t bytes, int pe) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.pe = pe;
    r.remote = offset_of(dest);
    r.local = reinterpret_cast<uint64_t>(src);
    r.bytes = bytes;
    return post(r);
  }
  // A kernel's staged put (proxy_types.h): the payload written into the put staging, then the request posted.
  uint64_t staged(tshmemi_proxy_request r, const void *src) {
    const uint64_t pos = tshmemi_proxy_stage_reserve(channel_, r.bytes);
    tshmemi_proxy_stage_write(channel_, pos, src, r.bytes);
    r.flags = TSHMEMI_PROXY_FLAG_STAGED;
    r.local = pos;
    return post(r);
  }
  uint64_t staged_put(void *dest, const void *src, size_t bytes, int pe) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.pe = pe;
    r.remote = offset_of(dest);
    r.bytes = bytes;
    return staged(r, src);
  }
  uint64_t get(void *dst, const void *source, size_t bytes, int pe) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_GET;
    r.pe = pe;
    r.remote = offset_of(source);
    r.local = reinterpret_cast<uint64_t>(dst);
    r.bytes = bytes;
    return post(r);
  }
  // A kernel's g: an 8-byte GET into the ticket's result slot; returns the ticket.
  uint64_t g(const uint64_t *word, int pe) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_GET;
    r.flags = TSHMEMI_PROXY_FLAG_RESULT_SLOT;
    r.pe = pe;
    r.remote = offset_of(word);
    r.bytes = 8;
    return post(r);
  }
  uint64_t put_signal(void *dest, const void *src, size_t bytes, uint64_t *signal, uint64_t value, int op, int pe) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT_SIGNAL;
    r.amo = static_cast<uint8_t>(op);
    r.pe = pe;
    r.remote = offset_of(dest);
    r.local = reinterpret_cast<uint64_t>(src);
    r.bytes = bytes;
    r.signal = offset_of(signal);
    r.value = value;
    return post(r);
  }
  uint64_t amo(void *word, unsigned kind, unsigned width, uint64_t value, uint64_t compare, void *result, int pe) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_AMO;
    r.amo = static_cast<uint8_t>(kind);
    r.width = static_cast<uint8_t>(width);
    r.pe = pe;
    r.remote = offset_of(word);
    r.value = value;
    r.compare = compare;
    r.local = reinterpret_cast<uint64_t>(result);
    return post(r);
  }
  void fence() {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_FENCE;
    post(r);
  }
  // Posts a QUIET and waits for it, as a kernel's quiet does; fails the test instead of hanging.
  void quiet() {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_QUIET;
    const uint64_t ticket = post(r);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!tshmemi_proxy_done(channel_, ticket)) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "QUIET " << ticket << " never completed";
      std::this_thread::yield();
    }
  }
  // A kernel's staged get of `bytes` at `source` on `pe` into the staging it reserved at `pos`; returns the ticket.
  uint64_t staged_get(const void *source, uint64_t bytes, int pe, uint64_t pos) {
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_GET;
    r.flags = TSHMEMI_PROXY_FLAG_STAGED;
    r.pe = pe;
    r.remote = offset_of(source);
    r.bytes = bytes;
    r.local = pos;
    return post(r);
  }
  // Hands the ticket of a staged get (or a result slot) back once its reader has the data, as a kernel does.
  void hand_back(uint64_t ticket) const {
    tshmemi_proxy_result *slot =
        tshmemi_proxy_results(channel_, channel_->capacity) + (ticket & (channel_->capacity - 1));
    __atomic_store_n(&slot->tag, TSHMEMI_PROXY_RESULT_TAKEN(ticket), __ATOMIC_RELEASE);
  }
  // Waits, as a kernel's staged get does, until the proxy says the staged GET `ticket` is complete (its result tag
  // is ticket + 1); false after 60 s.
  bool staged_get_complete(uint64_t ticket) const {
    const tshmemi_proxy_result *slot =
        tshmemi_proxy_results(channel_, channel_->capacity) + (ticket & (channel_->capacity - 1));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (__atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) != ticket + 1) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
  // Waits until the 64-bit word in this PE's heap reaches `value` (it changes under the proxy's hands).
  static bool wait_until(const uint64_t *word, uint64_t value) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < value) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();  // the proxy that applies it may share this core
    }
    return true;
  }

  int node_size_ = 1, me_ = -1, n_ = 0;
  bool initialised_ = false;
  tshmemi_proxy_channel *channel_ = nullptr;
};

TEST_F(ProxyTest, PutsToOneWordApplyInOrder) {
  start();
  auto *word = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(word, nullptr);
  constexpr int kPuts = 500;
  std::vector<uint64_t> values(kPuts);
  for (int i = 0; i < kPuts; ++i) {
    values[static_cast<size_t>(i)] = static_cast<uint64_t>(i + 1);
    put(word, &values[static_cast<size_t>(i)], sizeof(uint64_t), other_node());
  }
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(*word, static_cast<uint64_t>(kPuts)) << "the last of " << kPuts << " puts to one word must win";
  tshmem_barrier_all();
  tshmem_free(word);
}

// Operations to one PE apply in the order posted even while the transport's send queue to it is full (a target
// that is slow to take what arrives): a flag put after a data put never shows before it, and neither word goes
// back. Each PE watches the two words its source writes while it posts its own, in bursts, so the proxy thread
// alternates between issuing new operations and sending queued ones (where a new put could overtake queued ones).
TEST_F(ProxyTest, PutsBehindAFullSendQueueStayInOrder) {
  start();
  auto *words = static_cast<uint64_t *>(tshmem_calloc(2, sizeof(uint64_t)));  // [0] data, [1] flag
  ASSERT_NE(words, nullptr);
  constexpr uint64_t kRounds = 6000;
  constexpr uint64_t kBurst = 48;
  const int target = other_node();
  tshmemi_proxy_request p = {};
  p.op = TSHMEMI_PROXY_PUT;
  p.flags = TSHMEMI_PROXY_FLAG_INLINE;
  p.pe = target;
  p.bytes = 8;
  uint64_t seen_data = 0, seen_flag = 0, backwards = 0, flag_first = 0;
  std::string first_wrong;
  auto watch = [&] {
    const uint64_t flag = __atomic_load_n(&words[1], __ATOMIC_ACQUIRE);
    const uint64_t data = __atomic_load_n(&words[0], __ATOMIC_ACQUIRE);
    if (data < seen_data || flag < seen_flag) ++backwards;
    if (data < flag) ++flag_first;
    if ((data < seen_data || flag < seen_flag || data < flag) && first_wrong.empty())
      first_wrong = "data " + std::to_string(data) + " after " + std::to_string(seen_data) + ", flag " +
                    std::to_string(flag) + " after " + std::to_string(seen_flag);
    seen_data = std::max(seen_data, data);
    seen_flag = std::max(seen_flag, flag);
  };
  for (uint64_t i = 1; i <= kRounds; ++i) {
    p.remote = offset_of(&words[0]);
    p.value = i;
    post(p);
    p.remote = offset_of(&words[1]);
    post(p);
    watch();
    if (i % kBurst == 0) {
      for (int k = 0; k < 16; ++k) {
        std::this_thread::yield();
        watch();
      }
    }
  }
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  watch();
  EXPECT_EQ(backwards, 0u) << "a word went back: " << first_wrong;
  EXPECT_EQ(flag_first, 0u) << "the flag showed before the data put ahead of it: " << first_wrong;
  EXPECT_EQ(words[0], kRounds) << "the last data put must win";
  EXPECT_EQ(words[1], kRounds) << "the last flag put must win";
  tshmem_barrier_all();
  tshmem_free(words);
}

// A quiet completes at the target every put posted before it, those still queued in the transport's send queue
// too (a burst to a target slow to take it fills the queue): checked by the target right after the origin's
// quiet, round after round, each round a new chance for a quiet that returns early.
TEST_F(ProxyTest, QuietCompletesPutsQueuedBehindAFullSendQueue) {
  start();
  auto *word = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(word, nullptr);
  constexpr uint64_t kRounds = 40, kPuts = 400;
  const int target = other_node();
  tshmemi_proxy_request p = {};
  p.op = TSHMEMI_PROXY_PUT;
  p.flags = TSHMEMI_PROXY_FLAG_INLINE;
  p.pe = target;
  p.remote = offset_of(word);
  p.bytes = 8;
  uint64_t wrong = 0;
  std::string first_wrong;
  for (uint64_t round = 1; round <= kRounds; ++round) {
    for (uint64_t i = 1; i <= kPuts; ++i) {
      p.value = round * 100000 + i;
      post(p);
    }
    quiet();
    MPI_Barrier(MPI_COMM_WORLD);
    const uint64_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (seen != round * 100000 + kPuts && wrong++ == 0)
      first_wrong = "round " + std::to_string(round) + ": " + std::to_string(seen);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  EXPECT_EQ(wrong, 0u) << "after the quiet the last put must have landed; first: " << first_wrong;
  tshmem_barrier_all();
  tshmem_free(word);
}

// Small records travel in batches, large puts in chunks of their own, each message to one PE in order:
// a mix of chunked puts, inline p, small puts and requests to another PE in between (which split the
// batches) must land as if applied one by one.
TEST_F(ProxyTest, BatchedAndChunkedPutsToOneRangeApplyInOrder) {
  start();
  constexpr size_t kBytes = 64 * 1024 + 40;  // chunks of 16 KiB in these tests: 5 messages
  auto *region = static_cast<uint8_t *>(tshmem_calloc(kBytes, 1));
  auto *scratch = static_cast<uint64_t *>(tshmem_calloc(64, sizeof(uint64_t)));
  ASSERT_NE(region, nullptr);
  ASSERT_NE(scratch, nullptr);
  struct Op {
    size_t offset;
    std::vector<uint8_t> data;  // 8 bytes: an inline p of this value
    bool inline_p;
  };
  // The same sequence for a given origin, on the origin (to post it) and at the target (to replay it).
  auto sequence = [&](int origin) {
    std::vector<Op> ops;
    auto block = [&](size_t offset, size_t bytes, size_t salt) {
      Op op{offset, std::vector<uint8_t>(bytes), false};
      for (size_t i = 0; i < bytes; ++i) op.data[i] = pattern(origin, i, salt);
      ops.push_back(op);
    };
    auto p = [&](size_t offset, uint64_t value) {
      Op op{offset, std::vector<uint8_t>(8), true};
      std::memcpy(op.data.data(), &value, 8);
      ops.push_back(op);
    };
    block(0, kBytes, 1);
    for (size_t i = 0; i < 200; ++i) p(i * 24, 1000 * static_cast<uint64_t>(origin) + i);
    block(100, 100, 2);                                       // over some of the p's
    for (size_t i = 0; i < 50; ++i) p(i * 16 + 4, 7000 + i);  // unaligned, over the small put too
    block(kBytes / 2 + 3, kBytes / 2 - 3, 3);
    for (size_t i = 0; i < 100; ++i) p(kBytes / 2 + i * 40, 9000 + i);
    block(kBytes - 1000, 1000, 4);
    return ops;
  };
  const int target = other_node();
  const std::vector<Op> mine = sequence(me_);
  for (size_t k = 0; k < mine.size(); ++k) {
    const Op &op = mine[k];
    if (op.inline_p) {
      tshmemi_proxy_request r = {};
      r.op = TSHMEMI_PROXY_PUT;
      r.flags = TSHMEMI_PROXY_FLAG_INLINE;
      r.pe = target;
      r.remote = offset_of(region + op.offset);
      r.bytes = 8;
      std::memcpy(&r.value, op.data.data(), 8);
      post(r);
    } else {
      put(region + op.offset, op.data.data(), op.data.size(), target);
    }
    if (k % 7 == 3) {  // a request to this PE itself in between: the batch to `target` must end here
      tshmemi_proxy_request r = {};
      r.op = TSHMEMI_PROXY_PUT;
      r.flags = TSHMEMI_PROXY_FLAG_INLINE;
      r.pe = me_;
      r.remote = offset_of(scratch + k % 64);
      r.bytes = 8;
      r.value = k;
      post(r);
    }
  }
  quiet();  // also: every put's source may go now (they are `mine`, alive until here anyway)
  MPI_Barrier(MPI_COMM_WORLD);
  const int origin = (me_ - node_size_ + n_) % n_;
  std::vector<uint8_t> expected(kBytes, 0);
  for (const Op &op : sequence(origin)) std::memcpy(expected.data() + op.offset, op.data.data(), op.data.size());
  size_t bad = kBytes;
  for (size_t i = 0; i < kBytes && bad == kBytes; ++i)
    if (region[i] != expected[i]) bad = i;
  EXPECT_EQ(bad, kBytes) << "byte " << bad << " differs from the requests applied in order (origin PE " << origin
                         << ")";
  tshmem_barrier_all();
  tshmem_free(scratch);
  tshmem_free(region);
}

TEST_F(ProxyTest, SignalIsSeenOnlyAfterItsData) {
  start();
  const size_t bytes = (1 << 20) + 3;  // 65 chunks of 16 KiB
  auto *block = static_cast<uint8_t *>(tshmem_calloc(bytes + 16, 1));
  auto *signal = static_cast<uint64_t *>(tshmem_calloc(2, sizeof(uint64_t)));
  ASSERT_NE(block, nullptr);
  ASSERT_NE(signal, nullptr);
  const int target = other_node(), source = (me_ - node_size_ + n_) % n_;
  for (int round = 1; round <= 3; ++round) {
    std::vector<uint8_t> data(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = pattern(me_, i, static_cast<size_t>(round));
    // SET on the first word, ADD on the second: the data must be whole when either shows this round.
    put_signal(block + 1, data.data(), bytes, signal, static_cast<uint64_t>(round), TSHMEMI_PROXY_SIGNAL_SET, target);
    ASSERT_TRUE(wait_until(signal, static_cast<uint64_t>(round))) << "round " << round << ": no signal";
    size_t bad = bytes;
    for (size_t i = 0; i < bytes && bad == bytes; ++i)
      if (block[1 + i] != pattern(source, i, static_cast<size_t>(round))) bad = i;
    EXPECT_EQ(bad, bytes) << "round " << round << ": signal seen before byte " << bad << " of the data";
    quiet();  // the data is read: the next round may overwrite it
    MPI_Barrier(MPI_COMM_WORLD);
  }
  std::vector<uint8_t> small(100, static_cast<uint8_t>(me_ + 1));
  put_signal(block, small.data(), small.size(), signal + 1, 5, TSHMEMI_PROXY_SIGNAL_ADD, target);
  put_signal(block, small.data(), small.size(), signal + 1, 7, TSHMEMI_PROXY_SIGNAL_ADD, target);
  ASSERT_TRUE(wait_until(signal + 1, 12)) << "two ADD signals of 5 and 7";
  EXPECT_EQ(block[99], static_cast<uint8_t>(source + 1));
  quiet();
  tshmem_barrier_all();
  tshmem_free(signal);
  tshmem_free(block);
}

// A kernel's many small puts, then a signal: the transports pack consecutive small requests to one PE into one
// message (a batch), several batches here, each applied at the target in one step. Whichever way the signal
// travels (SET: a record of the batch; ADD: a UCX atomic once the batches are applied), a target that sees it sees
// every byte before it: p's to distinct words, small puts of 1 .. 300 bytes, round after round. The puts' sources
// lie in the heap, as a kernel's do (host memory here: the CPU copies them into a batch).
TEST_F(ProxyTest, ManySmallPutsThenASignalShowEveryByteFirst) {
  start();
  constexpr size_t kWords = 700, kBlock = 300;
  auto *words = static_cast<uint64_t *>(tshmem_calloc(kWords, sizeof(uint64_t)));
  auto *block = static_cast<uint8_t *>(tshmem_calloc(kBlock * kBlock, 1));
  auto *signal = static_cast<uint64_t *>(tshmem_calloc(2, sizeof(uint64_t)));
  auto *data = static_cast<uint8_t *>(tshmem_calloc(kBlock * kBlock, 1));
  ASSERT_NE(words, nullptr);
  ASSERT_NE(block, nullptr);
  ASSERT_NE(signal, nullptr);
  ASSERT_NE(data, nullptr);
  const int target = other_node(), source = (me_ - node_size_ + n_) % n_;
  tshmemi_proxy_request p = {};
  p.op = TSHMEMI_PROXY_PUT;
  p.flags = TSHMEMI_PROXY_FLAG_INLINE;
  p.pe = target;
  p.bytes = 8;
  auto word_value = [](int pe, uint64_t round, size_t i) { return (round << 40) | (uint64_t(pe) << 20) | i; };
  for (uint64_t round = 1; round <= 4; ++round) {
    for (size_t i = 0; i < kBlock * kBlock; ++i) data[i] = pattern(me_, i, static_cast<size_t>(round));
    for (size_t i = 0; i < kWords; ++i) {
      p.remote = offset_of(words + i);
      p.value = word_value(me_, round, i);
      post(p);
      if (i < kBlock) put(block + i * kBlock, data + i * kBlock, i + 1, target);  // 1 .. 300 bytes
    }
    const bool add = round % 2 == 0;
    tshmemi_proxy_request s = {};
    s.op = TSHMEMI_PROXY_SIGNAL;
    s.amo = add ? TSHMEMI_PROXY_SIGNAL_ADD : TSHMEMI_PROXY_SIGNAL_SET;
    s.pe = target;
    s.remote = offset_of(add ? signal + 1 : signal);
    s.value = add ? 1 : round;
    post(s);
    ASSERT_TRUE(wait_until(add ? signal + 1 : signal, add ? round / 2 : round)) << "round " << round << ": no signal";
    size_t bad_word = kWords, bad_byte = 0, bad_block = kBlock;
    for (size_t i = 0; i < kWords && bad_word == kWords; ++i)
      if (__atomic_load_n(words + i, __ATOMIC_ACQUIRE) != word_value(source, round, i)) bad_word = i;
    for (size_t i = 0; i < kBlock && bad_block == kBlock; ++i)
      for (size_t b = 0; b <= i; ++b)
        if (block[i * kBlock + b] != pattern(source, i * kBlock + b, static_cast<size_t>(round))) {
          bad_block = i;
          bad_byte = b;
          break;
        }
    EXPECT_EQ(bad_word, kWords) << "round " << round << ": signal seen before the p to word " << bad_word;
    EXPECT_EQ(bad_block, kBlock) << "round " << round << ": signal seen before byte " << bad_byte << " of put "
                                 << bad_block;
    quiet();
    MPI_Barrier(MPI_COMM_WORLD);  // every PE has read this round before the next overwrites it
  }
  tshmem_barrier_all();
  tshmem_free(data);
  tshmem_free(signal);
  tshmem_free(block);
  tshmem_free(words);
}

// Batches that fill their message: records of every size up to the largest that joins a batch (2 KiB) to one
// range, so batches end full at every offset, more of them in flight than a target acknowledges at once, mixed
// with puts just above the batch size (one message or one-sided operation each) and a fence, a g and an atomic
// (which wait for the batches before them). The range ends as if every request had applied one by one.
TEST_F(ProxyTest, BatchesFilledToTheBrimApplyInOrder) {
  start();
  constexpr size_t kBytes = 8192;
  auto *region = static_cast<uint8_t *>(tshmem_calloc(kBytes, 1));
  auto *counter = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(region, nullptr);
  ASSERT_NE(counter, nullptr);
  struct Op {
    size_t offset;
    std::vector<uint8_t> data;
  };
  auto sequence = [&](int origin) {
    std::vector<Op> ops;
    size_t salt = 0, offset = 0;
    for (size_t bytes : {1, 7, 8, 9, 63, 2000, 2047, 2048, 2049, 4100, 24, 1024, 3, 2048, 2048, 2048, 5, 16}) {
      for (int again = 0; again < 6; ++again) {
        offset = (offset * 7 + 13 + bytes) % (kBytes - bytes);
        Op op{offset, std::vector<uint8_t>(bytes)};
        ++salt;
        for (size_t i = 0; i < bytes; ++i) op.data[i] = pattern(origin, i, salt);
        ops.push_back(std::move(op));
      }
    }
    return ops;
  };
  const int target = other_node();
  const std::vector<Op> mine = sequence(me_);
  size_t total = 0;
  for (const Op &op : mine) total += op.data.size();
  auto *sources = static_cast<uint8_t *>(tshmem_malloc(total));  // in the heap, as a kernel's sources are
  ASSERT_NE(sources, nullptr);
  uint64_t fetched = ~0ull;
  for (size_t k = 0, at = 0; k < mine.size(); at += mine[k].data.size(), ++k) {
    std::memcpy(sources + at, mine[k].data.data(), mine[k].data.size());
    put(region + mine[k].offset, sources + at, mine[k].data.size(), target);
    if (k == mine.size() / 3) fence();
    if (k == mine.size() / 2) amo(counter, TSHMEMI_AMO_FETCH_ADD, 8, 1, 0, &fetched, target);
  }
  // A g of 8 bytes the last put wrote: it reads them (the operations to one PE apply in order).
  const Op &last = mine.back();
  uint64_t read_back = 0;
  get(&read_back, region + last.offset, 8, target);
  quiet();
  uint64_t wanted = 0;
  std::memcpy(&wanted, last.data.data(), 8);
  EXPECT_EQ(read_back, wanted) << "a get after the puts to one PE reads what they wrote";
  EXPECT_EQ(fetched, 0u) << "the atomic among the batches returned its old value";
  MPI_Barrier(MPI_COMM_WORLD);
  const int origin = (me_ - node_size_ + n_) % n_;
  std::vector<uint8_t> expected(kBytes, 0);
  for (const Op &op : sequence(origin)) std::memcpy(expected.data() + op.offset, op.data.data(), op.data.size());
  size_t bad = kBytes;
  for (size_t i = 0; i < kBytes && bad == kBytes; ++i)
    if (region[i] != expected[i]) bad = i;
  EXPECT_EQ(bad, kBytes) << "byte " << bad << " differs from the requests applied in order (origin PE " << origin
                         << ")";
  EXPECT_EQ(*counter, 1u) << "one atomic from the PE one node back";
  tshmem_barrier_all();
  tshmem_free(sources);
  tshmem_free(counter);
  tshmem_free(region);
}

TEST_F(ProxyTest, FenceOrdersABlockBeforeItsFlag) {
  start();
  const size_t bytes = 300 * 1024 + 5;
  auto *block = static_cast<uint8_t *>(tshmem_calloc(bytes, 1));
  auto *flag = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(block, nullptr);
  ASSERT_NE(flag, nullptr);
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(me_, i, 9);
  const uint64_t up = 1;
  put(block, data.data(), bytes, other_node());
  fence();
  put(flag, &up, sizeof(up), other_node());
  ASSERT_TRUE(wait_until(flag, 1)) << "the flag never came";
  const int source = (me_ - node_size_ + n_) % n_;
  size_t bad = bytes;
  for (size_t i = 0; i < bytes && bad == bytes; ++i)
    if (block[i] != pattern(source, i, 9)) bad = i;
  EXPECT_EQ(bad, bytes) << "flag up but the block from PE " << source << " is not whole: first wrong byte " << bad;
  quiet();
  tshmem_barrier_all();
  tshmem_free(flag);
  tshmem_free(block);
}

TEST_F(ProxyTest, QuietCompletesEveryPutAndGet) {
  start();
  const size_t sizes[] = {1, 7, 4096, 4097, 65536 + 3, (1 << 20) + 1};
  const size_t slot = (1 << 20) + 64;
  auto *inbox = static_cast<uint8_t *>(tshmem_calloc(slot * static_cast<size_t>(n_), 1));
  ASSERT_NE(inbox, nullptr);
  std::vector<std::vector<uint8_t>> sources;
  for (size_t bytes : sizes) {
    const size_t skew = 1 + bytes % 13;  // odd offsets at the target
    sources.emplace_back(bytes);
    for (size_t i = 0; i < bytes; ++i) sources.back()[i] = pattern(me_, i, bytes);
    for (int pe = 0; pe < n_; ++pe)
      put(inbox + static_cast<size_t>(me_) * slot + skew, sources.back().data(), bytes, pe);
    quiet();
    MPI_Barrier(MPI_COMM_WORLD);  // every PE's quiet is done: everything is in place
    for (int from = 0; from < n_; ++from) {
      const uint8_t *got = inbox + static_cast<size_t>(from) * slot + skew;
      size_t bad = bytes;
      for (size_t i = 0; i < bytes && bad == bytes; ++i)
        if (got[i] != pattern(from, i, bytes)) bad = i;
      EXPECT_EQ(bad, bytes) << bytes << " bytes from PE " << from
                            << (same_node(from) ? " (same node)" : " (other node)") << ": first wrong byte " << bad;
    }
    // Get back what this PE put on every PE, into odd local offsets.
    std::vector<uint8_t> back(static_cast<size_t>(n_) * (bytes + 3), 0);
    for (int pe = 0; pe < n_; ++pe)
      get(back.data() + static_cast<size_t>(pe) * (bytes + 3) + 1, inbox + static_cast<size_t>(me_) * slot + skew,
          bytes, pe);
    quiet();
    for (int pe = 0; pe < n_; ++pe)
      EXPECT_EQ(std::memcmp(back.data() + static_cast<size_t>(pe) * (bytes + 3) + 1, sources.back().data(), bytes), 0)
          << "get of " << bytes << " bytes from PE " << pe;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  tshmem_barrier_all();
  tshmem_free(inbox);
}

TEST_F(ProxyTest, BackPressureOnATinyRingAcrossWrapAround) {
  start("2", "64");  // two requests in the ring, 64-byte messages
  constexpr int kThreads = 4, kPerThread = 100;
  auto *slots = static_cast<uint64_t *>(tshmem_calloc(kThreads * kPerThread, sizeof(uint64_t)));
  ASSERT_NE(slots, nullptr);
  std::vector<uint64_t> values(kThreads * kPerThread);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1000000ull * static_cast<uint64_t>(me_ + 1) + i;
  const uint64_t head_before = __atomic_load_n(channel_->head_ptr, __ATOMIC_RELAXED);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const size_t k = static_cast<size_t>(t * kPerThread + i);
        put(slots + k, &values[k], sizeof(uint64_t), other_node());
      }
    });
  for (std::thread &p : producers) p.join();
  quiet();
  EXPECT_GE(*channel_->head_ptr - head_before, static_cast<uint64_t>(kThreads * kPerThread))
      << "every post took a ticket: the ring of 2 wrapped " << kThreads * kPerThread / 2 << " times";
  MPI_Barrier(MPI_COMM_WORLD);
  const int source = (me_ - node_size_ + n_) % n_;
  int wrong = 0;
  for (size_t k = 0; k < values.size(); ++k)
    if (slots[k] != 1000000ull * static_cast<uint64_t>(source + 1) + k) ++wrong;
  EXPECT_EQ(wrong, 0) << "requests lost or overwritten in the tiny ring";
  tshmem_barrier_all();
  tshmem_free(slots);
}

// Staged puts (the payload in the device channel's put staging, as a kernel writes it) from several producer
// threads at once, of every size up to TSHMEM_PROXY_STAGE_MAX and odd ones, through a staging ring they wrap many
// times: every byte lands, each put with signal's signal after its data, and the staging is freed as it is sent.
TEST_F(ProxyTest, StagedPutsLandAcrossWrapAroundOfTheStaging) {
  ScopedEnv stage_max("TSHMEM_PROXY_STAGE_MAX", "1K");
  start("64", "256");  // a small ring and chunks: staged payloads span several messages
  ASSERT_EQ(channel_->stage_max, 1024u);
  ASSERT_EQ(channel_->stage_bytes, 64u * 1024u) << "64 payloads of the largest size";
  ASSERT_NE(channel_->staging, nullptr);
  constexpr int kThreads = 3, kPerThread = 400;
  constexpr size_t kSlot = 1024;
  auto *dst = static_cast<uint8_t *>(tshmem_calloc(kThreads * kPerThread, kSlot));
  auto *signals = static_cast<uint64_t *>(tshmem_calloc(kThreads * kPerThread, sizeof(uint64_t)));
  ASSERT_NE(dst, nullptr);
  ASSERT_NE(signals, nullptr);
  const auto size_of = [](size_t k) { return k % 7 == 0 ? kSlot : 1 + (k * 37) % kSlot; };  // 1 .. 1024
  std::vector<uint8_t> src(kThreads * kPerThread * kSlot);
  for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(me_, i, 5);
  const uint64_t freed_before = __atomic_load_n(&channel_->stage_freed, __ATOMIC_ACQUIRE);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const size_t k = static_cast<size_t>(t * kPerThread + i);
        tshmemi_proxy_request r = {};
        r.op = k % 2 ? TSHMEMI_PROXY_PUT_SIGNAL : TSHMEMI_PROXY_PUT;
        r.pe = other_node();
        r.remote = offset_of(dst + k * kSlot);
        r.bytes = size_of(k);
        r.amo = TSHMEMI_PROXY_SIGNAL_SET;
        r.signal = offset_of(signals + k);
        r.value = k + 1;
        staged(r, src.data() + k * kSlot);
      }
    });
  for (std::thread &p : producers) p.join();
  quiet();
  uint64_t reserved = 0;
  for (size_t k = 0; k < src.size() / kSlot; ++k) reserved += TSHMEMI_PROXY_STAGE_RESERVED(size_of(k));
  EXPECT_GE(reserved, 5 * channel_->stage_bytes) << "the producers wrapped the staging ring several times";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (__atomic_load_n(&channel_->stage_freed, __ATOMIC_ACQUIRE) - freed_before < reserved &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(__atomic_load_n(&channel_->stage_freed, __ATOMIC_ACQUIRE) - freed_before, reserved)
      << "every staged byte is freed once its put is sent, and no more";
  MPI_Barrier(MPI_COMM_WORLD);
  const int source = (me_ - node_size_ + n_) % n_;
  size_t wrong = 0, late = 0;
  for (size_t k = 0; k < src.size() / kSlot; ++k) {
    for (size_t i = 0; i < kSlot; ++i) {
      const uint8_t want = i < size_of(k) ? pattern(source, k * kSlot + i, 5) : 0;
      if (dst[k * kSlot + i] != want) ++wrong;
    }
    if (k % 2 && signals[k] != k + 1) ++late;
  }
  EXPECT_EQ(wrong, 0u) << "bytes of staged puts lost, overwritten in the staging before they were sent, or misplaced";
  EXPECT_EQ(late, 0u) << "signals of staged puts with signal missing";
  tshmem_barrier_all();
  tshmem_free(signals);
  tshmem_free(dst);
}

// A producer that stages more than the staging holds waits for the proxy to send what is there (flow control): a
// single producer, payloads of the largest size, eight times the ring, with a signal after each that it waits for.
TEST_F(ProxyTest, StagingFullWaitsForTheProxyToSend) {
  ScopedEnv stage_max("TSHMEM_PROXY_STAGE_MAX", "16K");
  start();
  const size_t max = channel_->stage_max;
  const size_t rounds = 8 * channel_->stage_bytes / max;
  auto *dst = static_cast<uint8_t *>(tshmem_calloc(1, max));
  auto *signal = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(dst, nullptr);
  std::vector<uint8_t> src(max);
  for (size_t round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < max; ++i) src[i] = pattern(me_, i, round);
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT_SIGNAL;
    r.pe = other_node();
    r.remote = offset_of(dst);
    r.bytes = max;
    r.amo = TSHMEMI_PROXY_SIGNAL_SET;
    r.signal = offset_of(signal);
    r.value = round + 1;
    staged(r, src.data());  // src is reused at once: the payload is in the staging
  }
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  const int source = (me_ - node_size_ + n_) % n_;
  EXPECT_EQ(*signal, rounds);
  size_t wrong = 0;
  for (size_t i = 0; i < max; ++i)
    if (dst[i] != pattern(source, i, rounds - 1)) ++wrong;
  EXPECT_EQ(wrong, 0u) << "the last round's payload";
  tshmem_barrier_all();
  tshmem_free(signal);
  tshmem_free(dst);
}

// Staged gets (a kernel's get of up to TSHMEM_PROXY_STAGE_MAX): the data lands in the staging, the proxy raises the
// ticket's result tag, the producer reads the data and then frees the ticket (its result tag again); the staging is
// not freed before, and wraps many times.
TEST_F(ProxyTest, StagedGetsLandInTheStagingAndAreFreedOnceRead) {
  ScopedEnv stage_max("TSHMEM_PROXY_STAGE_MAX", "1K");
  start("64", "256");
  constexpr size_t kBytes = 64 * 1024;
  auto *src = static_cast<uint8_t *>(tshmem_malloc(kBytes));
  ASSERT_NE(src, nullptr);
  for (size_t i = 0; i < kBytes; ++i) src[i] = pattern(me_, i, 9);
  tshmem_barrier_all();
  const int from = other_node();
  const uint64_t size = channel_->stage_bytes;
  size_t wrong = 0, early = 0;
  uint64_t reserved = 0;
  std::vector<uint8_t> got(1024);
  for (size_t k = 0; k < 300; ++k) {
    const size_t bytes = 1 + (k * 53) % 1024, offset = (k * 131) % (kBytes - 1024);
    const uint64_t pos = tshmemi_proxy_stage_reserve(channel_, bytes);
    reserved += TSHMEMI_PROXY_STAGE_RESERVED(bytes);
    const uint64_t ticket = staged_get(src + offset, bytes, from, pos);
    ASSERT_TRUE(staged_get_complete(ticket)) << "staged GET " << ticket << ": its result tag never said complete";
    if (__atomic_load_n(&channel_->stage_freed, __ATOMIC_ACQUIRE) > pos) ++early;  // freed before it was read
    for (size_t i = 0; i < bytes; ++i) got[i] = channel_->staging[(pos + i) % size];
    for (size_t i = 0; i < bytes; ++i)
      if (got[i] != pattern(from, offset + i, 9)) ++wrong;
    hand_back(ticket);
  }
  EXPECT_GE(reserved, 2 * size) << "the gets wrapped the staging ring";
  EXPECT_EQ(wrong, 0u) << "bytes of staged gets wrong";
  EXPECT_EQ(early, 0u) << "a staged get's staging was freed before its reader had taken the data";
  tshmem_barrier_all();
  tshmem_free(src);
}

// More producers of staged gets than the ring has tickets (a warp of a kernel's thread-scope gets through a ring of
// 2): each holds its ticket until it has read its data, so a producer that needed a further ticket to learn that
// its get is complete (a QUIET) would wait for ever behind the others; each waits on its own ticket's result tag.
TEST_F(ProxyTest, StagedGetsFromMoreProducersThanTheRingHoldsComplete) {
  ScopedEnv stage_max("TSHMEM_PROXY_STAGE_MAX", "256");
  start("2", "64");
  constexpr int kThreads = 8, kPerThread = 40;
  constexpr size_t kBytes = 4096;
  auto *src = static_cast<uint8_t *>(tshmem_malloc(kBytes));
  ASSERT_NE(src, nullptr);
  for (size_t i = 0; i < kBytes; ++i) src[i] = pattern(me_, i, 5);
  tshmem_barrier_all();
  const int from = other_node();
  const uint64_t size = channel_->stage_bytes;
  std::atomic<int> wrong{0}, never{0};
  std::atomic<bool> given_up{false};  // once one wait failed, the others only hand their tickets back
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const size_t bytes = 1 + static_cast<size_t>(t * 37 + i * 11) % 200;
        const size_t offset = static_cast<size_t>(t * 401 + i * 97) % (kBytes - 256);
        const uint64_t pos = tshmemi_proxy_stage_reserve(channel_, bytes);
        const uint64_t ticket = staged_get(src + offset, bytes, from, pos);
        if (!given_up.load() && !staged_get_complete(ticket)) {
          ++never;
          given_up = true;
        }
        if (!given_up.load())
          for (size_t k = 0; k < bytes; ++k)
            if (channel_->staging[(pos + k) % size] != pattern(from, offset + k, 5)) ++wrong;
        hand_back(ticket);
      }
    });
  for (std::thread &p : producers) p.join();
  EXPECT_EQ(never.load(), 0) << "a staged get's result tag never said complete: its producer would wait for ever";
  EXPECT_EQ(wrong.load(), 0) << "bytes of staged gets wrong";
  tshmem_barrier_all();
  tshmem_free(src);
}

// Staged gets in flight together, as a block of thread-scope gets posts them (the proxy completes each when its last
// byte has arrived, not one after another): each of up to 16 chunks, more chunks than replies may be awaited at
// once (so a get's first chunks arrive before its last are asked for), the staging wrapping. A ticket's result tag
// may say complete only once every byte of its get is in the staging, and each get reads what the put posted just
// before it wrote there (a put and a get to one PE apply in the order posted).
TEST_F(ProxyTest, StagedGetsInFlightTogetherCompleteWithAllTheirBytes) {
  ScopedEnv stage_max("TSHMEM_PROXY_STAGE_MAX", "1K");
  start("64", "64");
  constexpr size_t kMost = 1024;
  const size_t window = channel_->capacity / 2;  // a put and a get each: the ring holds the whole window
  auto *buf = static_cast<uint8_t *>(tshmem_calloc(window, kMost));
  ASSERT_NE(buf, nullptr);
  tshmem_barrier_all();
  const int target = other_node();  // the only PE that writes `buf` of its target
  const uint64_t size = channel_->stage_bytes;
  std::vector<std::vector<uint8_t>> sources(window, std::vector<uint8_t>(kMost));
  std::vector<uint64_t> tickets(window), pos(window);
  size_t wrong = 0, never = 0;
  uint64_t reserved = 0;
  constexpr size_t kRounds = 40;
  for (size_t round = 0; round < kRounds; ++round) {
    const auto bytes_of = [&](size_t w) { return 1 + (round * 389 + w * 173) % kMost; };
    for (size_t w = 0; w < window; ++w) {
      for (size_t i = 0; i < kMost; ++i) sources[w][i] = pattern(me_, i, round);
      put(buf + w * kMost, sources[w].data(), bytes_of(w), target);
      pos[w] = tshmemi_proxy_stage_reserve(channel_, bytes_of(w));
      reserved += TSHMEMI_PROXY_STAGE_RESERVED(bytes_of(w));
      tickets[w] = staged_get(buf + w * kMost, bytes_of(w), target, pos[w]);
    }
    // Each get's data is read the moment its tag says complete (while the others are still in flight).
    const tshmemi_proxy_result *results = tshmemi_proxy_results(channel_, channel_->capacity);
    std::vector<bool> read(window, false);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (size_t left = window; left > 0 && std::chrono::steady_clock::now() < deadline;) {
      for (size_t k = 0; k < window; ++k) {
        const uint64_t tag = __atomic_load_n(&results[tickets[k] & (channel_->capacity - 1)].tag, __ATOMIC_ACQUIRE);
        if (read[k] || tag != tickets[k] + 1) continue;
        for (size_t i = 0; i < bytes_of(k); ++i)
          if (channel_->staging[(pos[k] + i) % size] != pattern(me_, i, round)) ++wrong;
        read[k] = true;
        --left;
      }
      std::this_thread::yield();
    }
    never += static_cast<size_t>(std::count(read.begin(), read.end(), false));
    for (size_t w = 0; w < window; ++w) hand_back(tickets[w]);
    ASSERT_EQ(never, 0u) << "round " << round << ": a staged get's result tag never said complete";
    quiet();  // the puts' sources are read: the next round rewrites them
  }
  EXPECT_EQ(wrong, 0u) << "bytes of staged gets wrong (a tag raised before all of a get's bytes had come, or a get "
                          "that overtook the put before it)";
  EXPECT_GE(reserved, 2 * size) << "the gets wrapped the staging ring";
  tshmem_barrier_all();
  tshmem_free(buf);
}

// Without put staging (TSHMEM_PROXY_STAGE_MAX=0) a staged request is refused by name, and puts still go.
TEST_F(ProxyTest, StagedPayloadWithoutStagingIsRefused) {
  ScopedEnv stage_max("TSHMEM_PROXY_STAGE_MAX", "0");
  start();
  EXPECT_EQ(channel_->staging, nullptr);
  EXPECT_EQ(channel_->stage_bytes, 0u);
  auto *p = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(p, nullptr);
  const uint64_t before = tshmemi_proxy_refused(nullptr, 0);
  tshmemi_proxy_request r = {};
  r.op = TSHMEMI_PROXY_PUT;
  r.flags = TSHMEMI_PROXY_FLAG_STAGED;
  r.pe = other_node();
  r.remote = offset_of(p);
  r.bytes = 16;
  post(r);
  quiet();
  char text[512] = {};
  EXPECT_EQ(tshmemi_proxy_refused(text, sizeof(text)) - before, 1u);
  EXPECT_NE(std::string(text).find("refused: staged payload on a channel without put staging"), std::string::npos)
      << text;
  const uint64_t value = 78;
  put(p, &value, sizeof(value), other_node());
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(*p, 78u);
  tshmem_barrier_all();
  tshmem_free(p);
}

TEST_F(ProxyTest, AtomicsFromEveryPeToOneWordCountExactly) {
  start();
  auto *words = static_cast<uint64_t *>(tshmem_calloc(4, sizeof(uint64_t)));
  ASSERT_NE(words, nullptr);
  constexpr int kEach = 200;
  std::vector<uint64_t> fetched(kEach, ~0ull);
  std::vector<uint32_t> fetched32(kEach, ~0u);
  auto *word32 = reinterpret_cast<uint32_t *>(words + 1);
  for (int i = 0; i < kEach; ++i) {
    amo(words, TSHMEMI_AMO_FETCH_ADD, 8, 1, 0, &fetched[static_cast<size_t>(i)], 0);
    amo(word32, TSHMEMI_AMO_FETCH_INC, 4, 0, 0, &fetched32[static_cast<size_t>(i)], 0);
    amo(words + 2, TSHMEMI_AMO_ADD, 8, 3, 0, nullptr, 0);
  }
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  const uint64_t total = static_cast<uint64_t>(kEach) * static_cast<uint64_t>(n_);
  if (me_ == 0) {
    EXPECT_EQ(words[0], total) << "64-bit fetch-add from every PE";
    EXPECT_EQ(*word32, static_cast<uint32_t>(total)) << "32-bit fetch-inc from every PE";
    EXPECT_EQ(words[2], 3 * total) << "non-fetching add from every PE";
  }
  // Every old value was handed out exactly once.
  std::vector<uint64_t> all(total);
  MPI_Allgather(fetched.data(), kEach, MPI_UINT64_T, all.data(), kEach, MPI_UINT64_T, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(all[i], i) << "fetch-add results are not 0 .. " << total - 1;
  std::vector<uint32_t> all32(total);
  MPI_Allgather(fetched32.data(), kEach, MPI_UINT32_T, all32.data(), kEach, MPI_UINT32_T, MPI_COMM_WORLD);
  std::sort(all32.begin(), all32.end());
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(all32[i], i) << "fetch-inc results are not 0 .. " << total - 1;
  tshmem_barrier_all();
  tshmem_free(words);
}

TEST_F(ProxyTest, EveryAtomicKindGivesItsResult) {
  start();
  auto *words = static_cast<uint64_t *>(tshmem_calloc(static_cast<size_t>(n_), sizeof(uint64_t)));
  ASSERT_NE(words, nullptr);
  uint64_t *mine = words + me_;  // on the target: each origin owns one word there
  const int target = other_node();
  struct Step {
    unsigned kind;
    uint64_t value, compare, old_expected, new_expected;
  };
  const Step steps[] = {
      {TSHMEMI_AMO_SET, 0xF0F0, 0, 0, 0xF0F0},
      {TSHMEMI_AMO_FETCH, 0, 0, 0xF0F0, 0xF0F0},
      {TSHMEMI_AMO_FETCH_AND, 0xFF00, 0, 0xF0F0, 0xF000},
      {TSHMEMI_AMO_FETCH_OR, 0x000F, 0, 0xF000, 0xF00F},
      {TSHMEMI_AMO_FETCH_XOR, 0xFFFF, 0, 0xF00F, 0x0FF0},
      {TSHMEMI_AMO_SWAP, 42, 0, 0x0FF0, 42},
      {TSHMEMI_AMO_CSWAP, 7, 41, 42, 42},
      {TSHMEMI_AMO_CSWAP, 7, 42, 42, 7},
      {TSHMEMI_AMO_FETCH_INC, 0, 0, 7, 8},
      {TSHMEMI_AMO_INC, 0, 0, 8, 9},
      {TSHMEMI_AMO_AND, 1, 0, 9, 1},
      {TSHMEMI_AMO_OR, 6, 0, 1, 7},
      {TSHMEMI_AMO_XOR, 5, 0, 7, 2},
      {TSHMEMI_AMO_FETCH_ADD, 40, 0, 2, 42},
  };
  for (const Step &s : steps) {
    uint64_t old = ~0ull, now = ~0ull;
    const bool fetching = (s.kind & TSHMEMI_AMO_FETCH) != 0;
    amo(mine, s.kind, 8, s.value, s.compare, fetching ? &old : nullptr, target);
    amo(mine, TSHMEMI_AMO_FETCH, 8, 0, 0, &now, target);
    quiet();
    if (fetching) {
      EXPECT_EQ(old, s.old_expected) << "old value of kind " << s.kind;
    }
    EXPECT_EQ(now, s.new_expected) << "value after kind " << s.kind;
  }
  tshmem_barrier_all();
  tshmem_free(words);
}

// What a kernel's p, g and fetching atomics post: the value inside the request, results in the channel's
// result slots (waited for by tag, without a QUIET). A ring of 64: three times round its result slots is 192 round
// trips, one after the other (round the default ring's 1,024 slots, 3,072 took 8 s over tcp).
TEST_F(ProxyTest, InlinePutsAndResultSlots) {
  start("64");
  auto *words = static_cast<uint64_t *>(tshmem_calloc(static_cast<size_t>(n_), sizeof(uint64_t)));
  ASSERT_NE(words, nullptr);
  const int target = other_node();
  tshmemi_proxy_request p = {};
  p.op = TSHMEMI_PROXY_PUT;
  p.flags = TSHMEMI_PROXY_FLAG_INLINE;
  p.pe = target;
  p.remote = offset_of(words + me_);
  p.bytes = 8;
  p.value = 0x1234000 + static_cast<uint64_t>(me_);
  post(p);
  EXPECT_EQ(tshmemi_proxy_result_wait(channel_, g(words + me_, target)), 0x1234000 + static_cast<uint64_t>(me_))
      << "g after p from the same PE sees the p";
  tshmemi_proxy_request a = {};
  a.op = TSHMEMI_PROXY_AMO;
  a.flags = TSHMEMI_PROXY_FLAG_RESULT_SLOT;
  a.amo = TSHMEMI_AMO_FETCH_ADD;
  a.width = 8;
  a.pe = target;
  a.remote = offset_of(words + me_);
  a.value = 1;
  for (uint64_t i = 0; i < 3 * channel_->capacity; ++i)  // around the result slots more than once
    ASSERT_EQ(tshmemi_proxy_result_wait(channel_, post(a)), 0x1234000 + static_cast<uint64_t>(me_) + i);
  quiet();
  tshmem_barrier_all();
  tshmem_free(words);
}

// A fetched value stays in its result slot until its reader has taken it, however far the ring goes round in
// between: with a ring of 2, four producers that read their results slowly would otherwise see a later
// ticket's value land in the slot first (and wait for their own tag forever).
TEST_F(ProxyTest, ResultSlotsAreNotReusedBeforeTheyAreRead) {
  start("2");
  constexpr int kThreads = 4, kPerThread = 40;
  auto *words = static_cast<uint64_t *>(tshmem_calloc(kThreads * kPerThread, sizeof(uint64_t)));
  ASSERT_NE(words, nullptr);
  for (size_t k = 0; k < kThreads * kPerThread; ++k) words[k] = 1000000ull * static_cast<uint64_t>(me_ + 1) + k;
  tshmem_barrier_all();  // every PE's words are set (the shm heap is this process's memory)
  const int target = other_node();
  std::atomic<int> wrong{0}, lost{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t)
    readers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const size_t k = static_cast<size_t>(t * kPerThread + i);
        const uint64_t ticket = g(words + k, target);
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // a slow reader: the others go on
        const tshmemi_proxy_result *slot =
            tshmemi_proxy_results(channel_, channel_->capacity) + (ticket & (channel_->capacity - 1));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (__atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) != ticket + 1 &&
               std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
        if (__atomic_load_n(&slot->tag, __ATOMIC_ACQUIRE) != ticket + 1) {
          ++lost;  // overwritten by a later ticket's value: give up on this thread
          return;
        }
        if (tshmemi_proxy_result_wait(channel_, ticket) != 1000000ull * static_cast<uint64_t>(target + 1) + k) ++wrong;
      }
    });
  for (std::thread &r : readers) r.join();
  EXPECT_EQ(lost.load(), 0) << "result slots reused before their reader took the value";
  EXPECT_EQ(wrong.load(), 0) << "g returned another word's value";
  quiet();
  tshmem_barrier_all();
  tshmem_free(words);
}

TEST_F(ProxyTest, MalformedRequestsAreRefusedWithAMessage) {
  start();
  auto *p = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(p, nullptr);
  char text[512] = {};
  const uint64_t before = tshmemi_proxy_refused(text, sizeof(text));
  struct Case {
    tshmemi_proxy_request request;
    const char *rule;
  };
  uint64_t result = 0;
  std::vector<Case> cases(5);
  cases[0].request.op = 99;
  cases[0].rule = "unknown op";
  cases[1].request.op = TSHMEMI_PROXY_PUT;
  cases[1].request.pe = n_;
  cases[1].request.bytes = 8;
  cases[1].request.local = reinterpret_cast<uint64_t>(&result);
  cases[1].rule = "PE out of range";
  cases[2].request.op = TSHMEMI_PROXY_PUT;
  cases[2].request.pe = other_node();
  cases[2].request.remote = tshmemx_heap_size() - 4;
  cases[2].request.bytes = 8;
  cases[2].request.local = reinterpret_cast<uint64_t>(&result);
  cases[2].rule = "remote range outside the symmetric heap";
  cases[3].request.op = TSHMEMI_PROXY_AMO;
  cases[3].request.pe = other_node();
  cases[3].request.amo = TSHMEMI_AMO_ADD;
  cases[3].request.width = 3;
  cases[3].request.remote = offset_of(p);
  cases[3].rule = "atomic width is not 4 or 8";
  cases[4].request.op = TSHMEMI_PROXY_AMO;
  cases[4].request.pe = other_node();
  cases[4].request.amo = TSHMEMI_AMO_FETCH_ADD;
  cases[4].request.width = 8;
  cases[4].request.remote = offset_of(p);
  cases[4].rule = "fetching atomic without a result address";
  for (const Case &c : cases) {
    post(c.request);
    quiet();  // the proxy goes on after a refusal
    tshmemi_proxy_refused(text, sizeof(text));
    EXPECT_NE(std::string(text).find(std::string("refused: ") + c.rule), std::string::npos) << text;
  }
  // Staged payloads that break the rules: reserved as a producer does (the proxy frees what was reserved).
  Case staged_amo{};
  staged_amo.request.op = TSHMEMI_PROXY_AMO;
  staged_amo.request.pe = other_node();
  staged_amo.request.amo = TSHMEMI_AMO_ADD;
  staged_amo.request.width = 8;
  staged_amo.request.remote = offset_of(p);
  staged_amo.request.bytes = 8;
  staged_amo.rule = "staged payload on an op other than a put or get";
  Case too_large{};
  too_large.request.op = TSHMEMI_PROXY_PUT;
  too_large.request.pe = other_node();
  too_large.request.remote = 0;
  too_large.request.bytes = channel_->stage_max + 1;
  too_large.rule = "staged payload larger than TSHMEM_PROXY_STAGE_MAX";
  for (Case c : {staged_amo, too_large}) {
    c.request.flags = TSHMEMI_PROXY_FLAG_STAGED;
    c.request.local = tshmemi_proxy_stage_reserve(channel_, std::min<uint64_t>(c.request.bytes, channel_->stage_max));
    post(c.request);
    cases.push_back(c);
    quiet();
    tshmemi_proxy_refused(text, sizeof(text));
    EXPECT_NE(std::string(text).find(std::string("refused: ") + c.rule), std::string::npos) << text;
  }
  EXPECT_EQ(tshmemi_proxy_refused(nullptr, 0) - before, cases.size());
  // A refused staged GET ends its producer's wait all the same: its result tag says complete.
  const uint64_t big_ticket = staged_get(tshmemx_heap_base(), channel_->stage_max + 1, other_node(),
                                         tshmemi_proxy_stage_reserve(channel_, channel_->stage_max));
  EXPECT_TRUE(staged_get_complete(big_ticket)) << "a refused staged GET left its producer waiting";
  hand_back(big_ticket);
  EXPECT_EQ(tshmemi_proxy_refused(nullptr, 0) - before, cases.size() + 1);
  // A good request after the bad ones still works.
  const uint64_t value = 77;
  put(p, &value, sizeof(value), other_node());
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(*p, 77u);
  tshmem_barrier_all();
  tshmem_free(p);
}

// A reply that matches no request in flight (a forged or stale id, a fetch nobody made) is refused: nothing of it
// is written anywhere, the count and the message say so, and the proxy goes on.
TEST_F(ProxyTest, RepliesThatMatchNoRequestAreRefused) {
  start();
  auto *victim = static_cast<uint64_t *>(tshmem_calloc(64, sizeof(uint64_t)));
  ASSERT_NE(victim, nullptr);
  const uint64_t before = tshmemi_proxy_refused(nullptr, 0);
  MPI_Barrier(MPI_COMM_WORLD);  // every PE has its count before any forged reply arrives
  // Every PE sends the PE one node on four replies nobody asked for: id 0, an id of a table index never used,
  // an id whose index exists but whose serial does not, and a huge one.
  const uint64_t ids[] = {0, 63, (uint64_t{1234} << 6) | 1, ~uint64_t{0}};
  for (uint64_t id : ids) ASSERT_EQ(tshmemi_proxy_send_unsolicited_reply(other_node(), id, 64), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (tshmemi_proxy_refused(nullptr, 0) - before < 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  char text[512] = {};
  EXPECT_EQ(tshmemi_proxy_refused(text, sizeof(text)) - before, 4u);
  EXPECT_NE(std::string(text).find("a reply that matches no request in flight"), std::string::npos) << text;
  for (int i = 0; i < 64; ++i) EXPECT_EQ(victim[i], 0u) << "word " << i;
  MPI_Barrier(MPI_COMM_WORLD);  // every PE has looked before any writes below
  // The proxy goes on: a get and a put through it still work.
  const uint64_t value = 0x77;
  put(victim + 5, &value, sizeof(value), other_node());
  quiet();
  MPI_Barrier(MPI_COMM_WORLD);
  uint64_t fetched = 0;
  get(&fetched, victim + 5, sizeof(fetched), other_node());
  quiet();
  EXPECT_EQ(fetched, 0x77u);
  tshmem_barrier_all();
  tshmem_free(victim);
}

// A large host put that skipped tshmem_putmem's checks (a broken or hostile peer) into the region tshmem keeps at the
// end of the target's heap is refused: by the target (the ucx direct mode's large puts, which its target receives by
// rendezvous) or by the origin's proxy, which checks what it takes from a channel (the staged protocols). Nothing of
// it is written, the refusal is counted and says why; where the target's verdict comes back to the origin, the put
// fails as a bad argument. Either way the off-node path goes on.
TEST_F(ProxyTest, LargeHostPutsIntoTheKeptRegionAreRefusedAtTheTarget) {
  start();
  const uint64_t area = TSHMEMI_COLL_SPAN_OFFSET(tshmemx_heap_size());
  const size_t bytes = 256 * 1024;  // a large put: the ucx direct mode's rendezvous
  ASSERT_LE(area + bytes, tshmemx_heap_size());
  auto *word = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(word, nullptr);
  char path[256] = {};
  ASSERT_EQ(tshmemx_peer_path(other_node(), path, sizeof(path)), 0) << tshmemx_last_error();
  const bool verdict_returned = std::string(path).rfind("ucx direct", 0) == 0;
  const uint64_t before = tshmemi_proxy_refused(nullptr, 0);
  MPI_Barrier(MPI_COMM_WORLD);  // every PE has its count before any such put arrives
  const std::vector<unsigned char> junk(bytes, 0xee);
  const int rc = tshmemi_proxy_put_unchecked(other_node(), area, junk.data(), bytes);
  if (verdict_returned) {
    EXPECT_EQ(rc, TSHMEM_ERR_INVALID_ARG) << tshmemx_last_error();
    EXPECT_NE(std::string(tshmemx_last_error()).find("refused the put of 262144 bytes"), std::string::npos)
        << tshmemx_last_error();
  }
  tshmem_quiet();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (tshmemi_proxy_refused(nullptr, 0) == before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  char text[512] = {};
  EXPECT_EQ(tshmemi_proxy_refused(text, sizeof(text)) - before, 1u) << "one such put each";
  EXPECT_NE(std::string(text).find("refused"), std::string::npos) << text;
  EXPECT_NE(std::memcmp(static_cast<const char *>(tshmemx_heap_base()) + area, junk.data(), bytes), 0)
      << "the refused put was written";
  MPI_Barrier(MPI_COMM_WORLD);
  const uint64_t value = 0x5151;  // the path goes on
  EXPECT_EQ(tshmem_putmem(word, &value, sizeof(value), other_node()), 0) << tshmemx_last_error();
  tshmem_barrier_all();
  EXPECT_EQ(*word, 0x5151u);
  tshmem_free(word);
}

TEST_F(ProxyTest, HostBarrierCompletesWhatWasPosted) {
  start();
  const size_t bytes = 200 * 1024 + 1;
  auto *block = static_cast<uint8_t *>(tshmem_calloc(bytes, 1));
  ASSERT_NE(block, nullptr);
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(me_, i, 3);
  put(block, data.data(), bytes, other_node());
  tshmem_barrier_all();  // no QUIET posted: the host barrier's quiet covers the device channel
  const int source = (me_ - node_size_ + n_) % n_;
  size_t bad = bytes;
  for (size_t i = 0; i < bytes && bad == bytes; ++i)
    if (block[i] != pattern(source, i, 3)) bad = i;
  EXPECT_EQ(bad, bytes) << "first wrong byte " << bad;
  tshmem_barrier_all();
  tshmem_free(block);
}

// After the channels have been quiet a while the proxy's pause may have grown (where the host's PEs have fewer cores
// than threads: cores_shared); what a producer posts then, and what other PEs send, still completes, each round
// after a longer spell, on every transport.
TEST_F(ProxyTest, RequestsAfterQuietSpellsComplete) {
  start();
  const int n = n_;
  auto *inbox = static_cast<uint64_t *>(tshmem_calloc(static_cast<size_t>(n) * 2, sizeof(uint64_t)));
  ASSERT_NE(inbox, nullptr);
  for (int round = 1; round <= 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150 * round));  // longer than the 100 ms before it grows
    const uint64_t from_channel = 1000u * static_cast<uint64_t>(round) + static_cast<uint64_t>(me_);
    const uint64_t from_host = from_channel + 500u;
    for (int pe = 0; pe < n; ++pe) {
      if (same_node(pe)) continue;
      put(&inbox[2 * me_], &from_channel, sizeof from_channel, pe);  // a kernel's put (device channel)
      ASSERT_EQ(tshmem_putmem(&inbox[2 * me_ + 1], &from_host, sizeof from_host, pe), 0) << tshmemx_last_error();
    }
    quiet();
    tshmem_quiet();
    tshmem_barrier_all();
    for (int pe = 0; pe < n; ++pe) {
      if (same_node(pe)) continue;
      EXPECT_EQ(inbox[2 * pe], 1000u * static_cast<uint64_t>(round) + static_cast<uint64_t>(pe))
          << "round " << round << ": the device channel's put from PE " << pe;
      EXPECT_EQ(inbox[2 * pe + 1], 1000u * static_cast<uint64_t>(round) + static_cast<uint64_t>(pe) + 500u)
          << "round " << round << ": the host put from PE " << pe;
    }
    tshmem_barrier_all();
  }
  tshmem_free(inbox);
}

TEST_F(ProxyTest, FinalizeWithRequestsInFlight) {
  start("8", "1K");
  auto *block = static_cast<uint8_t *>(tshmem_malloc(16 * 1024));
  ASSERT_NE(block, nullptr);
  std::vector<uint8_t> data(16 * 1024, static_cast<uint8_t>(me_));
  const int nodes = n_ / node_size_;
  for (int i = 0; i < 20; ++i) put(block, data.data(), data.size(), other_node(1 + i % (nodes - 1)));
  tshmem_finalize();  // drains: must return, on every PE
  initialised_ = false;
  EXPECT_EQ(tshmem_my_pe(), -1);
  EXPECT_TRUE(all_pes(true));
  start();  // and tshmem starts again cleanly
  EXPECT_EQ(tshmem_n_pes(), world_size());
}

}  // namespace
}  // namespace tshmem_test
