// PEs of other nodes (design.md, "Beyond one node"), on one host: TSHMEM_DEBUG_NODE_SIZE splits the job
// into nodes of that many PEs. Their peer-table slots are 0 and tshmem_ptr is NULL, yet host putmem /
// getmem reach them (the off-node proxy, over two-sided MPI) at the same offsets, completed by quiet and
// barrier_all.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_test_env.h"
#include "tshmem/device/defines.cuh"  // TSHMEM_SIGNAL_*, TSHMEM_CMP_*
#include "tshmem/device/internal_regions.h"
#include "tshmem/device/state_types.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

#include <gtest/gtest.h>

namespace tshmem_test {
namespace {

class OffNode : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to make 2 nodes";
    // Nodes of 2 PEs at 4 PEs and more (on- and off-node peers both), else one PE per node.
    node_size_ = world_size() >= 4 ? 2 : 1;
    const std::string size = std::to_string(node_size_);
    ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
    ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "16M");
    ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", size.c_str());
    const int rc = tshmem_init();
    ASSERT_TRUE(all_pes(rc == 0)) << (rc == 0 ? "" : tshmemx_last_error());
    me_ = tshmem_my_pe();
    n_ = tshmem_n_pes();
    initialised_ = true;
  }
  void TearDown() override {
    if (initialised_) tshmem_finalize();
  }
  bool same_node(int pe) const { return pe / node_size_ == me_ / node_size_; }

  int node_size_ = 1, me_ = -1, n_ = 0;
  bool initialised_ = false;
};

TEST_F(OffNode, OtherNodesHaveNoSlotAndNoPointer) {
  void *p = tshmem_malloc(256);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(tshmemx_local_n_pes(), node_size_);
  EXPECT_EQ(tshmemx_peer_base(me_), tshmemx_heap_base()) << "the own slot is the own base";
  for (int pe = 0; pe < n_; ++pe) {
    EXPECT_EQ(tshmem_pe_accessible(pe), 1) << "PE " << pe << ": host put/get reach every PE on shm";
    EXPECT_EQ(tshmem_addr_accessible(p, pe), 1) << "PE " << pe;
    if (same_node(pe)) {
      EXPECT_NE(tshmem_ptr(p, pe), nullptr) << "PE " << pe << " shares the node";
    } else {
      EXPECT_EQ(tshmemx_peer_base(pe), nullptr) << "PE " << pe << " is on another node";
      EXPECT_EQ(tshmem_ptr(p, pe), nullptr) << "PE " << pe << " is on another node";
    }
  }
  tshmem_free(p);
}

TEST_F(OffNode, PutReachesEveryPeAtTheSameOffset) {
  const size_t max_bytes = (1 << 20) + 3;
  const size_t slot = max_bytes + 16;
  auto *inbox = static_cast<unsigned char *>(tshmem_calloc(slot * static_cast<size_t>(n_), 1));
  ASSERT_NE(inbox, nullptr);
  std::vector<unsigned char> source(max_bytes);
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{4097}, max_bytes}) {
    const size_t skew = bytes % 13;  // odd offsets on both sides
    for (size_t i = 0; i < bytes; ++i)
      source[i] = static_cast<unsigned char>(i * 7 + static_cast<size_t>(me_) * 29 + bytes);
    for (int pe = 0; pe < n_; ++pe)
      ASSERT_EQ(tshmem_putmem(inbox + static_cast<size_t>(me_) * slot + skew, source.data(), bytes, pe), 0)
          << "to PE " << pe << ": " << tshmemx_last_error();
    tshmem_barrier_all();  // completes every put (quiet) and makes the others' visible here
    for (int from = 0; from < n_; ++from) {
      const unsigned char *got = inbox + static_cast<size_t>(from) * slot + skew;
      size_t bad = bytes;
      for (size_t i = 0; i < bytes && bad == bytes; ++i)
        if (got[i] != static_cast<unsigned char>(i * 7 + static_cast<size_t>(from) * 29 + bytes)) bad = i;
      EXPECT_EQ(bad, bytes) << bytes << " bytes from PE " << from
                            << (same_node(from) ? " (same node)" : " (other node)") << ": first wrong byte at " << bad;
    }
    tshmem_barrier_all();
  }
  tshmem_free(inbox);
}

