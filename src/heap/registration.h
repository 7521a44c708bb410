// tshmemx_buffer_register_symmetric / tshmemx_buffer_unregister_symmetric: an application's buffer made symmetric.
// Collective and checked like tshmem_malloc: every PE's local verdict (arguments, backend, allocation, room) and its
// request (size, the offset it chose in the registration range) go through the collective check, so PEs that
// differ are named on every PE and nothing is mapped; then the backend maps every node PE's buffer at that offset
// of the registration range in every view (src/mem/vmm_backend.cc), and the device's address formula reaches it
// like heap memory. The offsets are chosen first fit by the same rule on every PE, like the heap's.
#pragma once

#include <cstddef>

#include "bootstrap/bootstrap.h"
#include "bootstrap/collective_check.h"
#include "heap/heap.h"
#include "mem/backend.h"

namespace tshmemi {

/// Collective: registers [buf, +size) on every PE; `*out` is its symmetric address (the heap's view of it), or
/// NULL with the same failure on every PE. The heap records it, so symmetric calls accept it.
Status register_symmetric(MemBackend &mem, SymmetricHeap &heap, Bootstrap &boot, CollectiveCheck &check, void *buf,
                          size_t size, int flags, void **out);

/// Collective: unregisters the buffer registered at `addr` (the address register_symmetric returned) of `size`
/// bytes, on every PE or, with the same failure everywhere, on none.
Status unregister_symmetric(MemBackend &mem, SymmetricHeap &heap, CollectiveCheck &check, void *addr, size_t size);

}  // namespace tshmemi
