// Helper for the residue test: every PE initialises and allocates; the last PE then kills itself
// with SIGKILL (no cleanup of any kind runs). The launcher takes the job down.
// With the argument "expect-init-failure" (the rlimit test), a failed init is the expected outcome: every
// PE prints the error and returns 0, so the launcher lets each PE finish on its own.
// With "init-only" every PE initialises and finalises (the residue test's next job on the node).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tshmem/tshmem.h"

int main(int argc, char **argv) {
  const bool expect_failure = argc > 1 && std::strcmp(argv[1], "expect-init-failure") == 0;
  const bool init_only = argc > 1 && std::strcmp(argv[1], "init-only") == 0;
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "init failed: %s\n", tshmemx_last_error());
    return expect_failure ? 0 : 2;
  }
  if (expect_failure) {
    std::fprintf(stderr, "init succeeded, but it was expected to fail\n");
    tshmem_finalize();
    return 3;
  }
  if (init_only) {
    tshmem_finalize();
    return 0;
  }
  void *block = tshmem_malloc(1 << 20);
  tshmem_barrier_all();
  std::printf("PE %d ready\n", tshmem_my_pe());
  std::fflush(stdout);
  tshmem_barrier_all();
  if (block != nullptr && tshmem_my_pe() == tshmem_n_pes() - 1) raise(SIGKILL);
  sleep(30);  // the others wait to be killed by the launcher
  return 1;
}
