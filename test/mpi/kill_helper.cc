// Helper for the residue test: every PE initialises and allocates; the last PE then kills itself
// with SIGKILL (no cleanup of any kind runs). The launcher takes the job down.
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "tshmem/tshmem.h"

int main() {
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "init failed: %s\n", tshmemx_last_error());
    return 2;
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
