// The C API that language bindings stand on: notes on collective calls (compared and named by the symmetry
// check, refusals that fail every PE), init over the application's collectives, pointer queries with reasons,
// host put-with-signal and signal waits, tshmemx_info. On the shm backend, at 1, 2 and 4 PEs.
#include <mpi.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fixture.h"
#include "tshmem/device/defines.cuh"

namespace tshmem_test {
namespace {

using Binding = TshmemTest;

bool same_message_everywhere(const std::string &message) {
  const auto hashes = allgather(static_cast<long long>(std::hash<std::string>{}(message)));
  for (long long h : hashes)
    if (h != hashes[0]) return false;
  return true;
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST_F(Binding, NotesThatMatchAllocateAndNotesThatDifferFailEverywhereNamingBoth) {
  tshmemx_note_next_collective("tshmem.empty(shape=(4, 2), dtype=float32)", nullptr);
  void *p = tshmem_malloc(32);
  ASSERT_NE(p, nullptr) << last_error();
  tshmem_free(p);
  if (n_ < 2) GTEST_SKIP() << "needs 2 PEs to diverge";
  // Same bytes, different shapes: the note decides.
  tshmemx_note_next_collective(
      me_ == 1 ? "tshmem.empty(shape=(8,), dtype=int32)" : "tshmem.empty(shape=(4, 2), dtype=float32)", nullptr);
  void *q = tshmem_malloc(32);
  EXPECT_EQ(q, nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  const std::string message = last_error();
  EXPECT_TRUE(contains(message, "divergent PE 1.")) << message;
  EXPECT_TRUE(contains(message, "tshmem.empty(shape=(8,), dtype=int32): tshmem_malloc(size=32)")) << message;
  EXPECT_TRUE(contains(message, "tshmem.empty(shape=(4, 2), dtype=float32): tshmem_malloc(size=32)")) << message;
  EXPECT_TRUE(same_message_everywhere(message)) << message;
  // Nothing was allocated: the next block starts where the first one did.
  void *r = tshmem_malloc(32);
  EXPECT_EQ(r, p);
  tshmem_free(r);
}

TEST_F(Binding, ANoteIsTakenByOneCallOnly) {
  tshmemx_note_next_collective(me_ == 0 ? "a" : "b", nullptr);
  tshmemx_note_next_collective(nullptr, nullptr);  // dropped
  void *p = tshmem_malloc(64);
  EXPECT_NE(p, nullptr) << last_error();
  tshmemx_note_next_collective("the same everywhere", nullptr);
  tshmem_free(p);  // takes it
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
  tshmem_barrier_all();  // no note left
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
}

TEST_F(Binding, ALocalRefusalFailsTheCallOnEveryPe) {
  // Refused everywhere alike: TSHMEM_ERR_INVALID_ARG with every PE's message.
  tshmemx_note_next_collective("tshmem.empty(shape=(-1,), dtype=float32)", "shape: dimension 0 is -1 < 0");
  EXPECT_EQ(tshmem_malloc(0), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG) << last_error();
  EXPECT_TRUE(contains(last_error(), "shape: dimension 0 is -1 < 0")) << last_error();
  EXPECT_TRUE(same_message_everywhere(last_error())) << last_error();
  if (n_ < 2) return;
  // Refused on the last PE only, beside valid calls elsewhere: asymmetric, that PE named with its reason; the
  // valid PEs' blocks are rolled back.
  const bool refuse = me_ == n_ - 1;
  tshmemx_note_next_collective("tshmem.zeros(shape=(16,), dtype=float32)",
                               refuse ? "dtype: object is not numeric" : nullptr);
  EXPECT_EQ(tshmem_calloc(refuse ? 0 : 16, 4), nullptr);
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC) << last_error();
  EXPECT_TRUE(contains(last_error(), "dtype: object is not numeric")) << last_error();
  EXPECT_TRUE(contains(last_error(), "divergent PE " + std::to_string(n_ - 1) + ".")) << last_error();
  EXPECT_TRUE(same_message_everywhere(last_error())) << last_error();
  // A refused free frees nothing anywhere.
  void *p = tshmem_malloc(128);
  ASSERT_NE(p, nullptr) << last_error();
  tshmemx_note_next_collective("tshmem.free", refuse ? "not a tensor of the symmetric heap" : nullptr);
  tshmem_free(p);  // the same call everywhere, refused on one PE: TSHMEM_ERR_INVALID_ARG everywhere
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_ARG) << last_error();
  EXPECT_TRUE(contains(last_error(), "not a tensor of the symmetric heap")) << last_error();
  tshmemx_clear_last_error();
  tshmem_free(p);  // still live everywhere
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_SUCCESS) << last_error();
}

TEST_F(Binding, PtrCheckedGivesTheAddressOrTheReason) {
  void *p = tshmem_malloc(256);
  ASSERT_NE(p, nullptr);
  void *out = reinterpret_cast<void *>(1);
  EXPECT_EQ(tshmemx_ptr_checked(p, 256, me_, &out), 0);
  EXPECT_EQ(out, p);  // the own copy is the object itself
  for (int pe = 0; pe < n_; ++pe) {
    EXPECT_EQ(tshmemx_ptr_checked(p, 256, pe, &out), 0) << last_error();
    EXPECT_EQ(out, tshmem_ptr(p, pe));
  }
  EXPECT_EQ(tshmemx_ptr_checked(p, 256, n_, &out), TSHMEM_ERR_INVALID_PE);
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(contains(last_error(), "PE " + std::to_string(n_) + " out of range")) << last_error();
  EXPECT_EQ(tshmemx_ptr_checked(p, 256, -1, &out), TSHMEM_ERR_INVALID_PE);
  int local = 0;
  EXPECT_EQ(tshmemx_ptr_checked(&local, 4, me_, &out), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_ptr_checked(p, tshmemx_heap_size(), me_, &out), TSHMEM_ERR_INVALID_ARG);  // runs past the end
  // Multicast: never on these hosts; the reason names the rule.
  EXPECT_EQ(tshmemx_mc_ptr_checked(TSHMEMX_TEAM_NODE, p, 256, &out), TSHMEM_ERR_CONFIG);
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(contains(last_error(), "multicast is off")) << last_error();
  EXPECT_EQ(tshmemx_mc_ptr_checked(77, p, 256, &out), TSHMEM_ERR_INVALID_ARG);
  tshmem_free(p);
}

TEST_F(Binding, PutWithSignalThenWait) {
  auto *data = static_cast<long *>(tshmem_calloc(8, sizeof(long)));
  auto *sig = static_cast<uint64_t *>(tshmem_calloc(2, sizeof(uint64_t)));
  ASSERT_TRUE(data != nullptr && sig != nullptr) << last_error();
  const int next = (me_ + 1) % n_, prev = (me_ + n_ - 1) % n_;
  long mine[8];
  for (int i = 0; i < 8; ++i) mine[i] = 1000 * me_ + i;
  EXPECT_EQ(tshmemx_putmem_signal(data, mine, sizeof mine, &sig[0], 7, TSHMEM_SIGNAL_SET, next), 0) << last_error();
  uint64_t found = 0;
  EXPECT_EQ(tshmemx_signal_wait_until(&sig[0], TSHMEM_CMP_EQ, 7, 10000, &found), 0) << last_error();
  EXPECT_EQ(found, 7u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(data[i], 1000 * prev + i);  // the data came before the signal
  tshmem_barrier_all();
  // ADD from every PE into PE 0's word.
  EXPECT_EQ(tshmemx_putmem_signal(data, mine, 0, &sig[1], 1, TSHMEM_SIGNAL_ADD, 0), 0) << last_error();
  if (me_ == 0) {
    EXPECT_EQ(tshmemx_signal_wait_until(&sig[1], TSHMEM_CMP_GE, static_cast<uint64_t>(n_), 10000, &found), 0);
    EXPECT_EQ(found, static_cast<uint64_t>(n_));
  }
  tshmem_barrier_all();
  // Bounded: a wait that cannot end fails with TSHMEM_ERR_TIMEOUT naming the word and what it holds.
  EXPECT_EQ(tshmemx_signal_wait_until(&sig[0], TSHMEM_CMP_GT, 7, 30, &found), TSHMEM_ERR_TIMEOUT);
  EXPECT_TRUE(contains(last_error(), "to be > 7; it holds 7")) << last_error();
  // Arguments checked before anything is written.
  EXPECT_EQ(tshmemx_putmem_signal(data, mine, 8, &sig[0], 1, TSHMEM_CMP_GE, next), TSHMEM_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(last_error(), "sig_op = 5")) << last_error();
  EXPECT_EQ(tshmemx_signal_wait_until(&sig[0], 9, 0, 10, nullptr), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_signal_wait_until(reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(sig) + 4), TSHMEM_CMP_EQ, 0,
                                      10, nullptr),
            TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_putmem_signal(data, mine, 8, &sig[0], 1, TSHMEM_SIGNAL_SET, n_), TSHMEM_ERR_INVALID_PE);
  tshmem_barrier_all();
  tshmem_free(sig);
  tshmem_free(data);
}

TEST(BindingInfo, InfoIsWhatTheToolPrints) {
  const size_t n = tshmemx_info(0, nullptr, 0);
  ASSERT_GT(n, 100u);
  std::string text(n + 1, '\0');
  EXPECT_EQ(tshmemx_info(0, text.data(), text.size()), n);
  EXPECT_TRUE(contains(text, "TSHMEM_SYMMETRIC_SIZE")) << text;
  char small[16];
  EXPECT_EQ(tshmemx_info(1, small, sizeof small), tshmemx_info(1, nullptr, 0));
  EXPECT_EQ(std::strlen(small), sizeof small - 1);
  EXPECT_EQ(small[0], '{');
}

// ---- init over the application's collectives (here: MPI's, called by the test, not by tshmem) ----------------

int mpi_allgather(const void *in, void *out, size_t bytes, void *) {
  return MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD);
}
int mpi_barrier(void *) { return MPI_Barrier(MPI_COMM_WORLD); }

