// The kernels of combine, and what they are given. Host code sees only these launchers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/device_error.h"
#include "core/rows.h"

namespace tshmem_ep {

struct CombineParams {
  const char *x;              // [num_rows, hidden] bf16, in the dispatch's received order
  int64_t num_rows;           // rows of x: rows past it (a worst-case overflow) are not sent
  const float *topk_weights;  // [rows, num_topk] or NULL
  int num_topk;
  int64_t hidden;
  CombineRow row;
  int n_pes;
  int my_pe;
  const int32_t *info;  // InfoLayout words of the handle
  InfoLayout il;
  const int32_t *send_index;  // [num_tokens, n_pes]
  int64_t num_tokens;
  char *area;            // symmetric receive area (this PE's address)
  int64_t area_rows;     // rows of row.stride that fit it
  char *staging;         // symmetric staging area, NULL on one node
  int64_t staging_rows;  // rows of row.stride that fit it
  uint64_t *sig;         // symmetric combine signals [n_pes]
  unsigned *counter;
  DeviceError *err;
  const uint16_t *bias0;  // [num_tokens, hidden] bf16 or NULL
  const uint16_t *bias1;
  char *out;           // [num_tokens, hidden] bf16
  float *out_weights;  // [num_tokens, num_topk] or NULL
};

/// Every received row back to its home PE's receive area, at the row where the home PE expects it (the order of
/// the home's dispatch send map); then the last block signals every PE.
cudaError_t launch_combine_send(const CombineParams &p, int blocks, cudaStream_t stream);
/// Per home token: the returned rows summed in ascending PE order in fp32, + bias0, + bias1, one rounding.
cudaError_t launch_combine_reduce(const CombineParams &p, int blocks, cudaStream_t stream);

}  // namespace tshmem_ep
