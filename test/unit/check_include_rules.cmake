# Run as: cmake -DSOURCE_DIR=<repository> -P check_include_rules.cmake
# The include rules of docs/architecture.md ("Include rules", "The layers of src/"), checked on the sources:
#   1. nothing under device/ includes a header that lives under include/ (the C API depends on the device API's
#      layouts, never the other way round: no cycle between the two public roots);
#   2. no header of src/ includes context.h, and only the top layer's .cc files do (src/*.cc and src/api/);
#   3. a header of src/ includes headers of its own row or of earlier rows only;
#   4. src/moe/ includes tshmem/moe.h and its own files only, and no MPI.
cmake_minimum_required(VERSION 3.25)
set(bad "")

# includes(<file> <out>): the quoted #include names of a file.
function(includes file out)
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(line MATCHES "#[ \t]*include[ \t]*<([^>]+)>")
      list(APPEND names "<${CMAKE_MATCH_1}>")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# 1. device/ never includes include/.
file(GLOB_RECURSE device_files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/device/*.h" "${SOURCE_DIR}/device/*.cuh")
foreach(f IN LISTS device_files)
  includes("${SOURCE_DIR}/${f}" names)
  foreach(name IN LISTS names)
    if(EXISTS "${SOURCE_DIR}/include/${name}")
      list(APPEND bad "${f} includes ${name}, which lives in include/ (device/ must not depend on include/)")
    endif()
  endforeach()
endforeach()

# Rows of src/ (docs/architecture.md): a folder, or a top-level header; src/api/ belongs to the top row.
set(rows common bootstrap topo base mem cuda transport heap state coll nvls top)
function(row_of rel out)
  if(rel MATCHES "^api/")
    set(${out} top PARENT_SCOPE)
  elseif(rel MATCHES "^([a-z_]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(rel MATCHES "^(env|env_defs|init_steps|init_step_list)\\.h$")
    set(${out} base PARENT_SCOPE)
  else()
    set(${out} top PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE src_files RELATIVE "${SOURCE_DIR}/src" "${SOURCE_DIR}/src/*.h" "${SOURCE_DIR}/src/*.cuh"
     "${SOURCE_DIR}/src/*.cc" "${SOURCE_DIR}/src/*.cu")
foreach(f IN LISTS src_files)
  includes("${SOURCE_DIR}/src/${f}" names)
  row_of("${f}" row)
  if(row STREQUAL "moe")
    # 4. src/moe stands alone.
    foreach(name IN LISTS names)
      if(name MATCHES "^<mpi" OR (name MATCHES "^tshmem/" AND NOT name STREQUAL "tshmem/moe.h")
         OR EXISTS "${SOURCE_DIR}/src/${name}" AND NOT name MATCHES "^moe/")
        list(APPEND bad "src/${f} includes ${name} (src/moe/ includes tshmem/moe.h and its own files only)")
      endif()
    endforeach()
    continue()
  endif()
  set(header FALSE)
  if(f MATCHES "\\.(h|cuh)$")
    set(header TRUE)
  endif()
  list(FIND rows "${row}" row_index)
  foreach(name IN LISTS names)
    if(name STREQUAL "context.h")
      # 2. context.h: the top layer's .cc files only (init, the entry points).
      if(header OR NOT row STREQUAL "top")
        list(APPEND bad "src/${f} includes context.h (only the top layer's .cc files may: src/*.cc, src/api/)")
      endif()
      continue()
    endif()
    if(NOT header OR NOT EXISTS "${SOURCE_DIR}/src/${name}")
      continue()
    endif()
    # 3. headers: own row or earlier rows.
    row_of("${name}" target)
    list(FIND rows "${target}" target_index)
    if(target_index GREATER row_index)
      list(APPEND bad "src/${f} (row ${row}) includes ${name} (row ${target}, later)")
    endif()
  endforeach()
endforeach()

if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "include rules broken (docs/architecture.md):\n  ${text}")
endif()
list(LENGTH device_files n_device)
list(LENGTH src_files n_src)
message(STATUS "include rules hold: ${n_device} device headers, ${n_src} files of src/")
