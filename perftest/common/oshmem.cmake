# Open MPI's OpenSHMEM (OSHMEM) for the host benchmark's twin (design.md: "Benchmarks measure against peers in
# the same run"). Found through its compiler wrapper, oshcc (Debian: openmpi-bin; shmem.h and liboshmem come
# with libopenmpi-dev): the flags are the wrapper's own (--showme:compile / --showme:link), so the twin is built
# exactly as `oshcc` would build it, with this project's C++ compiler. Nothing is downloaded.
# Result: TSHMEM_PERF_HAVE_OSHMEM, TSHMEM_PERF_OSHMEM_REASON (why not) and the INTERFACE target tshmem_perf_oshmem.
set(TSHMEM_PERF_HAVE_OSHMEM OFF)
set(TSHMEM_PERF_OSHMEM_REASON "")
find_program(TSHMEM_OSHCC oshcc)
if(NOT TSHMEM_OSHCC)
  set(TSHMEM_PERF_OSHMEM_REASON "no oshcc on the PATH (Open MPI's OpenSHMEM: Debian's openmpi-bin and libopenmpi-dev)")
else()
  execute_process(COMMAND ${TSHMEM_OSHCC} --showme:compile OUTPUT_VARIABLE oshmem_cflags
    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE oshmem_rc_c ERROR_QUIET)
  execute_process(COMMAND ${TSHMEM_OSHCC} --showme:link OUTPUT_VARIABLE oshmem_ldflags
    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE oshmem_rc_l ERROR_QUIET)
  if(NOT oshmem_rc_c EQUAL 0 OR NOT oshmem_rc_l EQUAL 0)
    set(TSHMEM_PERF_OSHMEM_REASON "${TSHMEM_OSHCC} --showme failed (not Open MPI's wrapper?)")
  else()
    separate_arguments(oshmem_cflags UNIX_COMMAND "${oshmem_cflags}")
    separate_arguments(oshmem_ldflags UNIX_COMMAND "${oshmem_ldflags}")
    set(oshmem_includes "")
    foreach(flag IN LISTS oshmem_cflags)
      if(flag MATCHES "^-I(.+)")
        list(APPEND oshmem_includes "${CMAKE_MATCH_1}")
      endif()
    endforeach()
    # Libraries go after the objects (as-needed linking drops a library named before its users); the rest
    # (-L, -Wl,...) are link options.
    set(oshmem_libs "")
    set(oshmem_link_options "")
    foreach(flag IN LISTS oshmem_ldflags)
      if(flag MATCHES "^-l")
        list(APPEND oshmem_libs "${flag}")
      else()
        list(APPEND oshmem_link_options "${flag}")
      endif()
    endforeach()
    find_file(TSHMEM_OSHMEM_HEADER shmem.h PATHS ${oshmem_includes} NO_DEFAULT_PATH)
    if(NOT TSHMEM_OSHMEM_HEADER)
      set(TSHMEM_PERF_OSHMEM_REASON "oshcc found, but no shmem.h in its include path (${oshmem_includes}): install "
        "libopenmpi-dev")
    else()
      # The wrapper's library flags, checked by linking a program that calls shmem_init (liboshmem may be absent).
      set(probe_dir ${CMAKE_CURRENT_BINARY_DIR}/oshmem-probe)
      file(WRITE ${probe_dir}/probe.cc "#include <shmem.h>\nint main() { shmem_init(); shmem_finalize(); return 0; }\n")
      try_compile(oshmem_links ${probe_dir}/build SOURCES ${probe_dir}/probe.cc
        COMPILE_DEFINITIONS ${oshmem_cflags} LINK_OPTIONS ${oshmem_link_options} LINK_LIBRARIES ${oshmem_libs}
        OUTPUT_VARIABLE oshmem_probe_log)
      if(NOT oshmem_links)
        set(TSHMEM_PERF_OSHMEM_REASON "a program calling shmem_init does not build with oshcc's flags (${oshmem_ldflags})")
      else()
        set(TSHMEM_PERF_HAVE_OSHMEM ON)
        add_library(tshmem_perf_oshmem INTERFACE)
        target_include_directories(tshmem_perf_oshmem SYSTEM INTERFACE ${oshmem_includes})
        target_link_options(tshmem_perf_oshmem INTERFACE ${oshmem_link_options})
        target_link_libraries(tshmem_perf_oshmem INTERFACE ${oshmem_libs})
        target_compile_definitions(tshmem_perf_oshmem INTERFACE TSHMEM_PERF_OSHMEM=1)
      endif()
    endif()
  endif()
endif()
# scripts/oshmem-compare.sh reads from oshmem_twin.txt why there is no twin.
if(TSHMEM_PERF_HAVE_OSHMEM)
  message(STATUS "tshmem perftest: Open MPI's OpenSHMEM found (${TSHMEM_OSHCC}): the host twin oshmem_host_shmem is built")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/oshmem_twin.txt "built with ${TSHMEM_OSHCC}'s flags\n")
else()
  message(STATUS "tshmem perftest: no OpenSHMEM twin: ${TSHMEM_PERF_OSHMEM_REASON}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/oshmem_twin.txt "not built: ${TSHMEM_PERF_OSHMEM_REASON}\n")
endif()
