// The job the reliability scripts run: init, one ring of puts through a calloc'ed block, finalize.
// Prints "PE <me> ok" on success, or "PE <rank> init failed: code <n>: <message>" and exits 0 all the same:
// the scripts judge the output, and a non-zero exit would make mpirun kill the PEs that have not printed yet.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tshmem/tshmem.h"

int main() {
  if (tshmem_init() != 0) {
    const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
    std::printf("PE %s init failed: code %d: %s\n", rank ? rank : "?", tshmemx_last_error_code(), tshmemx_last_error());
    return 0;
  }
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  long *slot = static_cast<long *>(tshmem_calloc(1, sizeof(long)));
  if (slot == nullptr) {
    std::printf("PE %d calloc failed: %s\n", me, tshmemx_last_error());
    return 4;
  }
  const long note = 1000 + me;
  const int rc = tshmem_putmem(slot, &note, sizeof note, (me + 1) % n);
  tshmem_barrier_all();
  long seen = 0;
  if (tshmem_getmem(&seen, slot, sizeof seen, me) != 0 || rc != 0 || seen != 1000 + (me + n - 1) % n) {
    std::printf("PE %d: wrong value %ld (put rc %d)\n", me, seen, rc);
    return 5;
  }
  tshmem_free(slot);
  tshmem_finalize();
  std::printf("PE %d ok\n", me);
  return 0;
}