TEST_F(OffNode, GetReadsEveryPe) {
  const size_t bytes = 65536 + 5;
  auto *mine = static_cast<unsigned char *>(tshmem_malloc(bytes));
  ASSERT_NE(mine, nullptr);
  for (size_t i = 0; i < bytes; ++i) mine[i] = static_cast<unsigned char>(i ^ static_cast<size_t>(me_ * 41));
  tshmem_barrier_all();
  std::vector<unsigned char> back(bytes);
  for (int pe = 0; pe < n_; ++pe) {
    std::memset(back.data(), 0, bytes);
    ASSERT_EQ(tshmem_getmem(back.data(), mine, bytes, pe), 0) << "from PE " << pe << ": " << tshmemx_last_error();
    size_t bad = bytes;
    for (size_t i = 0; i < bytes && bad == bytes; ++i)
      if (back[i] != static_cast<unsigned char>(i ^ static_cast<size_t>(pe * 41))) bad = i;
    EXPECT_EQ(bad, bytes) << "from PE " << pe << ": first wrong byte at " << bad;
  }
  tshmem_barrier_all();
  tshmem_free(mine);
}

TEST_F(OffNode, QuietCompletesPutsBeforeAFlagIsRaised) {
  // Each PE puts a block to the PE of the next node, quiets, then raises a flag there. The flag's owner
  // polls it (the target's proxy applies arrivals on its own) and, once it is up, must find the block
  // whole: the quiet ordered the block before the flag.
  const int target = (me_ + node_size_) % n_;
  const int source = (me_ - node_size_ + n_) % n_;
  const size_t bytes = 256 * 1024;
  auto *block = static_cast<unsigned char *>(tshmem_calloc(bytes, 1));
  auto *flag = static_cast<long long *>(tshmem_calloc(1, sizeof(long long)));
  ASSERT_NE(block, nullptr);
  ASSERT_NE(flag, nullptr);
  std::vector<unsigned char> data(bytes, static_cast<unsigned char>(0x40 + me_));
  ASSERT_EQ(tshmem_putmem(block, data.data(), bytes, target), 0) << tshmemx_last_error();
  tshmem_quiet();
  const long long raised = 1 + me_;
  ASSERT_EQ(tshmem_putmem(flag, &raised, sizeof(raised), target), 0) << tshmemx_last_error();
  const double deadline = MPI_Wtime() + 30.0;
  while (*static_cast<volatile long long *>(flag) == 0 && MPI_Wtime() < deadline) {
  }
  EXPECT_EQ(*static_cast<volatile long long *>(flag), 1 + source) << "the flag from PE " << source << " never came";
  size_t bad = bytes;
  for (size_t i = 0; i < bytes && bad == bytes; ++i)
    if (block[i] != static_cast<unsigned char>(0x40 + source)) bad = i;
  EXPECT_EQ(bad, bytes) << "flag up but the block from PE " << source << " is not whole: first wrong byte at " << bad;
  tshmem_barrier_all();
  tshmem_free(flag);
  tshmem_free(block);
}

// The transport each PE of another node gets: the one TSHMEM_REMOTE_TRANSPORT names, else (auto) ucx where this build
// has it, else mpi; node peers are reached by loads and stores.
TEST_F(OffNode, EveryPeerSaysHowItIsReached) {
  const char *named = std::getenv("TSHMEM_REMOTE_TRANSPORT");
  const std::string expected = named != nullptr && std::string(named) != "auto" ? named
                               : TSHMEM_TEST_UCX_BUILT                          ? "ucx"
                                                                                : "mpi";
  char text[512];
  for (int pe = 0; pe < n_; ++pe) {
    ASSERT_EQ(tshmemx_peer_path(pe, text, sizeof(text)), 0) << tshmemx_last_error();
    const std::string path = text;
    if (pe == me_)
      EXPECT_EQ(path, "self");
    else if (same_node(pe))
      EXPECT_EQ(path, "node (loads and stores)");
    else
      EXPECT_EQ(path.rfind(expected + " ", 0), 0u) << "PE " << pe << ": " << path;
  }
  EXPECT_EQ(tshmemx_peer_path(n_, text, sizeof(text)), TSHMEM_ERR_INVALID_PE);
  EXPECT_EQ(tshmemx_peer_path(0, nullptr, 8), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmemx_peer_path(0, text, 0), TSHMEM_ERR_INVALID_ARG);
}

