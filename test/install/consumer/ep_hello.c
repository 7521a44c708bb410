/* tshmem_ep from an installed tree: <tshmem/ep.h> and tshmem::ep (find_package(tshmem OPTIONAL_COMPONENTS ep)).
 * Host calls only (row sizes, a buffer size hint, a refused argument): no GPU and no tshmem_init needed. */
#include <stdio.h>
#include <tshmem/ep.h>

int main(void) {
  size_t nvl = 0, rdma = 0;
  if (tshmem_ep_buffer_size_hint(8, 4096, 7168, TSHMEM_EP_FLOAT8_E4M3, 8, &nvl, &rdma) != TSHMEM_EP_SUCCESS) {
    fprintf(stderr, "%s\n", tshmem_ep_last_error());
    return 1;
  }
  const tshmem_ep_status_t bad = tshmem_ep_buffer_size_hint(8, 4096, 7000, TSHMEM_EP_FLOAT8_E4M3, 8, &nvl, &rdma);
  printf("ep row: %zu / %s\n", tshmem_ep_dispatch_row_bytes(7168, TSHMEM_EP_FLOAT8_E4M3, 8),
         tshmem_ep_status_string(bad));
  return 0;
}
