# tshmem::nvshmem — NVSHMEM's nvshmem.h / nvshmemx.h mapped onto tshmem (include/nvshmem-compat): an NVSHMEM
# program builds unchanged with this target (no -rdc). Header-only over tshmem::tshmem and tshmem::device.
# The CUDA runtime is the program's own (nvcc links it), never added here: two runtimes in one process would
# each need their own device state.
add_library(tshmem_nvshmem INTERFACE)
add_library(tshmem::nvshmem ALIAS tshmem_nvshmem)
set_target_properties(tshmem_nvshmem PROPERTIES EXPORT_NAME nvshmem)
target_include_directories(tshmem_nvshmem INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include/nvshmem-compat>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/nvshmem-compat>)
target_link_libraries(tshmem_nvshmem INTERFACE tshmem tshmem_device)