// Host put with signal reaches a PE of another node: the data, then the signal word (SET and ADD), which the target
// waits for; once it holds the value, the data is whole.
TEST_F(OffNode, PutSignalReachesOtherNodes) {
  const int target = (me_ + node_size_) % n_;
  const int source = (me_ - node_size_ + n_) % n_;
  const size_t bytes = 300 * 1024 + 3;  // the ucx direct mode's rendezvous
  auto *block = static_cast<unsigned char *>(tshmem_calloc(bytes, 1));
  auto *sig = static_cast<uint64_t *>(tshmem_calloc(2, sizeof(uint64_t)));
  ASSERT_NE(block, nullptr);
  ASSERT_NE(sig, nullptr);
  tshmem_barrier_all();
  std::vector<unsigned char> data(bytes, static_cast<unsigned char>(0x21 + me_));
  ASSERT_EQ(tshmemx_putmem_signal(block, data.data(), bytes, &sig[0], 7 + static_cast<uint64_t>(me_), TSHMEM_SIGNAL_SET,
                                  target),
            0)
      << tshmemx_last_error();
  // ADD, data-less: no address of the data matters then (an empty torch tensor's is NULL, a numpy view's is not)
  for (void *dest : {static_cast<void *>(block), static_cast<void *>(nullptr), static_cast<void *>(&data[0])})
    ASSERT_EQ(
        tshmemx_putmem_signal(dest, dest == nullptr ? nullptr : data.data(), 0, &sig[1], 5, TSHMEM_SIGNAL_ADD, target),
        0)
        << tshmemx_last_error();
  uint64_t found = 0;
  ASSERT_EQ(tshmemx_signal_wait_until(&sig[0], TSHMEM_CMP_EQ, 7 + static_cast<uint64_t>(source), 30000, &found), 0)
      << tshmemx_last_error();
  size_t bad = bytes;
  for (size_t i = 0; i < bytes && bad == bytes; ++i)
    if (block[i] != static_cast<unsigned char>(0x21 + source)) bad = i;
  EXPECT_EQ(bad, bytes) << "signal from PE " << source << " seen but the data is not whole: first wrong byte at "
                        << bad;
  ASSERT_EQ(tshmemx_signal_wait_until(&sig[1], TSHMEM_CMP_EQ, 15, 30000, &found), 0) << tshmemx_last_error();
  EXPECT_EQ(tshmemx_putmem_signal(block, data.data(), 8, &sig[0], 1, 2, target), TSHMEM_ERR_INVALID_ARG)
      << "sig_op 2 is no signal operator";
  tshmem_barrier_all();
  tshmem_free(sig);
  tshmem_free(block);
}

TEST_F(OffNode, BadCallsToOtherNodesAreStillRefused) {
  auto *p = static_cast<char *>(tshmem_malloc(64));
  ASSERT_NE(p, nullptr);
  const int other = (me_ + node_size_) % n_;
  char local[128] = {};
  EXPECT_EQ(tshmem_putmem(p + 32, local, 128 * 1024 * 1024, other), TSHMEM_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tshmemx_last_error()).find("not inside the symmetric heap"), std::string::npos)
      << tshmemx_last_error();
  EXPECT_EQ(tshmem_getmem(local, local, 8, other), TSHMEM_ERR_INVALID_ARG) << "a source outside the heap";
  EXPECT_EQ(tshmem_putmem(p, local, 8, n_), TSHMEM_ERR_INVALID_PE);
  EXPECT_EQ(tshmem_putmem(p, nullptr, 8, other), TSHMEM_ERR_INVALID_ARG);
  tshmem_barrier_all();
  tshmem_free(p);
}

