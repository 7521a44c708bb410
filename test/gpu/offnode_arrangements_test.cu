// Every arrangement of kernels a user writes completes, across nodes as on one node: operations x arrangements,
// each round checked. Each PE sends to the PE one node further on (`next`) and waits for the one before
// (`prev`); on one node (the control run) to its neighbour.
//
// Operations: put_signal (SET, ADD); a put, quiet, then a flag `p`; `p`; g and get; fetching and non-fetching
// atomics; barrier_all; a device collective (fcollect).
// Arrangements: (a) send and wait in one kernel; (b) a send kernel, then a wait kernel on the same stream, rounds
// back to back with no host synchronisation; (c) the two kernels on two streams; (d) the wait kernel first, the
// send kernel after a host sleep of 100 ms; (e) both kernels captured in a CUDA graph and replayed 100 times;
// (f) 132 blocks waiting while one block sends; (g) the send kernel exits with its requests in flight (no quiet)
// and the host's tshmem_quiet completes them.
//
// A hang is the failure this test exists for: the ctest entries set TSHMEM_WAIT_TIMEOUT_MS and
// TSHMEM_PROXY_TIMEOUT_MS, so a wait that never ends traps with its message instead of stalling the suite.
#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <thread>

#include "device_test_util.h"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/tshmem_device.cuh"
#include "tshmem/tshmemx.h"

