// The on-stream kernels of a team that spans nodes (coll_launch.h's CollLaunch::spanning): the grid forms of
// tshmem/device/impl/coll_spanning.cuh, called directly. Included by coll_kernels.cu inside its anonymous
// namespace, after pdl_enter: its on-node kernels are compiled without the spanning path
// (TSHMEMI_COLL_NO_SPANNING), so they carry none of its code or registers.
#pragma once

template <class T>
__global__ void span_reduce_kernel(CollLaunch a, tshmem::redop op) {
  pdl_enter();
  const int part = static_cast<int>(blockIdx.x), parts = static_cast<int>(gridDim.x);
  T *dst = static_cast<T *>(a.dst);
  const T *src = static_cast<const T *>(a.src);
  if (a.kind == CollKind::kAllreduce)
    coll_spanning::allreduce<T>(a.team, dst, src, a.count, op, part, parts, part, state());
  else
    coll_spanning::reduce_scatter<T>(a.team, dst, src, a.count, op, part, parts, part, state());
}

__global__ void span_move_kernel(CollLaunch a) {
  pdl_enter();
  const int part = static_cast<int>(blockIdx.x), parts = static_cast<int>(gridDim.x);
  switch (a.kind) {
    case CollKind::kFcollect:
      coll_spanning::move(coll_detail::move_kind::fcollect, a.team, a.dst, a.src, a.count, 0, part, parts, part,
                          state());
      break;
    case CollKind::kAlltoall:
      coll_spanning::move(coll_detail::move_kind::alltoall, a.team, a.dst, a.src, a.count, 0, part, parts, part,
                          state());
      break;
    case CollKind::kBroadcast:
      coll_spanning::move(coll_detail::move_kind::broadcast, a.team, a.dst, a.src, a.count, a.root, part, parts, part,
                          state());
      break;
    case CollKind::kBarrier: coll_spanning::barrier(a.team, part, "tshmem::coll::barrier_block", state()); break;
    case CollKind::kAllreduce:
    case CollKind::kReduceScatter: break;
  }
}
