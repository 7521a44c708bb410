// Must NOT compile: a name without a tshmem counterpart (here the unique-ID bootstrap) is absent from the
// compat headers, so the compiler names it (ctest tshmem_nvshmem_absent_name checks the message).
#include "nvshmem.h"
#include "nvshmemx.h"

int uses_an_absent_name() {
  nvshmemx_uniqueid_t id;
  return nvshmemx_get_uniqueid(&id);
}
