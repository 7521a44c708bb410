# Installation: headers, libraries, tshmemConfig.cmake (components: moe, ep, nvshmem), tshmem.pc and tshmem-nvshmem.pc.
include(CMakePackageConfigHelpers)

# libtshmem_device.a (with CUDA): the device state of -rdc programs, which tshmem::device links for them.
set(tshmem_install_targets tshmem tshmem_device tshmem_nvshmem)
set(TSHMEM_PC_DEVICE_LIBS "")
if(TARGET tshmem_device_state)
  list(APPEND tshmem_install_targets tshmem_device_state)
  set(TSHMEM_PC_DEVICE_LIBS " -ltshmem_device")  # tshmem.pc: only -rdc device links take anything from it
endif()
install(TARGETS ${tshmem_install_targets} EXPORT tshmemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES include/tshmem/tshmem.h include/tshmem/tshmemx.h include/tshmem/host_device_api.h include/tshmem/tshmemx_typed.h
  include/tshmem/tshmemx_launch.h ${PROJECT_BINARY_DIR}/include/tshmem/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tshmem)
# <prefix>/include/tshmem/device/ from both roots: the device API (device/) and the C names over it that
# include the C API (include/tshmem/device/: tshmem_device.cuh, c_api.cuh, c_coll.cuh, host_device_names.cuh).
install(DIRECTORY device/tshmem/device include/tshmem/device DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tshmem
  FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
install(DIRECTORY include/nvshmem-compat/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nvshmem-compat
  FILES_MATCHING PATTERN "*.h")
install(PROGRAMS scripts/tshmemrun DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT tshmemTargets NAMESPACE tshmem:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tshmem)
configure_package_config_file(cmake/tshmemConfig.cmake.in ${PROJECT_BINARY_DIR}/tshmemConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tshmem)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tshmemConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tshmemConfig.cmake ${PROJECT_BINARY_DIR}/tshmemConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tshmem)

configure_file(cmake/tshmem.pc.in ${PROJECT_BINARY_DIR}/tshmem.pc @ONLY)
configure_file(cmake/tshmem-nvshmem.pc.in ${PROJECT_BINARY_DIR}/tshmem-nvshmem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tshmem.pc ${PROJECT_BINARY_DIR}/tshmem-nvshmem.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
