# NVSHMEM for the perftest twins (design.md: "Benchmarks measure against peers in the same run").
# Found from -DTSHMEM_NVSHMEM_HOME=<dir with include/ and lib/>, else from the Python wheel
# (nvidia-nvshmem-cu13: <site-packages>/nvidia/nvshmem). The wheel ships libnvshmem_host.so.3 without an
# unversioned link, so the build makes one; device code links libnvshmem_device.a, which needs -rdc.
# Result: TSHMEM_PERF_HAVE_NVSHMEM and the INTERFACE target tshmem_perf_nvshmem.
set(TSHMEM_PERF_HAVE_NVSHMEM OFF)
if(NOT TSHMEM_HAVE_CUDA)
  return()
endif()

set(nvshmem_home "${TSHMEM_NVSHMEM_HOME}")
if(NOT nvshmem_home)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND ${Python3_EXECUTABLE} -c
        "import site; print(';'.join(site.getsitepackages() + [site.getusersitepackages()]))"
      OUTPUT_VARIABLE nvshmem_sites OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE nvshmem_rc ERROR_QUIET)
    if(nvshmem_rc EQUAL 0)
      foreach(site IN LISTS nvshmem_sites)
        if(EXISTS "${site}/nvidia/nvshmem/include/nvshmem.h")
          set(nvshmem_home "${site}/nvidia/nvshmem")
          break()
        endif()
      endforeach()
    endif()
  endif()
endif()
if(NOT nvshmem_home)
  message(STATUS "tshmem perftest: NVSHMEM not found (set TSHMEM_NVSHMEM_HOME or install nvidia-nvshmem-cu13): "
                 "no NVSHMEM twins")
  return()
endif()

set(nvshmem_host_lib "")
foreach(candidate libnvshmem_host.so libnvshmem_host.so.3)
  if(EXISTS "${nvshmem_home}/lib/${candidate}")
    set(nvshmem_host_lib "${nvshmem_home}/lib/${candidate}")
    break()
  endif()
endforeach()
if(NOT EXISTS "${nvshmem_home}/include/nvshmem.h" OR NOT nvshmem_host_lib
   OR NOT EXISTS "${nvshmem_home}/lib/libnvshmem_device.a")
  message(WARNING "tshmem perftest: ${nvshmem_home} lacks include/nvshmem.h, lib/libnvshmem_host.so(.3) or "
                  "lib/libnvshmem_device.a: no NVSHMEM twins")
  return()
endif()

# The unversioned name the linker wants, in the build tree (never in the NVSHMEM install).
set(nvshmem_link_dir "${PROJECT_BINARY_DIR}/nvshmem-link")
file(MAKE_DIRECTORY "${nvshmem_link_dir}")
file(CREATE_LINK "${nvshmem_host_lib}" "${nvshmem_link_dir}/libnvshmem_host.so" SYMBOLIC)

add_library(tshmem_perf_nvshmem INTERFACE)
target_include_directories(tshmem_perf_nvshmem SYSTEM INTERFACE "${nvshmem_home}/include")
# NVSHMEM's headers use libcu++ (<cuda/std/...>), which nvcc finds by itself and a host compiler does not.
foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  if(EXISTS "${dir}/cccl/cuda/std")
    target_include_directories(tshmem_perf_nvshmem SYSTEM INTERFACE "${dir}/cccl")
  endif()
endforeach()
target_link_directories(tshmem_perf_nvshmem INTERFACE "${nvshmem_link_dir}" "${nvshmem_home}/lib")
target_link_libraries(tshmem_perf_nvshmem INTERFACE nvshmem_host "${nvshmem_home}/lib/libnvshmem_device.a")
# Where the MPI bootstrap plugin lives: the twins default NVSHMEM_BOOTSTRAP_MPI_PLUGIN to it.
target_compile_definitions(tshmem_perf_nvshmem INTERFACE TSHMEM_PERF_NVSHMEM_LIB_DIR="${nvshmem_home}/lib")
set(TSHMEM_PERF_HAVE_NVSHMEM ON)
set(TSHMEM_PERF_NVSHMEM_LIB_DIR "${nvshmem_home}/lib")
message(STATUS "tshmem perftest: NVSHMEM twins against ${nvshmem_home}")
