// The peer table and host RMA across real processes: every PE sees the others' writes through
// tshmem_ptr and through putmem/getmem; PE and range checks reject bad calls and write nothing.
#include <cstring>
#include <vector>

#include "fixture.h"
#include "tshmem/device/internal_regions.h"  // TSHMEM_INTERNAL_HEAP_BYTES

namespace tshmem_test {
namespace {

using Rma = TshmemTest;

TEST_F(Rma, OwnSlotIsOwnBaseAndPtrOfSelfIsIdentity) {
  void *p = tshmem_malloc(4096);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(tshmemx_peer_base(me_), tshmemx_heap_base()) << "bug report 3: the own slot must be the own base";
  EXPECT_EQ(tshmem_ptr(p, me_), p);
  EXPECT_EQ(tshmem_ptr(static_cast<char *>(p) + 123, me_), static_cast<char *>(p) + 123);
  for (int pe = 0; pe < n_; ++pe) EXPECT_NE(tshmemx_peer_base(pe), nullptr) << "node-local PE " << pe << " has a slot";
  tshmem_free(p);
}

TEST_F(Rma, AccessibilityQueriesAnswerWithoutErrors) {
  auto *p = static_cast<char *>(tshmem_malloc(64));
  ASSERT_NE(p, nullptr);
  for (int pe = 0; pe < n_; ++pe) {
    EXPECT_EQ(tshmem_pe_accessible(pe), 1) << "node-local PE " << pe;
    EXPECT_EQ(tshmem_addr_accessible(p + 63, pe), 1) << "PE " << pe;
  }
  int local = 0;
  tshmemx_clear_last_error();
  EXPECT_EQ(tshmem_pe_accessible(-1), 0);
  EXPECT_EQ(tshmem_pe_accessible(n_), 0);
  EXPECT_EQ(tshmem_addr_accessible(&local, me_), 0) << "not a symmetric address";
  EXPECT_EQ(tshmem_addr_accessible(p, n_), 0) << "PE out of range";
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << "a query sets no error: " << last_error();
  tshmem_free(p);
}

TEST_F(Rma, EveryPeSeesTheOthersWritesThroughPtr) {
  auto *slots = static_cast<long long *>(tshmem_calloc(static_cast<size_t>(n_), sizeof(long long)));
  ASSERT_NE(slots, nullptr);
  for (int pe = 0; pe < n_; ++pe) {
    auto *remote = static_cast<long long *>(tshmem_ptr(slots, pe));
    ASSERT_NE(remote, nullptr);
    remote[me_] = 1000LL * me_ + pe;  // my slot in PE pe's array
  }
  tshmem_barrier_all();
  for (int from = 0; from < n_; ++from) EXPECT_EQ(slots[from], 1000LL * from + me_) << "from PE " << from;
  tshmem_free(slots);
}

TEST_F(Rma, PutAndGetMoveEverySizeToTheRightPlace) {
  const size_t max_bytes = 1 << 20;
  auto *target = static_cast<unsigned char *>(tshmem_calloc(max_bytes + 64, 1));
  ASSERT_NE(target, nullptr);
  std::vector<unsigned char> source(max_bytes), back(max_bytes);
  const int right = (me_ + 1) % n_;
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{64}, size_t{4097}, max_bytes}) {
    const size_t skew = bytes % 13;  // odd offsets on both sides
    for (size_t i = 0; i < bytes; ++i)
      source[i] = static_cast<unsigned char>(i * 31 + static_cast<size_t>(me_) + bytes);
    ASSERT_EQ(tshmem_putmem(target + skew, source.data(), bytes, right), 0) << last_error();
    tshmem_barrier_all();
    const int left = (me_ + n_ - 1) % n_;
    bool ok = true;
    for (size_t i = 0; i < bytes; ++i)
      ok = ok && target[skew + i] == static_cast<unsigned char>(i * 31 + static_cast<size_t>(left) + bytes);
    EXPECT_TRUE(ok) << bytes << " bytes from PE " << left;
    ASSERT_EQ(tshmem_getmem(back.data(), target + skew, bytes, right), 0) << last_error();
    EXPECT_EQ(std::memcmp(back.data(), source.data(), bytes), 0) << "get returns what I put at PE " << right;
    tshmem_barrier_all();
  }
  EXPECT_EQ(tshmem_putmem(target, source.data(), 0, right), 0) << "zero bytes is a no-op";
  tshmem_free(target);
}

