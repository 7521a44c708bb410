// Child of offnode_bound_test (GPU cases): 2 PEs on two "nodes" (TSHMEM_DEBUG_NODE_SIZE=1) sharing the GPU. After
// init PE 1 stops itself (SIGSTOP: its proxy thread too); PE 0 launches one kernel whose wait needs PE 1 and
// must trap within TSHMEM_PROXY_TIMEOUT_MS / TSHMEM_WAIT_TIMEOUT_MS with its message (device printf, checked by
// the parent). PE 1 is continued a second after twice the bound (stopped_peer.h). PE 0's CUDA context is gone after the
// trap, so no PE finalises tshmem: each prints its line and leaves (the launcher's exit status is not looked at).
//   offnode_bound_helper quiet|g|get|fetch-amo|full-channel|barrier|signal-wait|collective|after-stop
// Exit 77 and "SKIP: no CUDA device" without a GPU.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "stopped_peer.h"
#include "tshmem/device/coll.cuh"
#include "tshmem/device/tshmem_device.cuh"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace {

using Clock = std::chrono::steady_clock;

enum class Case { kQuiet, kG, kGet, kFetchAmo, kFullChannel, kFullStaging, kBarrier, kSignalWait, kCollective };

__global__ void wait_on_pe1(Case which, uint64_t *words, char *bytes) {
  switch (which) {
    case Case::kQuiet:
      tshmem::p(words, uint64_t{1}, 1);
      tshmem::quiet();
      break;
    case Case::kG: words[1] = tshmem::g(words, 1); break;
    case Case::kGet: tshmem::getmem(bytes, bytes + 4096, 4096, 1); break;
    case Case::kFetchAmo: words[1] = tshmem::atomic_fetch_add(words, uint64_t{1}, 1); break;
    case Case::kFullChannel:
      for (uint64_t i = 0; i < 1000000; ++i) tshmem::p(words + (i & 7), i, 1);
      break;
    case Case::kFullStaging:  // staged puts (TSHMEM_PROXY_STAGE_MAX=4K) until the put staging is full
      for (uint64_t i = 0; i < 1000000; ++i) tshmem::putmem_nbi(bytes + 8192, bytes, 4096, 1);
      break;
    case Case::kBarrier: tshmem::barrier_all<tshmem::thread_scope>(); break;
    case Case::kSignalWait: tshmem::signal_wait_until(words + 2, TSHMEM_CMP_EQ, uint64_t{1}); break;
    case Case::kCollective: tshmem::coll::fcollect_block(TSHMEM_TEAM_WORLD, bytes, bytes + 8192, 64); break;
  }
}

bool parse(const std::string &name, Case *out) {
  static const struct {
    const char *name;
    Case value;
  } kCases[] = {{"quiet", Case::kQuiet},
                {"g", Case::kG},
                {"get", Case::kGet},
                {"fetch-amo", Case::kFetchAmo},
                {"full-channel", Case::kFullChannel},
                {"full-staging", Case::kFullStaging},
                {"barrier", Case::kBarrier},
                {"signal-wait", Case::kSignalWait},
                {"collective", Case::kCollective},
                {"after-stop", Case::kQuiet}};
  for (const auto &c : kCases)
    if (name == c.name) return *out = c.value, true;
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  Case kernel_case = Case::kQuiet;
  if (!parse(which, &kernel_case)) {
    std::printf("unknown case '%s'\n", which.c_str());
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  if (tshmem_init() != 0) {
    std::printf("init failed: %s\n", tshmemx_last_error());
    return 2;
  }
  const int me = tshmem_my_pe();
  tshmem_test::StoppedPeer peer;
  auto *words = static_cast<uint64_t *>(tshmem_calloc(16, sizeof(uint64_t)));
  auto *bytes = static_cast<char *>(tshmem_calloc(1, 16384));
  tshmem_barrier_all();
  const long long bound =
      std::atoll(std::getenv("TSHMEM_PROXY_TIMEOUT_MS") ? std::getenv("TSHMEM_PROXY_TIMEOUT_MS") : "0");

  const Clock::time_point start = Clock::now();
  peer.stop_pe1(me, start + std::chrono::milliseconds(200 + 2 * bound + 1000));
  if (me == 0) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(200));
    double expect_ms = static_cast<double>(bound);
    if (which == "after-stop") {  // a host wait gives up first: the path stops, and kernels see it at once
      char host[8];
      const int rc = tshmem_getmem(host, bytes, sizeof host, 1);
      std::printf("host getmem: %s: %s\n", tshmemx_strerror(rc), tshmemx_last_error());
      expect_ms = 0;
    }
    const Clock::time_point launched = Clock::now();
    wait_on_pe1<<<1, 1>>>(kernel_case, words, bytes);
    const cudaError_t rc = cudaDeviceSynchronize();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - launched).count();
    std::fflush(stdout);
    const bool in_bound = ms >= 0.9 * expect_ms && ms <= expect_ms + 3000;
    std::printf("RESULT %s: %s (kernel %s after %.0f ms, bound %lld ms)\n", which.c_str(),
                rc != cudaSuccess && in_bound ? "PASS" : "FAIL", cudaGetErrorName(rc), ms, bound);
    std::fflush(stdout);
    peer.join();
  }
  std::printf("PE %d done\n", me);
  std::fflush(stdout);
  _exit(0);  // PE 0's context is gone: neither tshmem nor MPI can be finalised cleanly here
}
