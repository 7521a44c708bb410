// The exported status calls of tshmem_ep (names, the last error, dtype sizes). Apart from core/status.cc so that a
// test program holding its own copy of the library's internals (for the CPU references) still reads the library's
// last error, not its own.
#include "core/status.h"

extern "C" {

// A switch with no default: -Wswitch flags a new status without a string.
TSHMEM_EP_API const char *tshmem_ep_status_string(tshmem_ep_status_t status) {
  switch (status) {
    case TSHMEM_EP_SUCCESS: return "TSHMEM_EP_SUCCESS";
    case TSHMEM_EP_ERR_INVALID_ARGUMENT: return "TSHMEM_EP_ERR_INVALID_ARGUMENT";
    case TSHMEM_EP_ERR_INVALID_VALUE: return "TSHMEM_EP_ERR_INVALID_VALUE";
    case TSHMEM_EP_ERR_BUFFER_TOO_SMALL: return "TSHMEM_EP_ERR_BUFFER_TOO_SMALL";
    case TSHMEM_EP_ERR_NOT_INITIALIZED: return "TSHMEM_EP_ERR_NOT_INITIALIZED";
    case TSHMEM_EP_ERR_TSHMEM: return "TSHMEM_EP_ERR_TSHMEM";
    case TSHMEM_EP_ERR_CUDA: return "TSHMEM_EP_ERR_CUDA";
    case TSHMEM_EP_ERR_OUT_OF_MEMORY: return "TSHMEM_EP_ERR_OUT_OF_MEMORY";
    case TSHMEM_EP_ERR_UNSUPPORTED: return "TSHMEM_EP_ERR_UNSUPPORTED";
    case TSHMEM_EP_ERR_INTERNAL: return "TSHMEM_EP_ERR_INTERNAL";
    case TSHMEM_EP_NUM_STATUS: break;
  }
  return "unknown tshmem_ep status";
}

TSHMEM_EP_API const char *tshmem_ep_last_error(void) { return tshmem_ep::last_error(); }

TSHMEM_EP_API size_t tshmem_ep_dtype_size(tshmem_ep_dtype_t dtype) {
  switch (dtype) {
    case TSHMEM_EP_BFLOAT16: return 2;
    case TSHMEM_EP_FLOAT8_E4M3: return 1;
    case TSHMEM_EP_FLOAT32: return 4;
    case TSHMEM_EP_FLOAT16: return 2;
    case TSHMEM_EP_INT64: return 8;
    case TSHMEM_EP_INT32: return 4;
    case TSHMEM_EP_NUM_DTYPES: break;
  }
  return 0;
}

}  // extern "C"