namespace {

using tshmem_device_test::SymBuffer;

constexpr size_t kWords = 1027;  // odd: not a whole number of vectors
constexpr size_t kBytes = kWords * sizeof(unsigned);
constexpr int kWaitBlocks = 132;  // arrangement (f)

enum class Op : int { kPutSignalSet, kPutSignalAdd, kPutQuietFlag, kP, kGet, kAtomic, kBarrier, kCollective, kCount };
enum class Arrangement : int {
  kOneKernel,
  kTwoKernels,
  kTwoStreams,
  kWaitFirst,
  kGraph,
  kWideWait,
  kExitInFlight,
  kCount
};

const char *op_name(Op op) {
  static const char *const kNames[] = {"PutSignalSet", "PutSignalAdd", "PutQuietFlag", "P",
                                       "Get",          "Atomic",       "Barrier",      "Collective"};
  return kNames[static_cast<int>(op)];
}
const char *arrangement_name(Arrangement a) {
  static const char *const kNames[] = {"OneKernel", "TwoKernels", "TwoStreams",  "WaitFirst",
                                       "Graph",     "WideWait",   "ExitInFlight"};
  return kNames[static_cast<int>(a)];
}

__host__ __device__ unsigned word_of(int pe, uint64_t round, size_t i) {
  return static_cast<unsigned>(pe) * 0x9E3779B1u ^ static_cast<unsigned>(round) * 2654435761u ^
         static_cast<unsigned>(i);
}

/// Everything a round touches, symmetric (the same offsets on every PE). Two of each data buffer, by the round's
/// parity: a PE may send round r + 1 while its peer still checks round r.
struct Buffers {
  unsigned *data[2];      // written by prev
  unsigned *src[2];       // what this PE sends
  unsigned *got[2];       // what this PE fetched (get)
  unsigned *gettable;     // fixed content, read by the PE before this one
  unsigned *gathered[2];  // fcollect's result: n_pes x kWords
  uint64_t *sig;          // SET signals, one per parity
  uint64_t *count;        // ADD signals and atomics
  uint64_t *added;        // non-fetching atomics
  uint64_t *flag;         // p / flag after a put
  uint64_t *fetched;      // the old value of the fetching atomic, per parity (this PE's, local)
  uint64_t *round;        // the graph's round counter (local)
  uint64_t *got_round;    // the last round whose get is complete (local: the wait half may run on another stream)
  int *errors;            // local
  int next, prev, me, n;
  bool nbi;  // (g): the send part posts and leaves its requests in flight
};

__device__ uint64_t round_of(const Buffers &b, uint64_t fixed) { return fixed != 0 ? fixed : *b.round + 1; }

/// The initiating half of one round (one thread; the block form spreads only the copy of src).
__device__ void send_part(Op op, const Buffers &b, uint64_t round) {
  const int p = static_cast<int>(round & 1);
  for (size_t i = 0; i < kWords; ++i) b.src[p][i] = word_of(b.me, round, i);
  switch (op) {
    case Op::kPutSignalSet:
      tshmem::putmem_signal_nbi(b.data[p], b.src[p], kBytes, &b.sig[p], round, TSHMEM_SIGNAL_SET, b.next);
      break;
    case Op::kPutSignalAdd:
      tshmem::putmem_signal_nbi(b.data[p], b.src[p], kBytes, b.count, 1, TSHMEM_SIGNAL_ADD, b.next);
      break;
    case Op::kPutQuietFlag:
      tshmem::putmem(b.data[p], b.src[p], kBytes, b.next);
      tshmem::quiet();
      tshmem::p(b.flag, round, b.next);
      break;
    case Op::kP: tshmem::p(b.flag, round, b.next); break;
    case Op::kGet:
      if (b.nbi) {
        tshmem::getmem_nbi(b.got[p], b.gettable, kBytes, b.next);
      } else {
        tshmem::getmem(b.got[p], b.gettable, kBytes, b.next);
        if (tshmem::g(b.gettable + 7, b.next) != word_of(b.next, 0, 7)) atomicAdd(b.errors, 1);
      }
      __threadfence();
      atomicMax(reinterpret_cast<unsigned long long *>(b.got_round), static_cast<unsigned long long>(round));
      break;
    case Op::kAtomic:
      if (b.nbi) {
        tshmem::atomic_add(b.count, uint64_t{1}, b.next);
      } else {
        b.fetched[p] = tshmem::atomic_fetch_add(b.count, uint64_t{1}, b.next);
        if (b.fetched[p] != round - 1) atomicAdd(b.errors, 1);
      }
      tshmem::atomic_add(b.added, uint64_t{1}, b.next);
      break;
    case Op::kBarrier:
      tshmem::p(b.flag, round, b.next);
      tshmem::barrier_all<tshmem::thread_scope>();
      break;
    case Op::kCollective: tshmem::coll::fcollect_block(TSHMEM_TEAM_WORLD, b.gathered[p], b.src[p], kBytes); break;
    case Op::kCount: break;
  }
  if (!b.nbi && op != Op::kBarrier && op != Op::kCollective) tshmem::quiet();
}

/// Whether the wait half waits for a word that another PE writes (the rest check what the send half did).
__host__ __device__ bool waits_for_peer(Op op) {
  return op == Op::kPutSignalSet || op == Op::kPutSignalAdd || op == Op::kPutQuietFlag || op == Op::kP ||
         op == Op::kAtomic;
}

/// Waits for what `prev` sent in this round (one thread), without checking the data.
__device__ void wait_for_peer(Op op, const Buffers &b, uint64_t round) {
  const int p = static_cast<int>(round & 1);
  switch (op) {
    case Op::kPutSignalSet: tshmem::signal_wait_until(&b.sig[p], TSHMEM_CMP_GE, round); break;
    case Op::kPutSignalAdd: tshmem::signal_wait_until(b.count, TSHMEM_CMP_GE, round); break;
    case Op::kPutQuietFlag:
    case Op::kP: tshmem::wait_until(b.flag, TSHMEM_CMP_GE, round); break;
    case Op::kAtomic:
      tshmem::wait_until(b.count, TSHMEM_CMP_GE, round);
      tshmem::wait_until(b.added, TSHMEM_CMP_GE, round);
      break;
    default: break;
  }
}

/// The receiving half of one round: waits, then checks every word (one thread).
__device__ void wait_part(Op op, const Buffers &b, uint64_t round) {
  const int p = static_cast<int>(round & 1);
  wait_for_peer(op, b, round);
  int bad = 0;
  switch (op) {
    case Op::kPutSignalSet:
    case Op::kPutSignalAdd:
    case Op::kPutQuietFlag:
      for (size_t i = 0; i < kWords; ++i) bad += b.data[p][i] != word_of(b.prev, round, i);
      break;
    case Op::kGet:
      while (*static_cast<volatile uint64_t *>(b.got_round) < round) __nanosleep(256);  // the send half's get
      __threadfence();
      if (b.nbi) tshmem::quiet();  // what an nbi get brought is there after quiet
      for (size_t i = 0; i < kWords; ++i) bad += b.got[p][i] != word_of(b.next, 0, i);
      break;
    case Op::kBarrier:
      tshmem::barrier_all<tshmem::thread_scope>();  // a second barrier kernel: the first one's p has landed
      bad += *b.flag < round;
      break;
    case Op::kCollective:
      for (int pe = 0; pe < b.n; ++pe)
        for (size_t i = 0; i < kWords; i += 97) bad += b.gathered[p][pe * kWords + i] != word_of(pe, round, i);
      break;
    default: break;
  }
  if (bad) atomicAdd(b.errors, bad);
}

__global__ void both_kernel(Op op, Buffers b, uint64_t fixed) {
  const uint64_t round = round_of(b, fixed);
  send_part(op, b, round);
  wait_part(op, b, round);
}
__global__ void send_kernel(Op op, Buffers b, uint64_t fixed) { send_part(op, b, round_of(b, fixed)); }
__global__ void wait_kernel(Op op, Buffers b, uint64_t fixed) {
  const uint64_t round = round_of(b, fixed);
  wait_part(op, b, round);
  if (fixed == 0) *b.round = round;  // the graph's next replay is the next round
}

/// (f): block 0 sends and receives; the other blocks wait too: for the peer's word where the operation has one,
/// else for block 0 to finish. `done` is local.
__global__ void wide_kernel(Op op, Buffers b, uint64_t round, unsigned *done) {
  if (blockIdx.x == 0) {
    send_part(op, b, round);
    wait_part(op, b, round);
    __threadfence();
    atomicExch(done, static_cast<unsigned>(round));
  } else if (waits_for_peer(op)) {
    wait_for_peer(op, b, round);
  } else {
    while (*static_cast<volatile unsigned *>(done) < round) __nanosleep(256);
  }
}

class OffNodeArrangements : public ::testing::TestWithParam<std::tuple<Op, Arrangement>> {};

TEST_P(OffNodeArrangements, Complete) {
  TSHMEM_REQUIRE_GPU();
  const Op op = std::get<0>(GetParam());
  const Arrangement arrangement = std::get<1>(GetParam());
  const bool collective = op == Op::kBarrier || op == Op::kCollective;
  // A collective's two halves are collective calls each: on two streams they could run in either order on one
  // PE and in the other on another. A collective's (g) is its (b).
  if (collective && (arrangement == Arrangement::kTwoStreams || arrangement == Arrangement::kExitInFlight))
    GTEST_SKIP() << "a collective's halves are ordered calls: this arrangement is the two-kernel one";

  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int stride = tshmem_device_test::job_spans_nodes() ? tshmem_team_n_pes(TSHMEMX_TEAM_NODE) : 1;
  SymBuffer data(2 * kBytes), src(2 * kBytes), got(2 * kBytes), gettable(kBytes), gathered(2 * n * kBytes), words(128),
      errors(4), done(4);
  Buffers b{};
  for (int p = 0; p < 2; ++p) {
    b.data[p] = data.get<unsigned>() + p * kWords;
    b.src[p] = src.get<unsigned>() + p * kWords;
    b.got[p] = got.get<unsigned>() + p * kWords;
    b.gathered[p] = gathered.get<unsigned>() + p * n * kWords;
  }
  b.gettable = gettable.get<unsigned>();
  uint64_t *w = words.get<uint64_t>();
  b.sig = w;
  b.count = w + 2;
  b.added = w + 3;
  b.flag = w + 4;
  b.fetched = w + 5;
  b.round = w + 7;
  b.got_round = w + 8;
  b.errors = errors.get<int>();
  b.me = me;
  b.n = n;
  b.next = (me + stride) % n;
  b.prev = (me - stride + n) % n;
  b.nbi = arrangement == Arrangement::kExitInFlight;
  std::vector<unsigned> fixed(kWords);
  for (size_t i = 0; i < kWords; ++i) fixed[i] = word_of(me, 0, i);
  TSHMEM_CUDA_EXPECT(cudaMemcpy(b.gettable, fixed.data(), kBytes, cudaMemcpyHostToDevice));
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  tshmem_barrier_all();

  cudaStream_t s1 = nullptr, s2 = nullptr;
  TSHMEM_CUDA_EXPECT(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  TSHMEM_CUDA_EXPECT(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  const int rounds = arrangement == Arrangement::kGraph ? 100 : (arrangement == Arrangement::kTwoKernels ? 10 : 3);
  const auto started = std::chrono::steady_clock::now();
  switch (arrangement) {
    case Arrangement::kOneKernel:
      for (int r = 1; r <= rounds; ++r) both_kernel<<<1, 1, 0, s1>>>(op, b, r);
      break;
    case Arrangement::kTwoKernels:  // back to back: no host synchronisation between rounds
      for (int r = 1; r <= rounds; ++r) {
        send_kernel<<<1, 1, 0, s1>>>(op, b, r);
        wait_kernel<<<1, 1, 0, s1>>>(op, b, r);
      }
      break;
    case Arrangement::kTwoStreams:  // one round per synchronisation: the streams would reorder rounds
      for (int r = 1; r <= rounds; ++r) {
        send_kernel<<<1, 1, 0, s1>>>(op, b, r);
        wait_kernel<<<1, 1, 0, s2>>>(op, b, r);
        TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      }
      break;
    case Arrangement::kWaitFirst:
      for (int r = 1; r <= rounds; ++r) {
        if (collective) {  // both halves are collective: the host sleep comes between them
          send_kernel<<<1, 1, 0, s1>>>(op, b, r);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          wait_kernel<<<1, 1, 0, s1>>>(op, b, r);
        } else {
          wait_kernel<<<1, 1, 0, s2>>>(op, b, r);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          send_kernel<<<1, 1, 0, s1>>>(op, b, r);
        }
        TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
      }
      break;
    case Arrangement::kGraph: {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      TSHMEM_CUDA_EXPECT(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
      send_kernel<<<1, 1, 0, s1>>>(op, b, 0);  // round 0: the kernels read it from b.round
      wait_kernel<<<1, 1, 0, s1>>>(op, b, 0);
      TSHMEM_CUDA_EXPECT(cudaStreamEndCapture(s1, &graph));
      TSHMEM_CUDA_EXPECT(cudaGraphInstantiate(&exec, graph, 0));
      for (int r = 1; r <= rounds; ++r) TSHMEM_CUDA_EXPECT(cudaGraphLaunch(exec, s1));
      TSHMEM_CUDA_EXPECT(cudaStreamSynchronize(s1));
      TSHMEM_CUDA_EXPECT(cudaGraphExecDestroy(exec));
      TSHMEM_CUDA_EXPECT(cudaGraphDestroy(graph));
      break;
    }
    case Arrangement::kWideWait:
      // One thread per block: block 0's collective is a block-scope call, which every thread of its block makes.
      for (int r = 1; r <= rounds; ++r) wide_kernel<<<1 + kWaitBlocks, 1, 0, s1>>>(op, b, r, done.get<unsigned>());
      break;
    case Arrangement::kExitInFlight:
      for (int r = 1; r <= rounds; ++r) {
        send_kernel<<<1, 1, 0, s1>>>(op, b, r);
        TSHMEM_CUDA_EXPECT(cudaStreamSynchronize(s1));  // the kernel has exited; its requests may be in flight
        tshmem_quiet();                                 // completes them
        wait_kernel<<<1, 1, 0, s1>>>(op, b, r);
        TSHMEM_CUDA_EXPECT(cudaStreamSynchronize(s1));
      }
      break;
    case Arrangement::kCount: break;
  }
  TSHMEM_CUDA_EXPECT(cudaGetLastError());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int host_errors = -1;
  uint64_t host_round = 0;
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&host_errors, b.errors, 4, cudaMemcpyDeviceToHost));
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&host_round, b.round, 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(host_errors, 0) << op_name(op) << " / " << arrangement_name(arrangement) << ": words or values wrong";
  if (arrangement == Arrangement::kGraph) EXPECT_EQ(host_round, static_cast<uint64_t>(rounds)) << "graph replays";
  if (me == 0)
    std::printf("[ arrangement ] %s / %s: %d rounds in %.3f s (%s)\n", op_name(op), arrangement_name(arrangement),
                rounds, seconds, tshmem_device_test::job_spans_nodes() ? "across nodes" : "one node");
  TSHMEM_CUDA_EXPECT(cudaStreamDestroy(s1));
  TSHMEM_CUDA_EXPECT(cudaStreamDestroy(s2));
  tshmem_barrier_all();
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Op, Arrangement>> &info) {
  return std::string(op_name(std::get<0>(info.param))) + "_" + arrangement_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, OffNodeArrangements,
    ::testing::Combine(::testing::Values(Op::kPutSignalSet, Op::kPutSignalAdd, Op::kPutQuietFlag, Op::kP, Op::kGet,
                                         Op::kAtomic, Op::kBarrier, Op::kCollective),
                       ::testing::Values(Arrangement::kOneKernel, Arrangement::kTwoKernels, Arrangement::kTwoStreams,
                                         Arrangement::kWaitFirst, Arrangement::kGraph, Arrangement::kWideWait,
                                         Arrangement::kExitInFlight)),
    case_name);

}  // namespace