struct Counting {
  int calls = 0;
};
int counting_allgather(const void *in, void *out, size_t bytes, void *user) {
  ++static_cast<Counting *>(user)->calls;
  return mpi_allgather(in, out, bytes, nullptr);
}

tshmemx_bootstrap_callbacks_t world_callbacks() {
  tshmemx_bootstrap_callbacks_t cb = TSHMEMX_BOOTSTRAP_CALLBACKS_INITIALIZER;
  cb.rank = world_rank();
  cb.n_pes = world_size();
  cb.allgather = mpi_allgather;
  cb.barrier = mpi_barrier;
  return cb;
}

TEST(BindingCallbacks, InitOverCallbacksRunsTheHeapAndRma) {
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "8M");
  Counting counting;
  tshmemx_bootstrap_callbacks_t cb = world_callbacks();
  cb.allgather = counting_allgather;
  cb.user = &counting;
  ASSERT_TRUE(all_pes(tshmemx_init_callbacks(0, &cb) == 0)) << tshmemx_last_error();
  EXPECT_GT(counting.calls, 0);
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  EXPECT_EQ(me, world_rank());
  EXPECT_EQ(n, world_size());
  EXPECT_EQ(tshmemx_local_n_pes(), n);  // one host
  auto *inbox = static_cast<long *>(tshmem_calloc(static_cast<size_t>(n), sizeof(long)));
  ASSERT_NE(inbox, nullptr) << tshmemx_last_error();
  const long note = 100 + me;
  for (int pe = 0; pe < n; ++pe) EXPECT_EQ(tshmem_putmem(&inbox[me], &note, sizeof note, pe), 0);
  tshmem_barrier_all();
  for (int pe = 0; pe < n; ++pe) EXPECT_EQ(inbox[pe], 100 + pe);
  // The symmetry check runs over the callbacks too.
  if (n > 1) {
    EXPECT_EQ(tshmem_malloc(me == 1 ? 64 : 128), nullptr);
    EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_ASYMMETRIC);
  }
  tshmem_free(inbox);
  tshmem_finalize();
  EXPECT_EQ(tshmem_my_pe(), -1);
}