TEST_F(Rma, OutOfRangePesAreRejectedAndNothingIsWritten) {
  auto *buffer = static_cast<int *>(tshmem_calloc(16, sizeof(int)));
  ASSERT_NE(buffer, nullptr);
  const int value = 42;
  for (int pe : {-1, n_, 99}) {
    EXPECT_EQ(tshmem_putmem(buffer, &value, sizeof(value), pe), TSHMEM_ERR_INVALID_PE) << "PE " << pe;
    EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_PE);
    const std::string message = last_error();
    EXPECT_NE(message.find("tshmem_putmem: PE " + std::to_string(pe) + " out of range [0, " + std::to_string(n_) + ")"),
              std::string::npos)
        << message;
    int sink = 0;
    EXPECT_EQ(tshmem_getmem(&sink, buffer, sizeof(sink), pe), TSHMEM_ERR_INVALID_PE);
    EXPECT_EQ(tshmem_ptr(buffer, pe), nullptr);
    EXPECT_EQ(tshmemx_peer_base(pe), nullptr);
  }
  tshmem_barrier_all();
  bool untouched = true;
  for (int i = 0; i < 16; ++i) untouched = untouched && buffer[i] == 0;
  EXPECT_TRUE(all_pes(untouched));
  tshmem_free(buffer);
}

TEST_F(Rma, RangesOutsideTheHeapAreRejected) {
  auto *buffer = static_cast<char *>(tshmem_malloc(4096));
  ASSERT_NE(buffer, nullptr);
  char local[16] = {};
  EXPECT_EQ(tshmem_putmem(local, local, sizeof(local), 0), TSHMEM_ERR_INVALID_ARG) << "dest not symmetric";
  EXPECT_NE(last_error().find("not inside the symmetric heap"), std::string::npos) << last_error();
  char *heap_end = static_cast<char *>(tshmemx_heap_base()) + tshmemx_heap_size();
  EXPECT_EQ(tshmem_putmem(heap_end - 8, local, 16, 0), TSHMEM_ERR_INVALID_ARG) << "runs past the heap end";
  EXPECT_EQ(tshmem_putmem(buffer, nullptr, 16, 0), TSHMEM_ERR_INVALID_ARG) << "NULL source";
  EXPECT_EQ(tshmem_ptr(local, 0), nullptr);
  // One past the end is no heap address (on vmm the first registered buffer starts there).
  EXPECT_EQ(tshmem_ptr(heap_end, tshmem_my_pe()), nullptr) << "the heap's end";
  EXPECT_NE(tshmem_ptr(heap_end - 1, tshmem_my_pe()), nullptr) << "the heap's last byte";
  tshmem_free(buffer);
}

// The first TSHMEM_INTERNAL_HEAP_BYTES of the heap are tshmem's own (device barrier counters): host put and
// get there are refused, naming the region; tshmem_ptr still answers for any heap address.
TEST_F(Rma, TheReservedRegionIsNoTarget) {
  char *base = static_cast<char *>(tshmemx_heap_base());
  char local[16] = {};
  const int peer = (tshmem_my_pe() + 1) % tshmem_n_pes();
  EXPECT_EQ(tshmem_putmem(base, local, sizeof(local), peer), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("reserved region"), std::string::npos) << last_error();
  EXPECT_NE(last_error().find("TSHMEM_INTERNAL_HEAP_BYTES"), std::string::npos) << last_error();
  EXPECT_EQ(tshmem_getmem(local, base + TSHMEM_INTERNAL_HEAP_BYTES - 8, 8, peer), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(last_error().find("tshmem_getmem"), std::string::npos) << last_error();
  // A range that starts in the reserved region and ends in user memory is refused too.
  auto *block = static_cast<char *>(tshmem_malloc(4096));
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(tshmem_putmem(base + TSHMEM_INTERNAL_HEAP_BYTES - 8, local, sizeof(local), peer), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmem_putmem(block, local, sizeof(local), peer), TSHMEM_SUCCESS) << last_error();
  EXPECT_EQ(tshmem_ptr(base, tshmem_my_pe()), base);
  tshmem_barrier_all();
  tshmem_free(block);
}

TEST_F(Rma, BarrierOrdersWrites) {
  auto *flag = static_cast<int *>(tshmem_calloc(1, sizeof(int)));
  ASSERT_NE(flag, nullptr);
  for (int round = 1; round <= 50; ++round) {
    const int right = (me_ + 1) % n_;
    ASSERT_EQ(tshmem_putmem(flag, &round, sizeof(round), right), 0);
    tshmem_barrier_all();
    ASSERT_EQ(*flag, round) << "round " << round;
    tshmem_barrier_all();
  }
  tshmem_free(flag);
}

}  // namespace
}  // namespace tshmem_test
