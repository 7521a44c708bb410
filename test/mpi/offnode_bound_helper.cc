// Child of offnode_bound_test: 2 PEs on two "nodes" (TSHMEM_DEBUG_NODE_SIZE=1). After init PE 1 stops itself
// (SIGSTOP: every thread, its proxy too, as a hung process would); PE 0 makes one host call that needs PE 1's
// proxy and must get an error within TSHMEM_PROXY_TIMEOUT_MS, not hang. PE 1 is continued (SIGCONT) a second
// after the bound (stopped_peer.h), so that the job can end either way; then both PEs finalise (the path has
// stopped on both: finalize tears down without draining, and MPI is finalised).
// PE 0 prints "RESULT <case>: PASS ..." or "RESULT <case>: FAIL ...", and every PE "PE <n> finalized" at the end.
//   offnode_bound_helper putmem|putmem-large|getmem|quiet|device-p|device-put-large|barrier|finalize|dead-proxy
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "stopped_peer.h"
#include "tshmem/device/proxy_types.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBlockBytes = 64 * 1024;

long long bound_ms() {
  const char *text = std::getenv("TSHMEM_PROXY_TIMEOUT_MS");
  return text != nullptr ? std::atoll(text) : 300000;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// PE 0's call that needs the stopped PE 1; returns its status (nonzero expected).
int call_needing_pe1(const std::string &which, long *word, char *block) {
  long value = 7;
  static char buffer[kBlockBytes];
  if (which == "putmem") {  // a stopped target handles no message: credits, then the ring, run out
    int rc = 0;
    for (int i = 0; i < 100000 && rc == 0; ++i) rc = tshmem_putmem(word, &value, sizeof value, 1);
    return rc;
  }
  if (which == "putmem-large") {  // messages above MPI's eager size: every send buffer held by a send not received
    int rc = 0;
    for (int i = 0; i < 100000 && rc == 0; ++i) rc = tshmem_putmem(block, buffer, sizeof buffer, 1);
    return rc;
  }
  if (which == "getmem") return tshmem_getmem(buffer, word, sizeof buffer, 1);
  if (which == "quiet") {
    const int rc = tshmem_putmem(word, &value, sizeof value, 1);
    if (rc != 0) return rc;
    tshmem_quiet();
    return tshmemx_last_error_code();
  }
  if (which == "device-p") {  // a kernel's p's (posted to the device channel), then a quiet: none is acknowledged
    tshmemi_proxy_channel *channel = tshmemi_proxy_device_channel();
    if (channel == nullptr) return -2;
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.flags = TSHMEMI_PROXY_FLAG_INLINE;
    r.pe = 1;
    r.bytes = sizeof(long);
    for (int i = 0; i < 200; ++i) {
      r.remote =
          static_cast<uint64_t>(reinterpret_cast<char *>(word + i % 64) - static_cast<char *>(tshmemx_heap_base()));
      r.value = static_cast<uint64_t>(i);
      tshmemi_proxy_post(channel, &r);
    }
    tshmem_quiet();
    return tshmemx_last_error_code();
  }
  if (which == "device-put-large") {  // a kernel's large puts, then no host wait until the bound has passed
    tshmemi_proxy_channel *channel = tshmemi_proxy_device_channel();
    if (channel == nullptr) return -2;
    tshmemi_proxy_request r = {};
    r.op = TSHMEMI_PROXY_PUT;
    r.pe = 1;
    r.bytes = kBlockBytes;
    r.local = reinterpret_cast<uint64_t>(buffer);
    r.remote = static_cast<uint64_t>(block - static_cast<char *>(tshmemx_heap_base()));
    for (int i = 0; i < 32; ++i) tshmemi_proxy_post(channel, &r);
    // The proxy must stop the path by itself (a kernel has no wait of its own); the quiet then fails at once.
    std::this_thread::sleep_for(std::chrono::milliseconds(bound_ms() + 1000));
    tshmem_quiet();
    return tshmemx_last_error_code();
  }
  if (which == "barrier") {  // its quiet gives up; the rendezvous then waits for PE 1 (that wait is MPI's)
    const int rc = tshmem_putmem(word, &value, sizeof value, 1);
    if (rc != 0) return rc;
    tshmem_barrier_all();
    return tshmemx_last_error_code();
  }
  if (which == "dead-proxy") {  // after one call gave up, the next ones fail at once, naming why
    const int rc = tshmem_getmem(buffer, word, 8, 1);
    // More calls than the default ring holds: a stopped path never leaves them spinning on a full channel.
    const Clock::time_point second = Clock::now();
    int failed = 0, again = 0;
    for (int i = 0; i < 3000; ++i) failed += (again = tshmem_putmem(word, &value, sizeof value, 1)) != 0;
    const double ms = ms_since(second);
    std::printf("3000 calls after: %d failed (%s) in %.1f ms: %s\n", failed, tshmemx_strerror(again), ms,
                tshmemx_last_error());
    const bool fast = failed == 3000 && ms < 5000 && std::strstr(tshmemx_last_error(), "has stopped") != nullptr;
    return fast ? rc : 0;
  }
  return -1;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  if (tshmem_init() != 0) {
    std::printf("init failed: %s\n", tshmemx_last_error());
    return 2;
  }
  const int me = tshmem_my_pe();
  tshmem_test::StoppedPeer peer;
  long *word = static_cast<long *>(tshmem_calloc(64, sizeof(long)));
  char *block = static_cast<char *>(tshmem_malloc(kBlockBytes));
  tshmem_barrier_all();

  const Clock::time_point start = Clock::now();
  peer.stop_pe1(me, start + std::chrono::milliseconds(200 + bound_ms() + 1000));  // see RESULT below
  if (me == 1) {
    if (which == "barrier") tshmem_barrier_all();  // continued: join PE 0's barrier
    if (which == "dead-proxy") {  // PE 0's proxy stopped and told this one: calls here fail too, naming PE 0
      long value = 1;
      int rc = 0;
      const Clock::time_point since = Clock::now();
      while ((rc = tshmem_putmem(word, &value, sizeof value, 0)) == 0 && ms_since(since) < 5000)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const bool told = rc != 0 && std::strstr(tshmemx_last_error(), "the off-node proxy of PE 0 stopped") != nullptr;
      std::printf("PE 1 told: %s (%s after %.0f ms): %s\n", told ? "yes" : "NO", tshmemx_strerror(rc), ms_since(since),
                  tshmemx_last_error());
    }
  } else {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(200));  // PE 1 has stopped by now
    tshmemx_clear_last_error();
    if (which == "finalize") {
      long value = 7;  // something to drain: finalize's quiet needs PE 1, below
      if (tshmem_putmem(word, &value, sizeof value, 1) != 0) std::printf("RESULT finalize: FAIL (putmem)\n");
    } else {
      const Clock::time_point call = Clock::now();
      const int rc = call_needing_pe1(which, word, block);
      const double ms = ms_since(call);
      const std::string message = tshmemx_last_error();
      const double bound = static_cast<double>(bound_ms());
      const bool named = which == "dead-proxy" || message.find("TSHMEM_PROXY_TIMEOUT_MS") != std::string::npos;
      // The upper end leaves room for a loaded 2-core machine: the proxy looks at its waits every 10 ms, and the
      // barrier case also waits for PE 1's continuation (a second after the bound).
      const bool pass = rc != 0 && ms >= 0.9 * bound && ms <= bound + 6000 && named;
      std::printf("RESULT %s: %s (rc %s after %.0f ms, bound %lld ms): %s\n", which.c_str(), pass ? "PASS" : "FAIL",
                  tshmemx_strerror(rc), ms, bound_ms(), message.c_str());
    }
    std::fflush(stdout);
  }
  const Clock::time_point finalize_start = Clock::now();
  tshmem_finalize();
  const double ms = ms_since(finalize_start);
  peer.join();
  if (which == "finalize" && me == 0) {
    const std::string message = tshmemx_last_error();
    const bool pass = tshmem_my_pe() == -1 && message.find("tears down without") != std::string::npos;
    std::printf("RESULT finalize: %s (after %.0f ms): %s\n", pass ? "PASS" : "FAIL", ms, message.c_str());
  }
  std::printf("PE %d finalized\n", me);
  std::fflush(stdout);
  return 0;
}
