// Cold trap paths with a message. Included by the impl headers; not a public header.
#ifndef TSHMEM_DEVICE_IMPL_TRAP_CUH
#define TSHMEM_DEVICE_IMPL_TRAP_CUH

#include "tshmem/device/defines.cuh"

#ifdef TSHMEM_DEVICE_COMPILE
#include <cstdio>

namespace tshmemi {

/// True in one lane of each group of lanes that reach the call together: that lane prints, so a warp that
/// breaks a rule prints one line, not 32 (lanes that arrive apart print apart).
TSHMEMI_DEVICE bool is_print_leader() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return static_cast<unsigned>(__ffs(__activemask()) - 1) == lane;
}

TSHMEMI_DEVICE_COLD void trap_pe_out_of_range(const char *call, int pe, int n_pes, int me) {
  if (is_print_leader())
    printf("tshmem: %s: PE %d out of range [0, %d) on PE %d (block (%u,%u,%u), thread (%u,%u,%u))\n", call, pe, n_pes,
           me, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
}

TSHMEMI_DEVICE_COLD void trap_pe_unreachable(const char *call, int pe, int me) {
  if (is_print_leader())
    printf("tshmem: %s: PE %d is not reachable by load/store from PE %d (block (%u,%u,%u), thread (%u,%u,%u))\n", call,
           pe, me, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
}

TSHMEMI_DEVICE_COLD void trap_wait_timeout(const char *call, const void *addr, int cmp, unsigned long long expected,
                                           unsigned long long found, unsigned long long timeout_ns, int me) {
  static const char *const kOps[] = {"==", "!=", ">", "<=", "<", ">="};
  const char *op = (cmp >= 0 && cmp < 6) ? kOps[cmp] : "?";
  printf(
      "tshmem: %s: timed out after %llu ns on PE %d waiting at address %p for value %s %llu (0x%llx); "
      "found %llu (0x%llx) (block (%u,%u,%u), thread (%u,%u,%u))\n",
      call, timeout_ns, me, addr, op, expected, expected, found, found, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
      threadIdx.y, threadIdx.z);
  __trap();
}

TSHMEMI_DEVICE_COLD void trap_bad_operator(const char *call, int op, int me) {
  printf("tshmem: %s: invalid operator %d on PE %d (block (%u,%u,%u), thread (%u,%u,%u))\n", call, op, me, blockIdx.x,
         blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
  __trap();
}

}  // namespace tshmemi
#endif  // TSHMEM_DEVICE_COMPILE

#endif  // TSHMEM_DEVICE_IMPL_TRAP_CUH
