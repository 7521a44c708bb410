# The UCX transport's row: not built yet in this tree.
list(APPEND TSHMEM_HOST_SOURCES transport/ucx/ucx_absent.cc)
set_source_files_properties(transport/ucx/ucx_absent.cc PROPERTIES
  COMPILE_DEFINITIONS "TSHMEM_UCX_ABSENT_REASON=\"this build has no UCX transport\"")
