// The units of the -rdc test program: each writes its value into slot `unit` of the next PE's inbox.
#pragma once

#include <cuda_runtime.h>

/// Units in the program; CMake generates exactly this many (and refuses to configure otherwise).
constexpr int kRdcUnits = 16;

/// What unit `unit` of PE `pe` writes: distinct per unit and per PE. Defined in rdc_test.cu, called from
/// every unit's kernel: a cross-unit device call, which links only with -rdc.
__device__ int rdc_value(int pe, int unit);

#define TSHMEM_RDC_UNIT(k) cudaError_t rdc_unit_put_##k(int *inbox);
TSHMEM_RDC_UNIT(0)
TSHMEM_RDC_UNIT(1)
TSHMEM_RDC_UNIT(2)
TSHMEM_RDC_UNIT(3)
TSHMEM_RDC_UNIT(4)
TSHMEM_RDC_UNIT(5)
TSHMEM_RDC_UNIT(6)
TSHMEM_RDC_UNIT(7)
TSHMEM_RDC_UNIT(8)
TSHMEM_RDC_UNIT(9)
TSHMEM_RDC_UNIT(10)
TSHMEM_RDC_UNIT(11)
TSHMEM_RDC_UNIT(12)
TSHMEM_RDC_UNIT(13)
TSHMEM_RDC_UNIT(14)
TSHMEM_RDC_UNIT(15)
#undef TSHMEM_RDC_UNIT