TEST(BindingCallbacks, OtherNodesAreUnreachableSayingWhy) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs";
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv size("TSHMEM_SYMMETRIC_SIZE", "8M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", "1");  // every PE a node of its own
  ScopedEnv quiet("TSHMEM_DEBUG", "none");
  tshmemx_bootstrap_callbacks_t cb = world_callbacks();
  ASSERT_TRUE(all_pes(tshmemx_init_callbacks(0, &cb) == 0)) << tshmemx_last_error();
  const int me = tshmem_my_pe(), other = (me + 1) % tshmem_n_pes();
  EXPECT_EQ(tshmemx_local_n_pes(), 1);
  long *x = static_cast<long *>(tshmem_malloc(sizeof(long)));
  ASSERT_NE(x, nullptr) << tshmemx_last_error();
  long v = 1;
  EXPECT_EQ(tshmem_putmem(x, &v, sizeof v, other), TSHMEM_ERR_UNREACHABLE_PE);
  EXPECT_TRUE(contains(tshmemx_last_error(), "tshmemx_init_callbacks")) << tshmemx_last_error();
  void *out = nullptr;
  EXPECT_EQ(tshmemx_ptr_checked(x, sizeof(long), other, &out), TSHMEM_ERR_UNREACHABLE_PE);
  EXPECT_TRUE(contains(tshmemx_last_error(), "is on another node")) << tshmemx_last_error();
  EXPECT_TRUE(contains(tshmemx_last_error(), "tshmemx_init_callbacks")) << tshmemx_last_error();
  EXPECT_EQ(tshmem_pe_accessible(other), 0);
  EXPECT_EQ(tshmem_putmem(x, &v, sizeof v, me), 0);  // its own heap, always
  tshmem_free(x);
  tshmem_finalize();
}

TEST(BindingCallbacks, MalformedCallbacksAreRefusedBeforeAnyCall) {
  tshmemx_bootstrap_callbacks_t cb = world_callbacks();
  cb.magic = 0;
  EXPECT_EQ(tshmemx_init_callbacks(0, &cb), TSHMEM_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(tshmemx_last_error(), "TSHMEMX_BOOTSTRAP_CALLBACKS_INITIALIZER")) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_init_callbacks(0, nullptr), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_init_callbacks(TSHMEMX_INIT_WITH_MPI_COMM, &cb), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmem_my_pe(), -1);
}

}  // namespace
}  // namespace tshmem_test
