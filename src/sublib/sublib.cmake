# tshmem_sublib_target(<target> <export name>): what the sublibraries' libraries (tshmem_moe, tshmem_ep) share:
# symbols hidden but for their C API, position-independent code, C++17, their public header folder (include/
# beside the caller's CMakeLists.txt) and, privately, this folder (sublib_error.h). Included by path, so a
# sublibrary configured on its own finds it too.
function(tshmem_sublib_target target export_name)
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${export_name}
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
endfunction()

# tshmem_sublib_parts(): the sublibrary's tests (test/) and benchmark (perftest/), as the project's options ask.
macro(tshmem_sublib_parts)
  if(TSHMEM_BUILD_TESTS)
    add_subdirectory(test)
  endif()
  if(TSHMEM_BUILD_PERFTEST)
    add_subdirectory(perftest)
  endif()
endmacro()
