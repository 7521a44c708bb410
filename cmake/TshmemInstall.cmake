# Installation: headers, libraries, tshmemConfig.cmake (components: moe) and tshmem.pc.
include(CMakePackageConfigHelpers)

install(TARGETS tshmem tshmem_device EXPORT tshmemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES include/tshmem/tshmem.h include/tshmem/tshmemx.h ${PROJECT_BINARY_DIR}/include/tshmem/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tshmem)
install(DIRECTORY device/tshmem/device DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tshmem
  FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
install(PROGRAMS scripts/tshmemrun DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT tshmemTargets NAMESPACE tshmem:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tshmem)
configure_package_config_file(cmake/tshmemConfig.cmake.in ${PROJECT_BINARY_DIR}/tshmemConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tshmem)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tshmemConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tshmemConfig.cmake ${PROJECT_BINARY_DIR}/tshmemConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tshmem)

configure_file(cmake/tshmem.pc.in ${PROJECT_BINARY_DIR}/tshmem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tshmem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
