# Run as: cmake -DDEVICE_DIR=<repo>/device/tshmem/device [-DC_NAMES_DIR=<repo>/include/tshmem/device]
#               -P check_heap_base.cmake
cmake_minimum_required(VERSION 3.25)
# The one remote-address function is the only device code that reads heap_base: the word may appear only in
# state_types.h (the field), remote_ptr.cuh (its documentation) and impl/remote_ptr.cuh (the body). The C names
# over the device API (C_NAMES_DIR: tshmem_device.cuh, c_api.cuh, ...) may not read it at all.
file(GLOB_RECURSE headers RELATIVE "${DEVICE_DIR}" "${DEVICE_DIR}/*")
set(allowed "state_types.h;remote_ptr.cuh;impl/remote_ptr.cuh")
set(files "")
foreach(header IN LISTS headers)
  if(NOT header IN_LIST allowed)
    list(APPEND files "${DEVICE_DIR}/${header}")
  endif()
endforeach()
if(C_NAMES_DIR)
  file(GLOB_RECURSE c_names "${C_NAMES_DIR}/*")
  list(APPEND files ${c_names})
endif()
set(bad "")
foreach(file IN LISTS files)
  file(STRINGS "${file}" hits REGEX "heap_base")
  foreach(line IN LISTS hits)
    # own_heap_base() (the own slot of the peer table) is a different name.
    string(REGEX REPLACE "own_heap_base" "" stripped "${line}")
    if(stripped MATCHES "heap_base")
      list(APPEND bad "${file}: ${line}")
    endif()
  endforeach()
endforeach()
# Inside impl/remote_ptr.cuh only heap_offset_of() reads it (one read): rebase(), translate_or_null() and the
# off-node proxy's requests all go through it.
file(STRINGS "${DEVICE_DIR}/impl/remote_ptr.cuh" body REGEX "st\\.heap_base")
list(LENGTH body reads)
if(NOT reads EQUAL 1)
  list(APPEND bad "impl/remote_ptr.cuh: expected 1 read of st.heap_base (heap_offset_of), found ${reads}")
endif()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "heap_base used outside the remote-address function:\n  ${text}")
endif()
message(STATUS "heap_base confined to the remote-address function (${reads} reads)")
