// Tensor-view validation and output preparation shared by the entry points. Every check names the tensor,
// the value found and the rule, through fail().
#pragma once

#include <initializer_list>
#include <vector>

#include "core/status.h"

namespace tshmem_moe {

const char *dtype_name(tshmem_moe_dtype_t dtype);
bool is_contiguous(const Tensor &t);
int64_t numel(const Tensor &t);
// "[4001, 8]" for messages.
const char *shape_str(const Tensor &t, char *buf, size_t n);

// A required input: not NULL, dtype in `dtypes`, `ndim` dims (or any if ndim < 0), contiguous if asked,
// data non-NULL when it has elements, and on `device` (the primary input's) unless this is the primary.
Status check_input(const Tensor *t, const char *name, std::initializer_list<tshmem_moe_dtype_t> dtypes, int ndim,
                   bool contiguous);
Status check_dim(const Tensor &t, const char *name, int dim, int64_t expected, const char *rule);
Status check_device(const Tensor &t, const char *name, int device, const char *primary);

// Outputs of one call: prepare() allocates a NULL-data output (stream-ordered on the device, or malloc on
// the CPU) or validates a preallocated one. If the call fails before commit(), what was allocated here is
// freed again, so a failing call leaves nothing behind.
class Outputs {
 public:
  Outputs(int device, cudaStream_t stream, const char *primary) : device_(device), stream_(stream), primary_(primary) {}
  ~Outputs();
  Outputs(const Outputs &) = delete;
  Outputs &operator=(const Outputs &) = delete;

  // `strides` NULL means row-major contiguous; `alloc_elems` is the allocation size in elements (it may
  // exceed the view for padded layouts); pass -1 for the view's extent.
  Status prepare(Tensor *out, const char *name, tshmem_moe_dtype_t dtype, int ndim, const int64_t *shape,
                 const int64_t *strides = nullptr, int64_t alloc_elems = -1);
  void commit() { owned_.clear(); }

 private:
  int device_;
  cudaStream_t stream_;
  const char *primary_;
  std::vector<Tensor *> owned_;
};

// Allocation helpers used for outputs and workspaces (device >= 0: cudaMallocAsync on stream).
Status allocate(int device, cudaStream_t stream, size_t bytes, void **ptr);
void release(int device, cudaStream_t stream, void *ptr);

}  // namespace tshmem_moe
