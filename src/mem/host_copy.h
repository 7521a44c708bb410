// Copies between host memory and a host-memory heap (the shm backend's put and get).
//
// Past a quarter of the last-level cache a copy cannot stay cached: its source and destination together pass
// half of the cache, so every line it writes evicts another. glibc's memcpy still writes such copies through
// the cache up to about 3/4 of it, and each store first reads the destination line it overwrites (a read for
// ownership): a third more memory traffic for nothing. From that size host_copy writes with streaming
// (non-temporal) stores instead; below it, memcpy (the destination stays warm for whoever reads it next).
#pragma once

#include <cstddef>

namespace tshmemi {

/// Bytes from which host_copy streams: a quarter of the last-level cache this CPU reports (sysfs), kept within
/// [1 MiB, 64 MiB]; 8 MiB where the cache size is unknown. Read once.
size_t streaming_copy_threshold();

/// Copies `bytes` from src to dst (they do not overlap): memcpy below streaming_copy_threshold(), else
/// streaming_copy.
void host_copy(void *dst, const void *src, size_t bytes);

/// Copies with streaming stores where the CPU has them (x86-64; elsewhere memcpy), then orders them before this
/// thread's later stores (sfence), so a flag written after the copy is never seen before its data.
void streaming_copy(void *dst, const void *src, size_t bytes);

}  // namespace tshmemi
