// Tensor views: validation, allocation of outputs, and the public tensor helpers.
#include "core/tensor.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/device.h"

namespace tshmem_moe {

const char *dtype_name(tshmem_moe_dtype_t dtype) {
  switch (dtype) {
    case TSHMEM_MOE_BOOL: return "bool";
    case TSHMEM_MOE_INT32: return "int32";
    case TSHMEM_MOE_INT64: return "int64";
    case TSHMEM_MOE_FLOAT32: return "float32";
    case TSHMEM_MOE_BFLOAT16: return "bfloat16";
    case TSHMEM_MOE_FLOAT8_E4M3: return "float8_e4m3fn";
    case TSHMEM_MOE_NUM_DTYPES: break;
  }
  return "invalid-dtype";
}

int64_t numel(const Tensor &t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

bool is_contiguous(const Tensor &t) {
  if (numel(t) == 0) return true;  // strides of an empty tensor carry no meaning
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

const char *shape_str(const Tensor &t, char *buf, size_t n) {
  size_t used = static_cast<size_t>(std::snprintf(buf, n, "["));
  for (int i = 0; i < t.ndim && used < n; ++i)
    used += static_cast<size_t>(std::snprintf(buf + used, n - used, "%s%" PRId64, i ? ", " : "", t.shape[i]));
  if (used < n) std::snprintf(buf + used, n - used, "]");
  return buf;
}

static const char *device_str(int device, char *buf, size_t n) {
  if (device == TSHMEM_MOE_DEVICE_CPU)
    std::snprintf(buf, n, "cpu");
  else
    std::snprintf(buf, n, "cuda:%d", device);
  return buf;
}

Status check_device(const Tensor &t, const char *name, int device, const char *primary) {
  if (t.device == device) return kSuccess;
  char a[32], b[32];
  return fail(TSHMEM_MOE_ERR_DEVICE_MISMATCH,
              "tensor '%s' is on device %s but the primary input '%s' is on device %s; all tensors of a call "
              "must be on one device (nothing is moved)",
              name, device_str(t.device, a, sizeof a), primary, device_str(device, b, sizeof b));
}

Status check_input(const Tensor *t, const char *name, std::initializer_list<tshmem_moe_dtype_t> dtypes, int ndim,
                   bool contiguous) {
  if (t == nullptr) return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' is required but NULL", name);
  if (t->ndim < 0 || t->ndim > TSHMEM_MOE_MAX_DIMS)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has ndim %d, outside [0, %d]", name, t->ndim,
                TSHMEM_MOE_MAX_DIMS);
  if (t->device < TSHMEM_MOE_DEVICE_CPU)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has device %d; use >= 0 or TSHMEM_MOE_DEVICE_CPU", name,
                t->device);
  bool ok = false;
  for (tshmem_moe_dtype_t d : dtypes) ok = ok || d == t->dtype;
  if (!ok) {
    char want[128] = "";
    for (tshmem_moe_dtype_t d : dtypes) {
      if (want[0]) std::strncat(want, " or ", sizeof want - std::strlen(want) - 1);
      std::strncat(want, dtype_name(d), sizeof want - std::strlen(want) - 1);
    }
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has dtype %s; it must be %s", name, dtype_name(t->dtype),
                want);
  }
  if (ndim >= 0 && t->ndim != ndim)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has %d dimensions; it must have %d", name, t->ndim, ndim);
  for (int i = 0; i < t->ndim; ++i)
    if (t->shape[i] < 0)
      return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has negative size %" PRId64 " in dim %d", name,
                  t->shape[i], i);
  if (contiguous && !is_contiguous(*t)) {
    char s[96];
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' (shape %s) must be contiguous (row-major)", name,
                shape_str(*t, s, sizeof s));
  }
  if (numel(*t) > 0 && t->data == nullptr)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has %" PRId64 " elements but a NULL data pointer", name,
                numel(*t));
  return kSuccess;
}

Status check_dim(const Tensor &t, const char *name, int dim, int64_t expected, const char *rule) {
  if (t.shape[dim] == expected) return kSuccess;
  char s[96];
  return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "tensor '%s' has shape %s; dim %d must be %" PRId64 " (%s)", name,
              shape_str(t, s, sizeof s), dim, expected, rule);
}

Status allocate(int device, cudaStream_t stream, size_t bytes, void **ptr) {
  *ptr = nullptr;
  if (bytes == 0) return kSuccess;
  if (device == TSHMEM_MOE_DEVICE_CPU) {
    *ptr = std::malloc(bytes);
    if (*ptr == nullptr) return fail(TSHMEM_MOE_ERR_OUT_OF_MEMORY, "malloc of %zu bytes failed", bytes);
    return kSuccess;
  }
  MOE_CUDA(cudaMallocAsync(ptr, bytes, stream));
  return kSuccess;
}

