# The GPU architectures CUDA code is built for, decided here and nowhere else. Included before
# enable_language(CUDA) by the root project and by python/CMakeLists.txt. In order:
#   1. -DTSHMEM_CUDA_ARCH=<list>              tshmem's override: "90", "90;100", "100a", "native", ...
#   2. -DCMAKE_CUDA_ARCHITECTURES=<list>      CMake's own variable (or its CUDAARCHS environment variable at the
#                                             first configure), used as given
#   3. the GPUs of this machine               the compute capabilities nvidia-smi reports (9.0 -> 90), once per
#                                             build folder
#   4. 90 (H100/H200)                         no GPU here: what CI builds; one architecture keeps its builds short
# The presets (CMakePresets.json) pass the environment variable TSHMEM_CUDA_ARCH as -DTSHMEM_CUDA_ARCH, so
# `TSHMEM_CUDA_ARCH=100 scripts/device-test.sh` builds for sm_100 without another option.
#
# Sets, in the including scope: CMAKE_CUDA_ARCHITECTURES (when 1, 3 or 4 decided) and TSHMEM_CUDA_ARCH_SOURCE
# (which rule decided). After enable_language(CUDA), tshmem_cuda_arch_record() prints the decision, sets
# TSHMEM_CUDA_ARCH_NUMBERS (90, 90a: no -real/-virtual, what nvcc -arch=sm_<n> takes) for the tests that compile
# CUDA programs by hand, and keeps them in the cache as TSHMEM_CUDA_ARCHITECTURES, where scripts that build
# outside CMake (scripts/nvshmem-examples.sh) read them from CMakeCache.txt.

set(TSHMEM_CUDA_ARCH "" CACHE STRING
  "GPU architectures to build CUDA code for (\"90\", \"90;100\", \"native\"); empty: the GPUs present, else 90")
set(TSHMEM_CUDA_ARCH_DEFAULT 90)

if(NOT DEFINED TSHMEM_CUDA_ARCH_SOURCE)  # a parent project (python/) may have decided already
  if(NOT TSHMEM_CUDA_ARCH STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES "${TSHMEM_CUDA_ARCH}")
    set(TSHMEM_CUDA_ARCH_SOURCE "TSHMEM_CUDA_ARCH")
  elseif(DEFINED CACHE{CMAKE_CUDA_ARCHITECTURES} OR DEFINED CMAKE_CUDA_ARCHITECTURES
         OR NOT "$ENV{CUDAARCHS}" STREQUAL "")
    set(TSHMEM_CUDA_ARCH_SOURCE "CMAKE_CUDA_ARCHITECTURES")
  else()
    if(NOT DEFINED CACHE{TSHMEM_CUDA_ARCH_DETECTED})
      set(detected "")
      find_program(TSHMEM_NVIDIA_SMI nvidia-smi)
      mark_as_advanced(TSHMEM_NVIDIA_SMI)
      if(TSHMEM_NVIDIA_SMI)
        execute_process(COMMAND "${TSHMEM_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                        OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 30)
        if(rc EQUAL 0)
          string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${caps}")
          foreach(cap IN LISTS caps)
            string(REPLACE "." "" arch "${cap}")
            list(APPEND detected ${arch})
          endforeach()
          list(REMOVE_DUPLICATES detected)
          list(SORT detected COMPARE NATURAL)
        endif()
      endif()
      set(TSHMEM_CUDA_ARCH_DETECTED "${detected}" CACHE INTERNAL "compute capabilities of the GPUs present at the first configure")
    endif()
    if(NOT "$CACHE{TSHMEM_CUDA_ARCH_DETECTED}" STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "$CACHE{TSHMEM_CUDA_ARCH_DETECTED}")
      set(TSHMEM_CUDA_ARCH_SOURCE "the GPUs of this machine")
    else()
      set(CMAKE_CUDA_ARCHITECTURES ${TSHMEM_CUDA_ARCH_DEFAULT})
      set(TSHMEM_CUDA_ARCH_SOURCE "the default: no GPU found")
    endif()
  endif()
endif()

# tshmem_cuda_arch_numbers(<out>): the architectures as nvcc's -arch=sm_<n> takes them (90, 90a), after
# enable_language(CUDA). "native" gives the GPUs CMake found; "all"/"all-major" give the first one CMake lists.
function(tshmem_cuda_arch_numbers out)
  set(numbers "")
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(arch STREQUAL "native")
      set(list "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
    elseif(arch STREQUAL "all")
      set(list "${CMAKE_CUDA_ARCHITECTURES_ALL}")
    elseif(arch STREQUAL "all-major")
      set(list "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
    else()
      set(list "${arch}")
    endif()
    foreach(item IN LISTS list)
      string(REGEX MATCH "^[0-9]+[a-z]?" number "${item}")
      if(number)
        list(APPEND numbers ${number})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES numbers)
  if(NOT numbers)
    set(numbers ${TSHMEM_CUDA_ARCH_DEFAULT})
  endif()
  set(${out} "${numbers}" PARENT_SCOPE)
endfunction()

# tshmem_cuda_arch_record(): after enable_language(CUDA); see the top of this file.
macro(tshmem_cuda_arch_record)
  tshmem_cuda_arch_numbers(TSHMEM_CUDA_ARCH_NUMBERS)
  set(TSHMEM_CUDA_ARCHITECTURES "${TSHMEM_CUDA_ARCH_NUMBERS}" CACHE INTERNAL
      "the architectures CUDA code is built for (numbers; scripts that call nvcc themselves read them)")
  message(STATUS "tshmem: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES} (${TSHMEM_CUDA_ARCH_SOURCE})")
endmacro()