// A job that spans nodes keeps the end of the heap for the collectives across nodes (internal_regions.h):
// the allocator never hands it out and host calls refuse it, naming the region; the rest is the user's.
TEST_F(OffNode, TheEndOfTheHeapIsTheCollectivesArea) {
  const size_t heap = tshmemx_heap_size();
  const size_t area = TSHMEMI_COLL_SPAN_OFFSET(heap);
  EXPECT_EQ(area % 4096, 0u);
  EXPECT_LE(area + TSHMEMI_COLL_SPAN_BYTES, heap);
  const size_t user = area - TSHMEM_INTERNAL_HEAP_BYTES;
  void *all = tshmem_malloc(user);
  ASSERT_NE(all, nullptr) << "everything below the area is the user's: " << tshmemx_last_error();
  EXPECT_EQ(static_cast<char *>(all) + user, static_cast<char *>(tshmemx_heap_base()) + area);
  tshmem_free(all);
  EXPECT_EQ(tshmem_malloc(user + 256), nullptr) << "a block reaching into the area";
  EXPECT_NE(std::string(tshmemx_last_error()).find("exhausted"), std::string::npos) << tshmemx_last_error();
  const long long value = 1;
  char *end = static_cast<char *>(tshmemx_heap_base()) + area;
  for (int pe : {me_, (me_ + node_size_) % n_}) {
    EXPECT_EQ(tshmem_putmem(end - 4, &value, sizeof(value), pe), TSHMEM_ERR_INVALID_ARG) << "PE " << pe;
    EXPECT_NE(std::string(tshmemx_last_error()).find("reserved region at the end of the heap"), std::string::npos)
        << tshmemx_last_error();
  }
  long long got = 0;
  EXPECT_EQ(tshmem_getmem(&got, end + 64, sizeof(got), me_), TSHMEM_ERR_INVALID_ARG);
  EXPECT_EQ(tshmem_putmem(end - 8, &value, sizeof(value), me_), 0) << "the last user bytes: " << tshmemx_last_error();
  tshmem_barrier_all();
}

// One tshmem job on `comm` (PEs on nodes of one): every PE puts its value into its slot on every PE.
void run_job_on(MPI_Comm comm) {
  tshmemx_init_attr_t attr = TSHMEMX_INIT_ATTR_INITIALIZER;
  attr.mpi_comm = &comm;
  const int rc = tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, &attr);
  int mine = rc, lowest = 0, highest = 0;  // the outcome must be the same on every PE of this job
  MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&mine, &highest, 1, MPI_INT, MPI_MAX, comm);
  EXPECT_EQ(lowest, highest) << "PEs of one job disagree on init";
  ASSERT_EQ(rc, 0) << tshmemx_last_error();
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  auto *slots = static_cast<long long *>(tshmem_calloc(static_cast<size_t>(n), sizeof(long long)));
  EXPECT_NE(slots, nullptr);
  if (slots != nullptr) {
    const long long value = 1000LL * world_rank() + me;  // which job and which PE wrote it
    for (int pe = 0; pe < n; ++pe) {
      EXPECT_EQ(tshmem_ptr(slots, pe) == nullptr, pe != me) << "every other PE is on another node";
      EXPECT_EQ(tshmem_putmem(slots + me, &value, sizeof(value), pe), 0) << tshmemx_last_error();
    }
    tshmem_barrier_all();
    for (int from = 0; from < n; ++from) {
      const int from_world = 2 * from + world_rank() % 2;  // the split keeps world order within each half
      EXPECT_EQ(slots[from], 1000LL * from_world + from)
          << "slot of PE " << from << " (world rank " << from_world << ")";
    }
  }
  tshmem_free(slots);
  tshmem_finalize();
}

