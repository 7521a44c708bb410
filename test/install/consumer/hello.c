/* The README's host example (test/install/readme_examples_test.sh runs the README's own text). */
#include <stdio.h>
#include <stdlib.h>
#include <tshmem/tshmem.h>

int main(void) {
  if (tshmem_init() != 0) { fprintf(stderr, "%s\n", tshmemx_last_error()); return 1; }
  int me = tshmem_my_pe(), n = tshmem_n_pes();
  long *inbox = tshmem_calloc(n, sizeof(long));       /* collective, same offset on every PE */
  long *notes = malloc(n * sizeof(long));             /* private memory of this PE */
  if (inbox == NULL || notes == NULL) { fprintf(stderr, "%s\n", tshmemx_last_error()); return 1; }
  long note = 100 * me;
  for (int pe = 0; pe < n; ++pe)                       /* my slot in every PE's inbox */
    tshmem_putmem(&inbox[me], &note, sizeof note, pe);
  tshmem_barrier_all();                                /* all puts complete and visible */
  tshmem_getmem(notes, inbox, n * sizeof(long), me);   /* my inbox, wherever the heap lives */
  long sum = 0;
  for (int pe = 0; pe < n; ++pe) sum += notes[pe];
  printf("PE %d of %d: sum of notes = %ld\n", me, n, sum);
  free(notes);
  tshmem_free(inbox);
  tshmem_finalize();
  return 0;
}
