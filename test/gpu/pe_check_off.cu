// Compiled with TSHMEM_DEVICE_PE_CHECK=0 (and, as a second object, with 1): every device entry point
// instantiates, and the public C names keep their declared types (static_assert on signatures).
#include <type_traits>

#include "tshmem/device/tshmem_device.cuh"

static_assert(std::is_same_v<decltype(&tshmem_int_p), void (*)(int *, int, int)>);
static_assert(std::is_same_v<decltype(&tshmem_float_g), float (*)(const float *, int)>);
static_assert(std::is_same_v<decltype(&tshmem_putmem_block), void (*)(void *, const void *, size_t, int)>);
static_assert(std::is_same_v<decltype(&tshmem_int64_atomic_fetch_add), int64_t (*)(int64_t *, int64_t, int)>);
static_assert(
    std::is_same_v<decltype(&tshmem_uint64_atomic_compare_swap), uint64_t (*)(uint64_t *, uint64_t, uint64_t, int)>);
static_assert(std::is_same_v<decltype(&tshmem_signal_wait_until), uint64_t (*)(const uint64_t *, int, uint64_t)>);
static_assert(std::is_same_v<decltype(&tshmem_int32_wait_until), int32_t (*)(const int32_t *, int, int32_t)>);

__global__ void every_entry_point(char *buf, uint64_t *sig, int pe) {
  int *ints = reinterpret_cast<int *>(buf);
  tshmem_int_p(ints, 1, pe);
  ints[1] = tshmem_int_g(ints, pe);
  tshmem_char_put_nbi_warp(buf, buf + 64, 9, pe);
  tshmem_getmem_block(buf, buf + 128, 33, pe);
  tshmem_putmem_signal_nbi_block(buf, buf + 1, 17, sig, 1, TSHMEM_SIGNAL_ADD, pe);
  tshmem_uint32_atomic_fetch_or(reinterpret_cast<uint32_t *>(buf), 4u, pe);
  tshmem_longlong_atomic_inc(reinterpret_cast<long long *>(buf), pe);
  tshmem_double_atomic_set(reinterpret_cast<double *>(buf), 1.0, pe);
  tshmem_signal_op(sig, 3, TSHMEM_SIGNAL_SET, pe);
  tshmem_uint64_wait_until(sig, TSHMEM_CMP_LE, 7);
  tshmem_fence();
  tshmem_barrier_all_block();
  tshmem_sync_all_grid();
  ints[2] = tshmem::ptr(buf, pe) != nullptr;
}