// The proxy's messages travel on tshmem's copy of the application's communicator, not on MPI_COMM_WORLD:
// two separate tshmem jobs (even and odd world ranks), each of PEs on "nodes" of one, both put across
// nodes, at the same time.
// tshmem's own waits progress the transport (bounded_wait.h): a target PE whose proxy thread never does
// (TSHMEM_DEBUG_PROXY_PROGRESS=0) still serves the operations of other nodes on it while it waits in tshmem, where
// the transport needs the target's progress (UCX's active messages over tcp or shared memory, on a host heap). The
// PE of the second node waits in tshmemx_signal_wait_until while PE 0 puts (a small and a large put) and quiets, then
// in tshmem_barrier_all while PE 0 gets; without that progress PE 0's quiet and get wait for it until the bound (10 s
// here) and fail.
TEST(OffNodeWaits, ATargetWhoseProxyNeverProgressesIsServedByItsWaits) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to make 2 nodes";
  const char *named = std::getenv("TSHMEM_REMOTE_TRANSPORT");
  const char *staged = std::getenv("TSHMEM_DEBUG_UCX_STAGED");
  if (!TSHMEM_TEST_UCX_BUILT || named == nullptr || std::string(named) != "ucx" ||
      (staged != nullptr && std::string(staged) == "1"))
    GTEST_SKIP() << "the ucx transport's direct mode moves what a target's waits progress (the mpi transport and "
                    "the staged mode need the target's proxy)";
  const int node_size = world_size() >= 4 ? 2 : 1;
  const std::string size = std::to_string(node_size);
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "8M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", size.c_str());
  ScopedEnv no_proxy_progress("TSHMEM_DEBUG_PROXY_PROGRESS", "0");
  ScopedEnv bound("TSHMEM_PROXY_TIMEOUT_MS", "10000");
  ASSERT_TRUE(all_pes(tshmem_init() == 0)) << tshmemx_last_error();
  const int me = tshmem_my_pe(), target = node_size;  // the first PE of the second node
  auto *data = static_cast<uint64_t *>(tshmem_calloc(64, sizeof(uint64_t)));
  auto *sig = static_cast<uint64_t *>(tshmem_calloc(1, sizeof(uint64_t)));
  ASSERT_NE(data, nullptr);
  ASSERT_NE(sig, nullptr);
  uint64_t source[64];
  for (int i = 0; i < 64; ++i) source[i] = 0x5000 + static_cast<uint64_t>(i);
  const uint64_t one = 1;
  // A large put too: the ucx direct mode sends it by rendezvous, whose start the target's handler takes.
  const size_t block_bytes = 256 * 1024;
  auto *block = static_cast<unsigned char *>(tshmem_calloc(block_bytes, 1));
  ASSERT_NE(block, nullptr);
  const std::vector<unsigned char> pattern(block_bytes, 0x3c);
  tshmemx_clear_last_error();
  if (me == 0) {
    EXPECT_EQ(tshmem_putmem(data, source, sizeof(source), target), 0) << tshmemx_last_error();
    EXPECT_EQ(tshmem_putmem(block, pattern.data(), block_bytes, target), 0)
        << "the large put needs PE " << target << "'s progress: " << tshmemx_last_error();
    tshmem_quiet();
    EXPECT_EQ(tshmemx_last_error_code(), 0)
        << "the quiet needs PE " << target << "'s progress: " << tshmemx_last_error();
    EXPECT_EQ(tshmem_putmem(sig, &one, sizeof(one), target), 0) << tshmemx_last_error();
    tshmem_quiet();
    EXPECT_EQ(tshmemx_last_error_code(), 0) << tshmemx_last_error();
  } else if (me == target) {
    uint64_t found = 0;
    EXPECT_EQ(tshmemx_signal_wait_until(sig, TSHMEM_CMP_EQ, 1, 20000, &found), 0) << tshmemx_last_error();
    EXPECT_EQ(std::memcmp(data, source, sizeof(source)), 0) << "the flag came before the data it follows";
    EXPECT_EQ(std::memcmp(block, pattern.data(), block_bytes), 0) << "the flag came before the large put it follows";
    for (int i = 0; i < 64; ++i) data[i] = 0x7000 + static_cast<uint64_t>(i);
  }
  tshmem_barrier_all();
  EXPECT_EQ(tshmemx_last_error_code(), 0) << tshmemx_last_error();
  if (me == 0) {  // PE `target` waits in the barrier meanwhile
    uint64_t got[64] = {};
    EXPECT_EQ(tshmem_getmem(got, data, sizeof(got), target), 0)
        << "the get needs PE " << target << "'s progress: " << tshmemx_last_error();
    EXPECT_EQ(got[0], 0x7000u);
    EXPECT_EQ(got[63], 0x7000u + 63);
  }
  tshmem_barrier_all();
  EXPECT_EQ(tshmemx_last_error_code(), 0) << tshmemx_last_error();
  tshmem_free(block);
  tshmem_free(sig);
  tshmem_free(data);
  tshmem_finalize();
}

