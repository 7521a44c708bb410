// The buffer's record of what its kernels found wrong (device memory, one per buffer): the first value error
// (an expert id outside [-1, num_experts)) or buffer overflow. Read by the host after a stream synchronisation.
#pragma once

#include <cstdint>

namespace tshmem_ep {

enum DeviceErrorKind : int {
  kNoError = 0,
  kBadExpert = 1,
  kRecvOverflow = 2,
  kCombineOverflow = 3,
  kPeerTimeout = 4  // a low-latency wait passed its bound: value = the PE waited for; pos = 0 dispatch, 1 combine,
                    // 2 clean
};

struct DeviceError {
  int kind;  // DeviceErrorKind of the first violation, 0 if none
  int pad;
  long long value;  // the offending value (expert id; rows needed)
  long long pos;    // its flat position in topk_idx; the capacity in rows
};

#if defined(__CUDACC__)
/// Keeps the first violation (later ones are dropped).
__device__ inline void record_error(DeviceError *e, int kind, long long value, long long pos) {
  if (atomicCAS(&e->kind, 0, kind) == 0) {
    e->value = value;
    e->pos = pos;
  }
}
#endif

}  // namespace tshmem_ep
