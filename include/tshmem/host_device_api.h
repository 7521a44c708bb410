/*
 * Which declaration a host API name gets. In CUDA units (nvcc) the names that also exist in kernels are
 * declared under the library's twin name tshmemi_host_<name>; tshmem/device/host_device_names.cuh then
 * defines tshmem_<name> as a static inline __host__ __device__ function. Elsewhere (C, C++) they are the
 * exported tshmem_<name>. TSHMEM_HOST_NAMES_ONLY keeps the plain host declarations in a CUDA unit.
 */
#ifndef TSHMEM_HOST_DEVICE_API_H
#define TSHMEM_HOST_DEVICE_API_H

#if defined(__CUDACC__) && !defined(TSHMEM_HOST_NAMES_ONLY)
#define TSHMEMI_HOST_DEVICE_NAMES 1
#define TSHMEMI_HD_NAME(name) tshmemi_host_##name
#else
#define TSHMEMI_HD_NAME(name) tshmem_##name
#endif

#endif /* TSHMEM_HOST_DEVICE_API_H */