TEST(OffNodeConfig, OnAnApplicationCommunicator) {
  if (world_size() < 4) GTEST_SKIP() << "needs 4 PEs for two jobs of 2";
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() % 2, world_rank(), &half);
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "8M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", "1");
  run_job_on(half);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&half);
}

// TSHMEM_REMOTE_TRANSPORT names a row of the transport table or auto: anything else fails init on every PE, naming
// the value and the choices, on one node as on several.
TEST(OffNodeConfig, RemoteTransportNamingNoTransportFailsInitEverywhere) {
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "8M");
  for (const char *nodes : {"0", "1"}) {
    ScopedEnv node_size("TSHMEM_DEBUG_NODE_SIZE", nodes);
    for (const char *bad : {"tcp", "UCX", ""}) {
      ScopedEnv transport("TSHMEM_REMOTE_TRANSPORT", bad);
      EXPECT_EQ(tshmem_init(), TSHMEM_ERR_CONFIG) << "'" << bad << "'";
      const std::string message = tshmemx_last_error();
      EXPECT_NE(message.find(std::string("TSHMEM_REMOTE_TRANSPORT='") + bad + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("auto|ucx|mpi"), std::string::npos) << message;
      EXPECT_EQ(tshmem_my_pe(), -1) << "nothing stays initialised";
    }
  }
}

TEST(OffNodeConfig, DifferentRemoteTransportOnOnePeFailsInitEverywhere) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to differ";
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "8M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", "1");
  ScopedEnv transport("TSHMEM_REMOTE_TRANSPORT", world_rank() == 1 ? "mpi" : "auto");
  EXPECT_EQ(tshmem_init(), TSHMEM_ERR_CONFIG);
  const std::string message = tshmemx_last_error();
  EXPECT_NE(message.find("TSHMEM_REMOTE_TRANSPORT"), std::string::npos) << message;
  EXPECT_EQ(tshmem_my_pe(), -1) << "nothing stays initialised";
}

// TSHMEM_REMOTE_TRANSPORT=ucx: where this build has no UCX, init fails on every PE saying so; where it has, the PEs
// of other nodes are reached through it.
TEST(OffNodeConfig, UcxNamedIsUcxOrFailsInitSayingWhy) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to make 2 nodes";
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "8M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", "1");
  ScopedEnv transport("TSHMEM_REMOTE_TRANSPORT", "ucx");
  const int rc = tshmem_init();
  if (!TSHMEM_TEST_UCX_BUILT) {
    EXPECT_EQ(rc, TSHMEM_ERR_CONFIG);
    const std::string message = tshmemx_last_error();
    EXPECT_NE(message.find("TSHMEM_REMOTE_TRANSPORT=ucx cannot reach other nodes"), std::string::npos) << message;
    EXPECT_NE(message.find("UCX"), std::string::npos) << message;
    return;
  }
  ASSERT_EQ(rc, 0) << tshmemx_last_error();
  char text[512];
  ASSERT_EQ(tshmemx_peer_path((tshmem_my_pe() + 1) % tshmem_n_pes(), text, sizeof(text)), 0);
  EXPECT_EQ(std::string(text).rfind("ucx ", 0), 0u) << text;
  tshmem_finalize();
}

TEST(OffNodeConfig, DifferentNodeSizeOnOnePeFailsInitEverywhere) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 PEs to differ";
  ScopedEnv backend("TSHMEM_MEM_BACKEND", "shm");
  ScopedEnv heap("TSHMEM_SYMMETRIC_SIZE", "8M");
  ScopedEnv nodes("TSHMEM_DEBUG_NODE_SIZE", world_rank() == 1 ? "1" : "0");
  EXPECT_EQ(tshmem_init(), TSHMEM_ERR_CONFIG);
  const std::string message = tshmemx_last_error();
  EXPECT_NE(message.find("TSHMEM_DEBUG_NODE_SIZE"), std::string::npos) << message;
  EXPECT_NE(message.find("PE 1 = 1"), std::string::npos) << message;
  EXPECT_EQ(tshmem_my_pe(), -1) << "nothing stays initialised";
}

}  // namespace
}  // namespace tshmem_test
