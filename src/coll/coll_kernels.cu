// The kernels behind tshmemx_*_on_stream: one template over the element type for the reducing
// collectives (8 instantiations; the operator is a run-time argument, so new operators add no kernel) and one kernel
// for the byte moves and the barrier. The bodies are the device API's grid forms (tshmem/device/coll.cuh).
#include <mutex>

#include "coll/coll_launch.h"
#include "cuda/driver.h"
#define TSHMEMI_COLL_NO_SPANNING 1  // the kernels below are on-node; across nodes: coll_spanning_kernels.cuh
#include "tshmem/device/coll.cuh"

namespace tshmemi {
namespace {

tshmem::redop to_redop(tshmemx_redop_t op) {
  switch (op) {
    case TSHMEMX_OP_SUM: return tshmem::redop::sum;
    case TSHMEMX_OP_MIN: return tshmem::redop::min;
    case TSHMEMX_OP_MAX: return tshmem::redop::max;
    case TSHMEMX_OP_PROD: return tshmem::redop::prod;
    case TSHMEMX_OP_AND: return tshmem::redop::band;
    case TSHMEMX_OP_OR: return tshmem::redop::bor;
    case TSHMEMX_OP_XOR: return tshmem::redop::bxor;
    case TSHMEMX_NUM_OPS: break;
  }
  return tshmem::redop::sum;  // unreachable: coll_on_stream.cc checked the operator
}

/// Programmatic dependent launch, device side: wait until the previous grid on the stream has completed and
/// its memory is visible (a no-op when the launch was an ordinary one), then let the next grid launch early:
/// its blocks become resident and wait in turn. Every grid of the stream is complete before we touch memory.
__device__ __forceinline__ void pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <class T>
__global__ void reduce_kernel(CollLaunch a, tshmem::redop op) {
  pdl_enter();
  T *dst = static_cast<T *>(a.dst);
  const T *src = static_cast<const T *>(a.src);
  if (a.kind == CollKind::kAllreduce)
    tshmem::coll::allreduce_grid<T>(a.team, dst, src, a.count, op, a.two_shot);
  else
    tshmem::coll::reduce_scatter_grid<T>(a.team, dst, src, a.count, op);
}

__global__ void move_kernel(CollLaunch a) {
  pdl_enter();
  switch (a.kind) {
    case CollKind::kFcollect: tshmem::coll::fcollect_grid(a.team, a.dst, a.src, a.count); break;
    case CollKind::kAlltoall: tshmem::coll::alltoall_grid(a.team, a.dst, a.src, a.count); break;
    case CollKind::kBroadcast: tshmem::coll::broadcast_grid(a.team, a.dst, a.src, a.count, a.root); break;
    case CollKind::kBarrier: tshmem::coll::barrier_block(a.team); break;
    case CollKind::kAllreduce:
    case CollKind::kReduceScatter: break;
  }
}

#include "coll/coll_spanning_kernels.cuh"

/// One launch, ordinary or programmatic-dependent (see coll_launch.h).
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, bool early_launch, cudaStream_t stream,
                   Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = early_launch ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

template <class T>
cudaError_t launch_reduce(const CollLaunch &a, dim3 grid, dim3 block, bool early_launch, cudaStream_t stream) {
  return launch(a.spanning ? span_reduce_kernel<T> : reduce_kernel<T>, grid, block, early_launch, stream, a,
                to_redop(a.op));
}

}  // namespace

Status coll_launch(const CollLaunch &a, int blocks, int threads, bool early_launch, tshmemx_stream_t stream_handle) {
  const cudaStream_t stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const dim3 grid(static_cast<unsigned>(blocks)), block(static_cast<unsigned>(threads));
  cudaError_t rc = cudaSuccess;
  if (a.kind == CollKind::kAllreduce || a.kind == CollKind::kReduceScatter) {
    switch (a.dtype) {
      case TSHMEMX_DTYPE_FLOAT: rc = launch_reduce<float>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_HALF: rc = launch_reduce<__half>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_BFLOAT16: rc = launch_reduce<__nv_bfloat16>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_INT32: rc = launch_reduce<int32_t>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_INT64: rc = launch_reduce<int64_t>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_DOUBLE: rc = launch_reduce<double>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_UINT32: rc = launch_reduce<uint32_t>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_DTYPE_UINT64: rc = launch_reduce<uint64_t>(a, grid, block, early_launch, stream); break;
      case TSHMEMX_NUM_DTYPES: return set_error(TSHMEM_ERR_INTERNAL, "coll_launch: unchecked dtype");
    }
  } else {
    rc = launch(a.spanning ? span_move_kernel : move_kernel, grid, block, early_launch, stream, a);
  }
  if (rc != cudaSuccess) return cuda_error(rc, "collective kernel launch", __FILE__, __LINE__);
  return TSHMEM_SUCCESS;
}

Status coll_run_blocking(const char *call, Status (*launch)(void *arg, tshmemx_stream_t stream), void *arg) {
  int device = 0;
  cudaError_t rc = cudaGetDevice(&device);
  if (rc != cudaSuccess) return cuda_error(rc, call, __FILE__, __LINE__);
  // One internal stream per device, made once and kept for the process (a stream is cheap; destroying it at
  // finalize would race a host collective of another thread under TSHMEM_THREAD_MULTIPLE).
  constexpr int kMaxDevices = 64;
  static std::mutex streams_mutex;
  static cudaStream_t streams[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices)
    return set_error(TSHMEM_ERR_INTERNAL, "%s: device %d beyond the %d internal streams", call, device, kMaxDevices);
  cudaStream_t stream = nullptr;
  {
    const std::lock_guard<std::mutex> lock(streams_mutex);
    if (streams[device] == nullptr) {
      rc = cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking);
      if (rc != cudaSuccess) return cuda_error(rc, call, __FILE__, __LINE__);
    }
    stream = streams[device];
  }
  rc = cudaDeviceSynchronize();  // src written by earlier kernels on any stream is complete
  if (rc != cudaSuccess) return cuda_error(rc, call, __FILE__, __LINE__);
  TSHMEM_CHECK(launch(arg, reinterpret_cast<tshmemx_stream_t>(stream)));
  rc = cudaStreamSynchronize(stream);
  if (rc != cudaSuccess) return cuda_error(rc, call, __FILE__, __LINE__);
  return TSHMEM_SUCCESS;
}

}  // namespace tshmemi
