// The device half of the host signal calls (rma.cc: tshmemx_putmem_signal[_on_stream],
// tshmemx_signal_wait_until[_on_stream]) on GPU heaps, where the host cannot update or read the words itself.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "tshmem/tshmemx.h"

namespace tshmemi {

/// Enqueues on `stream` a one-thread kernel that applies `sig_op` with `signal` to `pe`'s copy of the symmetric
/// word `sig_addr` (the device API's signal_op: a release, after everything earlier on the stream).
Status gpu_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, tshmemx_stream_t stream);

/// Enqueues on `stream` a one-thread kernel that waits until `*sig_addr cmp value` (device signal_wait_until).
Status gpu_signal_wait_on_stream(const uint64_t *sig_addr, int cmp, uint64_t value, tshmemx_stream_t stream);

/// Reads this PE's word `sig_addr` of the GPU heap now, through tshmem's own stream (the host-blocking wait polls it).
Status gpu_signal_read(const uint64_t *sig_addr, uint64_t *value);

/// Runs `launch` on tshmem's internal stream of the current device and waits for it (coll_run_blocking).
Status gpu_run_blocking(const char *call, Status (*launch)(void *arg, tshmemx_stream_t stream), void *arg);

}  // namespace tshmemi
