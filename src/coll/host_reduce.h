// The element arithmetic of the collectives, on the host: the same results as the GPU kernels
// (tshmem/device/impl/coll.cuh), bit for bit. Members are combined in team-index order, starting from member 0's
// value; half and bfloat16 accumulate in float and round once (to nearest even), float in float, double in double;
// integers wrap around (unsigned types compare unsigned); min and max of floats ignore a NaN operand (fmin, fmax).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tshmem/tshmemx.h"

namespace tshmemi {

/// dst[e] = ((srcs[0][e] op srcs[1][e]) op srcs[2][e]) ... op srcs[n - 1][e] for e < count. `dtype` and `op` are
/// valid and bitwise operators come with integer types (the checks ran); dst may be one of the sources.
void host_reduce(tshmemx_dtype_t dtype, tshmemx_redop_t op, void *dst, const void *const *srcs, int n, size_t count);

/// The GPU's conversions (__float2half_rn, __float2bfloat16_rn and back), exposed for the tests.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

}  // namespace tshmemi
