// Child of fault_test: one fault per case, on real processes, every PE its own node (TSHMEM_DEBUG_NODE_SIZE=1).
// Every live PE prints "RESULT <case> PE <n>: PASS|FAIL (...)" for what it checked, and "PE <n> finalized" at the end.
//   stop-barrier       PE 1 stops (SIGSTOP); PE 0's barrier_all ends at the bound, later calls fail at once,
//                      finalize returns without waiting; then PE 1 is continued and both finish
//   stop-barrier-one-node  the same with both PEs on one node (the shared-memory rendezvous)
//   stop-finalize      PE 1 stops after PE 0 put to it; PE 0's finalize (its quiet, then its rendezvous) ends within
//                      one bound and a second
//   kill-barrier       3 PEs; PE 2 dies (SIGKILL) while PEs 0 and 1 are in barrier_all (the launcher keeps the job);
//                      then finalize ends within the bound and a second on every live PE (tshmem started MPI: it
//                      leaves MPI unfinalized, naming the dead PE, as MPI_Finalize would wait for it)
//   kill-barrier-np2, kill-barrier-np4  the same on 2 and 4 PEs (the last one dies)
//   kill-barrier-app-mpi  the same on 3 PEs with MPI started by the application: tshmem_finalize is as bounded;
//                      MPI_Finalize is the application's, which leaves it (a PE died) as tshmem would
//   kill-put           2 PEs; PE 1 dies; PE 0 puts to it (8 B and 64 KiB alternately) until a put fails: that put
//                      ends at the bound, quiet then fails at once, finalize ends within the bound and a second
//   kill-put-device    the same, first with requests to PE 1 in the proxy's device channel (small puts, an atomic,
//                      a quiet): the quiet ends at the bound with them in flight, and the teardown closes them
//   truncate-finalize  PE 0 sends PE 1's proxy a message larger than its buffers (MPI_ERR_TRUNCATE there); both
//                      finalize and the job exits 0
//   reserved-put       PE 0 posts kernel-style requests (the device channel) that write PE 1's reserved region:
//                      refused at PE 1; a barrier arrival's shape there is still taken
//   stop-get           PE 1 stops; PE 0's getmem into a host buffer ends at the bound; PE 1 is continued; PE 0's
//                      buffer stays untouched while it watches, through a second call (which fails at once naming
//                      the earlier timeout) and through its finalize
//   stop-put           the same for a put larger than what the network holds for a stopped target: PE 0 overwrites
//                      the put's source after the timeout; PE 1, continued, never receives the overwritten bytes
//   stop-get-device    the same for a get the proxy issues (the device channel: a get into PE 0's heap, then a
//                      quiet): the quiet is answered at the bound, and the heap is not written afterwards
// The stop-* cases initialise MPI themselves, so that tshmem_finalize is measured without MPI_Finalize (whose
// launcher fence waits for every process, the stopped one too).
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tshmem/device/internal_regions.h"
#include "tshmem/device/proxy_types.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

long long bound_ms() {
  const char *text = std::getenv("TSHMEM_PROXY_TIMEOUT_MS");
  return text != nullptr ? std::atoll(text) : 300000;
}

bool has(const std::string &text, const char *part) { return text.find(part) != std::string::npos; }

void result(const std::string &which, int me, bool pass, const std::string &detail) {
  std::printf("RESULT %s PE %d: %s (%s)\n", which.c_str(), me, pass ? "PASS" : "FAIL", detail.c_str());
  std::fflush(stdout);
}

// A call that must end at the bound (not before 0.9 of it, not after bound + 5 s) with the documented message.
bool ended_at_bound(double ms, int rc, const std::string &message, const char *call) {
  const double bound = static_cast<double>(bound_ms());
  return rc != 0 && ms >= 0.9 * bound && ms <= bound + 5000 && has(message, call) &&
         has(message, "TSHMEM_PROXY_TIMEOUT_MS") && has(message, "failed state");
}

// Requests posted into the proxy's device channel from the CPU, in the shapes a kernel posts them.
void post_inline_put(tshmemi_proxy_channel *channel, int pe, uint64_t remote, uint64_t value) {
  tshmemi_proxy_request put = {};
  put.op = TSHMEMI_PROXY_PUT;
  put.flags = TSHMEMI_PROXY_FLAG_INLINE;
  put.pe = pe;
  put.remote = remote;
  put.bytes = 8;
  put.value = value;
  tshmemi_proxy_post(channel, &put);
}

