/* An NVSHMEM host program, unchanged NVSHMEM names, built against tshmem's compat headers: every PE puts its
 * number into the next PE's slot. Runs on shm without a GPU (the heap is host memory there). */
#include <stdio.h>

#include "nvshmem.h"
#include "nvshmemx.h"

int main(void) {
  nvshmem_init();
  int me = nvshmem_my_pe(), n = nvshmem_n_pes();
  int *slot = (int *)nvshmem_calloc(1, sizeof(int));
  int note = 500 + me;
  nvshmem_putmem(slot, &note, sizeof note, (me + 1) % n);
  nvshmem_barrier_all();
  int got = -1;
  nvshmem_getmem(&got, slot, sizeof got, me);
  int expected = 500 + (me + n - 1) % n;
  printf("nvshmem PE %d of %d: got %d, expected %d (node PE %d)\n", me, n, got, expected,
         nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE));
  nvshmem_free(slot);
  nvshmem_finalize();
  return got == expected ? 0 : 1;
}
