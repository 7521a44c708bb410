/* NVSHMEM compatibility: nvshmemx.h. Every mapped name lives in nvshmem.h (NVSHMEM's own nvshmem.h also
 * carries the NVSHMEMX_ constants that programs use with it alone); this header only includes it. */
#ifndef TSHMEM_NVSHMEM_COMPAT_NVSHMEMX_H
#define TSHMEM_NVSHMEM_COMPAT_NVSHMEMX_H

#include "nvshmem.h"

#endif /* TSHMEM_NVSHMEM_COMPAT_NVSHMEMX_H */
