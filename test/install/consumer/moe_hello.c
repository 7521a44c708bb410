/* tshmem_moe from an installed tree: <tshmem/moe.h> and tshmem::moe (find_package(tshmem OPTIONAL_COMPONENTS moe)).
 * The views live on the CPU, so the call runs the CPU reference: no GPU needed. */
#include <stdio.h>
#include <tshmem/moe.h>

int main(void) {
  float scores[2][4] = {{0.1f, 0.9f, 0.5f, 0.9f}, {3.0f, 2.0f, 1.0f, 0.0f}};
  const int64_t shape[2] = {2, 4};
  tshmem_moe_tensor_t s = tshmem_moe_tensor_make(scores, TSHMEM_MOE_FLOAT32, 2, shape, TSHMEM_MOE_DEVICE_CPU);
  tshmem_moe_tensor_t idx = {0}; /* data NULL: the library allocates the output */
  if (tshmem_moe_topk_gate(&s, 2, &idx, NULL) != TSHMEM_MOE_SUCCESS) {
    fprintf(stderr, "%s\n", tshmem_moe_last_error());
    return 1;
  }
  const int64_t *o = (const int64_t *)idx.data;
  printf("moe topk_gate: %lld %lld / %lld %lld\n", (long long)o[0], (long long)o[1], (long long)o[2], (long long)o[3]);
  const int ok = o[0] == 1 && o[1] == 3 && o[2] == 0 && o[3] == 1; /* ties to the smaller index */
  tshmem_moe_tensor_free(&idx, NULL);
  return ok ? 0 : 1;
}