void release(int device, cudaStream_t stream, void *ptr) {
  if (ptr == nullptr) return;
  if (device == TSHMEM_MOE_DEVICE_CPU)
    std::free(ptr);
  else
    (void)cudaFreeAsync(ptr, stream);
}

Outputs::~Outputs() {
  for (Tensor *t : owned_) {
    release(device_, stream_, t->data);
    t->data = nullptr;
  }
}

Status Outputs::prepare(Tensor *out, const char *name, tshmem_moe_dtype_t dtype, int ndim, const int64_t *shape,
                        const int64_t *strides, int64_t alloc_elems) {
  if (out == nullptr) return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "output '%s' is NULL", name);
  Tensor want{};
  want.ndim = ndim;
  want.dtype = dtype;
  want.device = device_;
  int64_t extent = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    want.shape[i] = shape[i];
    want.strides[i] = strides ? strides[i] : extent;
    extent *= shape[i];
  }
  if (alloc_elems < 0) alloc_elems = extent;
  if (out->data == nullptr) {
    void *p = nullptr;
    MOE_TRY(allocate(device_, stream_, static_cast<size_t>(alloc_elems) * tshmem_moe_dtype_size(dtype), &p));
    want.data = p;
    *out = want;
    if (p) owned_.push_back(out);
    return kSuccess;
  }
  // A preallocated output must match exactly what the library would have produced.
  MOE_TRY(check_device(*out, name, device_, primary_));
  char a[96], b[96];
  if (out->dtype != dtype)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "output '%s' has dtype %s; it must be %s", name,
                dtype_name(out->dtype), dtype_name(dtype));
  bool same = out->ndim == ndim;
  for (int i = 0; same && i < ndim; ++i) same = out->shape[i] == want.shape[i];
  if (!same)
    return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT, "output '%s' has shape %s; it must be %s", name,
                shape_str(*out, a, sizeof a), shape_str(want, b, sizeof b));
  if (extent > 0) {
    for (int i = 0; i < ndim; ++i)
      if (want.shape[i] != 1 && out->strides[i] != want.strides[i])
        return fail(TSHMEM_MOE_ERR_INVALID_ARGUMENT,
                    "output '%s' has stride %" PRId64 " in dim %d; it must be %" PRId64, name, out->strides[i], i,
                    want.strides[i]);
  }
  return kSuccess;
}

}  // namespace tshmem_moe

using namespace tshmem_moe;

extern "C" {

TSHMEM_MOE_API size_t tshmem_moe_dtype_size(tshmem_moe_dtype_t dtype) {
  switch (dtype) {
    case TSHMEM_MOE_BOOL: return 1;
    case TSHMEM_MOE_INT32: return 4;
    case TSHMEM_MOE_INT64: return 8;
    case TSHMEM_MOE_FLOAT32: return 4;
    case TSHMEM_MOE_BFLOAT16: return 2;
    case TSHMEM_MOE_FLOAT8_E4M3: return 1;
    case TSHMEM_MOE_NUM_DTYPES: break;
  }
  return 0;
}

TSHMEM_MOE_API tshmem_moe_tensor_t tshmem_moe_tensor_make(void *data, tshmem_moe_dtype_t dtype, int32_t ndim,
                                                          const int64_t *shape, int32_t device) {
  Tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim < 0 ? 0 : (ndim > TSHMEM_MOE_MAX_DIMS ? TSHMEM_MOE_MAX_DIMS : ndim);
  t.device = device;
  int64_t extent = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = extent;
    extent *= shape[i];
  }
  return t;
}

TSHMEM_MOE_API int64_t tshmem_moe_tensor_numel(const tshmem_moe_tensor_t *t) { return t ? numel(*t) : 0; }

TSHMEM_MOE_API tshmem_moe_status_t tshmem_moe_tensor_free(tshmem_moe_tensor_t *t, cudaStream_t stream) {
  return guarded("tshmem_moe_tensor_free", [&]() -> Status {
    if (t == nullptr || t->data == nullptr) return kSuccess;
    if (t->device == TSHMEM_MOE_DEVICE_CPU) {
      std::free(t->data);
    } else {
      DeviceGuard guard;
      MOE_TRY(guard.enter(t->device));
      MOE_CUDA(cudaFreeAsync(t->data, stream));
    }
    t->data = nullptr;
    return kSuccess;
  });
}

}  // extern "C"
