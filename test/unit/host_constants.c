/* A C host program has the comparison and signal operators from tshmem/tshmem.h alone, as shmem.h gives SHMEM_CMP_*:
 * compiled (-fsyntax-only) by the ctest tshmem_host_constants_c. */
#include <assert.h>

#include "tshmem/tshmem.h"

static_assert(TSHMEM_CMP_EQ == 0 && TSHMEM_CMP_NE == 1 && TSHMEM_CMP_GT == 2 && TSHMEM_CMP_LE == 3 &&
                  TSHMEM_CMP_LT == 4 && TSHMEM_CMP_GE == 5,
              "comparisons (OpenSHMEM's order)");
static_assert(TSHMEM_SIGNAL_SET == 0 && TSHMEM_SIGNAL_ADD == 1, "signal operators");

#ifdef TSHMEM_DEVICE_DEFINES_CUH
#error "tshmem/tshmem.h pulled in a device header"
#endif

int wait_for_flag(uint64_t *flag);
int wait_for_flag(uint64_t *flag) { return tshmemx_signal_wait_until(flag, TSHMEM_CMP_GE, 1, -1, 0); }
