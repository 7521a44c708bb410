/* The README's example: every PE writes its note into every PE's inbox. */
#include <stdio.h>
#include <tshmem/tshmem.h>

int main(void) {
  if (tshmem_init() != 0) { fprintf(stderr, "%s\n", tshmemx_last_error()); return 1; }
  int me = tshmem_my_pe(), n = tshmem_n_pes();
  long *inbox = tshmem_calloc(n, sizeof(long));
  if (inbox == NULL) { fprintf(stderr, "%s\n", tshmemx_last_error()); return 1; }
  long note = 100 * me;
  for (int pe = 0; pe < n; ++pe) tshmem_putmem(&inbox[me], &note, sizeof note, pe);
  tshmem_barrier_all();
  long sum = 0;
  for (int pe = 0; pe < n; ++pe) sum += inbox[pe];
  printf("PE %d of %d: sum of notes = %ld\n", me, n, sum);
  tshmem_free(inbox);
  tshmem_finalize();
  return 0;
}
