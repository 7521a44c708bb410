# The UCX transport: built where pkg-config finds UCX >= 1.13 (TSHMEM_UCX=AUTO), required (ON) or left out (OFF).
# Without it the table's ucx row says why, auto takes mpi, and TSHMEM_REMOTE_TRANSPORT=ucx fails init naming it.
set(TSHMEM_UCX AUTO CACHE STRING "The UCX transport: AUTO (where pkg-config finds ucx >= 1.13), ON, OFF")
set(TSHMEM_UCX_ABSENT_REASON "")
if(TSHMEM_UCX STREQUAL "OFF")
  set(TSHMEM_UCX_ABSENT_REASON "this build was configured with -DTSHMEM_UCX=OFF")
else()
  if(TSHMEM_UCX STREQUAL "ON")
    pkg_check_modules(UCX REQUIRED IMPORTED_TARGET ucx>=1.13)
  else()
    pkg_check_modules(UCX IMPORTED_TARGET ucx>=1.13)
  endif()
  if(NOT UCX_FOUND)
    set(TSHMEM_UCX_ABSENT_REASON "this build found no UCX >= 1.13 (pkg-config ucx, Debian: libucx-dev)")
  endif()
endif()
if(TSHMEM_UCX_ABSENT_REASON STREQUAL "")
  set(TSHMEM_UCX_BUILT ON CACHE INTERNAL "the ucx transport is built (tests read it)")
  message(STATUS "tshmem: the ucx transport is built against UCX ${UCX_VERSION} (${UCX_LIBDIR})")
  list(APPEND TSHMEM_HOST_SOURCES
    transport/ucx/ucx_entry.cc
    transport/ucx/ucx_worker.cc
    transport/ucx/ucx_direct.cc
    transport/ucx/ucx_batches.cc
    transport/ucx/ucx_bulk_puts.cc
    transport/ucx/ucx_messenger.cc)
  list(APPEND TSHMEM_TRANSPORT_LIBS PkgConfig::UCX)
else()
  set(TSHMEM_UCX_BUILT OFF CACHE INTERNAL "the ucx transport is built (tests read it)")
  message(STATUS "tshmem: no ucx transport: ${TSHMEM_UCX_ABSENT_REASON}")
  list(APPEND TSHMEM_HOST_SOURCES transport/ucx/ucx_absent.cc)
  set_source_files_properties(transport/ucx/ucx_absent.cc PROPERTIES
    COMPILE_DEFINITIONS "TSHMEM_UCX_ABSENT_REASON=\"${TSHMEM_UCX_ABSENT_REASON}\"")
endif()