void post_add(tshmemi_proxy_channel *channel, int pe, uint64_t remote, uint64_t value) {
  tshmemi_proxy_request add = {};
  add.op = TSHMEMI_PROXY_AMO;
  add.amo = TSHMEMI_AMO_ADD;
  add.width = 8;
  add.pe = pe;
  add.remote = remote;
  add.value = value;
  tshmemi_proxy_post(channel, &add);
}

int barrier_all_status() {
  tshmemx_clear_last_error();
  tshmem_barrier_all();
  return tshmemx_last_error_code();
}

// Whether every byte of [at, at + bytes) is `value`; where one is not, *first is its index.
bool all_bytes(const unsigned char *at, size_t bytes, unsigned char value, size_t *first) {
  for (size_t i = 0; i < bytes; ++i)
    if (at[i] != value) {
      *first = i;
      return false;
    }
  return true;
}

// stop-get / stop-put / stop-get-device: a transfer to a stopped PE ends at the bound, and nothing of it moves once
// the call (or the quiet) has returned, also after the target runs again: a get's destination is never written, a
// put's source never read.
int stop_transfer(const std::string &which, int me, const int *pids) {
  const bool device = which == "stop-get-device";
  const bool get = which != "stop-put";
  // Larger than what a network holds for a target that takes nothing (a shared-memory FIFO, tcp's socket
  // buffers), so that a put cannot complete locally either.
  constexpr size_t kBytes = 16 << 20, kDeviceBytes = 1 << 20;
  constexpr unsigned char kTarget = 0x11, kSource = 0xaa, kOverwritten = 0xbb, kUntouched = 0x5a;
  auto *remote = static_cast<unsigned char *>(tshmem_malloc(kBytes));
  auto *landing = static_cast<unsigned char *>(tshmem_malloc(kDeviceBytes));  // the device channel's get lands here
  static unsigned char local[kBytes];
  std::memset(remote, kTarget, kBytes);
  std::memset(local, get ? kUntouched : kSource, kBytes);
  std::memset(landing, kUntouched, kDeviceBytes);
  tshmem_barrier_all();
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    raise(SIGSTOP);  // continued by PE 0 once its call has ended
    // PE 0 has checked everything and finalized: what arrived here is all that ever will.
    MPI_Barrier(MPI_COMM_WORLD);
    if (!get) {
      size_t first = 0;
      const bool clean = !std::memchr(remote, kOverwritten, kBytes);
      const bool whole = all_bytes(remote, kBytes, kSource, &first);
      result(which, me, clean,
             std::string(clean ? "no overwritten byte arrived" : "overwritten bytes arrived") + " (the put " +
                 (whole ? "arrived whole" : "arrived up to byte " + std::to_string(first)) + ")");
    }
    tshmem_finalize();
    std::printf("PE %d finalized\n", me);
    std::fflush(stdout);
    MPI_Finalize();
    return 0;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // PE 1 has stopped by now
  const char *call = get ? "tshmem_getmem" : "tshmem_putmem";
  const double bound = static_cast<double>(bound_ms());
  tshmemx_clear_last_error();
  Clock::time_point start = Clock::now();
  double ms = 0;
  if (device) {  // a kernel's get, from the CPU: into the heap, then a quiet that ends when the path stops
    tshmemi_proxy_channel *channel = tshmemi_proxy_device_channel();
    tshmemi_proxy_request get_request = {};
    get_request.op = TSHMEMI_PROXY_GET;
    get_request.pe = 1;
    get_request.remote = static_cast<uint64_t>(remote - static_cast<unsigned char *>(tshmemx_heap_base()));
    get_request.local = reinterpret_cast<uint64_t>(landing);
    get_request.bytes = kDeviceBytes;
    tshmemi_proxy_post(channel, &get_request);
    tshmemi_proxy_request quiet = {};
    quiet.op = TSHMEMI_PROXY_QUIET;
    const uint64_t ticket = tshmemi_proxy_post(channel, &quiet);
    while (!tshmemi_proxy_done(channel, ticket) && ms_since(start) < 2 * bound + 5000)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ms = ms_since(start);
    result(which, me, tshmemi_proxy_done(channel, ticket) && ms >= 0.9 * bound && ms <= bound + 5000,
           "the device channel's get and quiet answered after " + std::to_string(static_cast<int>(ms)) + " ms");
  } else {
    const int rc = get ? tshmem_getmem(local, remote, kBytes, 1) : tshmem_putmem(remote, local, kBytes, 1);
    ms = ms_since(start);
    const std::string first_error = tshmemx_last_error();
    result(which, me,
           rc != 0 && ms >= 0.9 * bound && ms <= bound + 5000 && has(first_error, call) &&
               has(first_error, "TSHMEM_PROXY_TIMEOUT_MS") && has(first_error, "PE 1"),
           std::string(call) + ": rc " + std::to_string(rc) + " after " + std::to_string(static_cast<int>(ms)) +
               " ms: " + first_error);
  }
  if (!get) std::memset(local, kOverwritten, kBytes);  // the caller's to reuse once the call returned
  kill(pids[1], SIGCONT);
  // PE 1 serves what it was sent while it stood still; nothing of the abandoned call may follow.
  unsigned char *destination = device ? landing : local;
  const size_t destination_bytes = device ? kDeviceBytes : kBytes;
  size_t first = 0;
  bool untouched = true;
  const Clock::time_point watch = Clock::now();
  while (untouched && ms_since(watch) < 200) {
    untouched = !get || all_bytes(destination, destination_bytes, kUntouched, &first);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // A second call to PE 1 fails at once, naming the call and the earlier timeout.
  tshmemx_clear_last_error();
  start = Clock::now();
  const int rc_again = get ? tshmem_getmem(local, remote, 8, 1) : tshmem_putmem(remote, local, 8, 1);
  ms = ms_since(start);
  const std::string again = tshmemx_last_error();
  result(which, me,
         rc_again != 0 && ms < 500 && has(again, call) && has(again, "PE 1") && has(again, "TSHMEM_PROXY_TIMEOUT_MS"),
         "a second call: rc " + std::to_string(rc_again) + " after " + std::to_string(static_cast<int>(ms)) +
             " ms: " + again);
  if (device) {  // the heap goes at finalize: looked at once more before
    untouched = untouched && all_bytes(landing, kDeviceBytes, kUntouched, &first);
    result(which, me, untouched,
           untouched ? "the get's destination in the heap was never written after the quiet was answered"
                     : "the get's destination in the heap was written after the quiet was answered (byte " +
                           std::to_string(first) + " of it)");
  }
  start = Clock::now();
  tshmem_finalize();
  ms = ms_since(start);
  const std::string finalized = tshmemx_last_error();
  result(which, me, tshmem_my_pe() == -1 && ms <= bound + 5000 && has(finalized, "tears down without waiting"),
         "finalize after " + std::to_string(static_cast<int>(ms)) + " ms: " + finalized);
  if (get && !device) {
    untouched = untouched && all_bytes(local, kBytes, kUntouched, &first);
    result(which, me, untouched,
           untouched ? "the get's destination was never written after the call returned"
                     : "the get's destination was written after the call returned (byte " + std::to_string(first) +
                           " of it)");
  }
  MPI_Barrier(MPI_COMM_WORLD);  // PE 1 may look at its heap now
  std::printf("PE %d finalized\n", me);
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  const bool application_mpi = which.rfind("stop-", 0) == 0 || which == "kill-barrier-app-mpi";
  const bool kill_barrier = which.rfind("kill-barrier", 0) == 0;
  const bool kill_put = which.rfind("kill-put", 0) == 0;
  if (application_mpi) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  if (tshmem_init() != 0) {
    std::printf("init failed: %s\n", tshmemx_last_error());
    return 2;
  }
  const int me = tshmem_my_pe();
  int pids[8] = {};
  const int mine = static_cast<int>(getpid());
  MPI_Allgather(&mine, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
  long *word = static_cast<long *>(tshmem_calloc(64, sizeof(long)));
  constexpr size_t kLargePut = 64 << 10;
  char *large = kill_put ? static_cast<char *>(tshmem_malloc(kLargePut)) : nullptr;
  tshmem_barrier_all();

  if (which == "stop-get" || which == "stop-put" || which == "stop-get-device") return stop_transfer(which, me, pids);

  const bool stop_barrier = which == "stop-barrier" || which == "stop-barrier-one-node";
  if (stop_barrier || which == "stop-finalize") {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1) {
      raise(SIGSTOP);        // continued by PE 0 once it has checked everything
      barrier_all_status();  // PE 0 gave up on this one: it may end either way, but it ends
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // PE 1 has stopped by now
      if (stop_barrier) {
        Clock::time_point start = Clock::now();
        int rc = barrier_all_status();
        double ms = ms_since(start);
        std::string message = tshmemx_last_error();
        result(which, me, ended_at_bound(ms, rc, message, "tshmem_barrier_all: PE 0 waited"),
               "barrier_all: rc " + std::to_string(rc) + " after " + std::to_string(static_cast<int>(ms)) +
                   " ms: " + message);
        start = Clock::now();  // the failed state: at once, saying why
        rc = barrier_all_status();
        const bool off_node = tshmem_ptr(word, 1) == nullptr;  // on one node a put is a store: it still works
        const int rc_put = off_node ? tshmem_putmem(word, &mine, sizeof mine, 1) : 1;
        ms = ms_since(start);
        message = tshmemx_last_error();
        result(which, me,
               rc != 0 && rc_put != 0 && ms < 1000 && has(message, off_node ? "tshmem_putmem" : "failed state"),
               "later calls: rc " + std::to_string(rc) + ", " + std::to_string(rc_put) + " after " +
                   std::to_string(static_cast<int>(ms)) + " ms: " + message);
      } else {
        long value = 7;  // something to complete: finalize's quiet needs PE 1
        if (tshmem_putmem(word, &value, sizeof value, 1) != 0) result(which, me, false, "putmem");
      }
      const Clock::time_point start = Clock::now();
      tshmem_finalize();
      const double ms = ms_since(start);
      const std::string message = tshmemx_last_error();
      const double most = stop_barrier ? 1000.0 : static_cast<double>(bound_ms() + 2500);
      result(which, me, tshmem_my_pe() == -1 && ms <= most && has(message, "tears down without waiting"),
             "finalize after " + std::to_string(static_cast<int>(ms)) + " ms: " + message);
      kill(pids[1], SIGCONT);
    }
    if (me == 1) tshmem_finalize();
    std::printf("PE %d finalized\n", me);
    std::fflush(stdout);
    MPI_Finalize();
    return 0;
  }

  if (kill_barrier) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == tshmem_n_pes() - 1) raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const Clock::time_point start = Clock::now();
    const int rc = barrier_all_status();
    const double ms = ms_since(start);
    const std::string message = tshmemx_last_error();
    // Open MPI may see the death itself (an error from MPI_Test) before the bound: that ends the wait too.
    const bool mpi_saw_it = rc != 0 && ms <= static_cast<double>(bound_ms() + 5000) &&
                            has(message, "tshmem_barrier_all") && has(message, "failed state");
    result(
        which, me, ended_at_bound(ms, rc, message, "tshmem_barrier_all: PE") || mpi_saw_it,
        "barrier_all: rc " + std::to_string(rc) + " after " + std::to_string(static_cast<int>(ms)) + " ms: " + message);
  }

  if (kill_put) {
    // Puts to the dead PE, small and large, until one fails: the first that cannot complete ends at the bound
    // (nothing takes them at the target), or at once where the transport sees the death itself (UCX over tcp: the
    // connection is refused), and the calls after it fail at once.
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1) raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // kill-put-device: first the proxy's path (the device channel: small puts, an atomic, then a quiet): its quiet
    // ends within the bound, the path stopped, with the requests still in flight (the teardown closes them).
    tshmemi_proxy_channel *channel = which == "kill-put-device" ? tshmemi_proxy_device_channel() : nullptr;
    if (channel != nullptr) {
      const uint64_t offset = static_cast<uint64_t>(large - static_cast<char *>(tshmemx_heap_base()));
      for (uint64_t i = 0; i < 64; ++i) post_inline_put(channel, 1, offset + 8 * i, i);
      post_add(channel, 1, offset + kLargePut - 8, 1);
      tshmemi_proxy_request quiet = {};
      quiet.op = TSHMEMI_PROXY_QUIET;
      const uint64_t ticket = tshmemi_proxy_post(channel, &quiet);
      const Clock::time_point posted = Clock::now();
      while (!tshmemi_proxy_done(channel, ticket) && ms_since(posted) < static_cast<double>(2 * bound_ms() + 5000))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const double ms = ms_since(posted);
      result(which, me, tshmemi_proxy_done(channel, ticket) && ms <= static_cast<double>(bound_ms() + 5000),
             "the device channel's quiet after " + std::to_string(static_cast<int>(ms)) + " ms");
    }
    static char payload[kLargePut] = {};
    const Clock::time_point start = Clock::now();
    int rc = 0;
    long puts = 0;
    double last_ms = 0;
    tshmemx_clear_last_error();
    while (rc == 0 && ms_since(start) < static_cast<double>(2 * bound_ms() + 5000)) {
      const Clock::time_point put_start = Clock::now();
      rc = tshmem_putmem(large, payload, puts % 2 == 0 ? sizeof(long) : kLargePut, 1);
      last_ms = ms_since(put_start);
      ++puts;
    }
    std::string message = tshmemx_last_error();
    result(which, me,
           rc != 0 && last_ms <= static_cast<double>(bound_ms() + 5000) && has(message, "tshmem_putmem") &&
               (has(message, "TSHMEM_PROXY_TIMEOUT_MS") || has(message, "to PE 1 failed") ||
                has(message, "to be sent to PE 1")),
           "put " + std::to_string(puts) + ": rc " + std::to_string(rc) + " after " +
               std::to_string(static_cast<int>(last_ms)) + " ms: " + message);
    const Clock::time_point quiet_start = Clock::now();
    tshmemx_clear_last_error();
    tshmem_quiet();
    const double ms = ms_since(quiet_start);
    message = tshmemx_last_error();
    result(which, me, ms <= 1000 && has(message, "tshmem_quiet"),
           "quiet after " + std::to_string(static_cast<int>(ms)) + " ms: " + message);
  }

  if (which == "truncate-finalize") {
    if (me == 0) {
      // Larger than any buffer the target's proxy posts (a header and a chunk of 256 bytes: the test's
      // TSHMEM_PROXY_CHUNK): MPI_ERR_TRUNCATE at PE 1.
      const int rc = tshmemi_proxy_send_unsolicited_reply(1, 12345, 2048);
      std::printf("PE 0 sent the oversized message: rc %d\n", rc);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  if (which == "reserved-put") {
    tshmemi_proxy_channel *channel = tshmemi_proxy_device_channel();
    // Where PE 1's heap words are, by offset (the same on every PE).
    const uint64_t epoch_word = TSHMEMI_COLL_ROW_EPOCHS_OFFSET + 8;     // a collective barrier's row epoch
    const uint64_t arrival_word = TSHMEMI_SYNC_ARRIVAL_OFFSET + 8 * 0;  // PE 0's sync arrival slot
    uint64_t refused_before = tshmemi_proxy_refused(nullptr, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0 && channel != nullptr) {
      post_inline_put(channel, 1, epoch_word, 0x5eed);
      post_add(channel, 1, epoch_word, 3);
      tshmemi_proxy_request arrive = {};  // the shape of tshmem's own barrier arrival: taken
      arrive.op = TSHMEMI_PROXY_SIGNAL;
      arrive.amo = TSHMEMI_PROXY_SIGNAL_SET;
      arrive.pe = 1;
      arrive.remote = arrival_word;
      arrive.value = 0;  // the value an arrival word holds before any barrier: nothing changes for later barriers
      tshmemi_proxy_post(channel, &arrive);
      tshmemi_proxy_request quiet = {};
      quiet.op = TSHMEMI_PROXY_QUIET;
      const uint64_t ticket = tshmemi_proxy_post(channel, &quiet);
      const Clock::time_point start = Clock::now();
      while (!tshmemi_proxy_done(channel, ticket) && ms_since(start) < 10000)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    tshmem_barrier_all();
    // The requests are refused where they are read (PE 0's proxy: the rule every transport keeps, UCX's direct
    // writes included) or, for a staged message that got past it, at the target: the refusals of both PEs count.
    char text[512] = {};
    const uint64_t refused = tshmemi_proxy_refused(text, sizeof text) - refused_before;
    struct {
      long count;
      int pe;
    } refused_here = {static_cast<long>(refused), me}, most = {0, 0};
    MPI_Allreduce(&refused_here, &most, 1, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    uint64_t total = 0;
    MPI_Allreduce(&refused, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(text, sizeof text, MPI_CHAR, most.pe, MPI_COMM_WORLD);
    if (me == 1) {
      const volatile uint64_t *epoch =
          reinterpret_cast<const volatile uint64_t *>(static_cast<const char *>(tshmemx_heap_base()) + epoch_word);
      result(which, me, *epoch == 0 && total == 2 && has(text, "reserved region at the start of the heap"),
             "row epoch " + std::to_string(*epoch) + ", " + std::to_string(total) + " refused: " + text);
    }
    tshmem_barrier_all();
  }

  tshmemx_clear_last_error();
  const Clock::time_point start = Clock::now();
  tshmem_finalize();
  const double ms = ms_since(start);
  if (kill_barrier || kill_put) {
    // The failed state: the teardown waits for no other PE, and MPI_Finalize, which would wait for the dead one, is
    // left (tshmem started MPI; the warning names the PE) or is the application's.
    const std::string message = tshmemx_last_error();
    result(which, me,
           tshmem_my_pe() == -1 && ms <= static_cast<double>(bound_ms() + 1000) &&
               has(message, "tears down without waiting"),
           "finalize after " + std::to_string(static_cast<int>(ms)) + " ms: " + message);
  }
  std::printf("PE %d finalized (%s)\n", me, tshmemx_last_error());
  std::fflush(stdout);
  // The application knows that a PE died (its barrier failed): MPI_Finalize would wait for that PE, so it leaves it.
  if (application_mpi) std::_Exit(0);
  return 0;
}
