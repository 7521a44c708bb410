# Warnings on, and clean. tshmem_warnings() applies them to one target's own sources.
function(tshmem_warnings target)
  set(cxx_flags -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wswitch-enum -Wformat=2 -Wconversion -Wno-sign-conversion)
  if(TSHMEM_WERROR)
    list(APPEND cxx_flags -Werror)
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${cxx_flags}>)
  string(REPLACE ";" "," host_flags "-Wall,-Wextra,-Wno-unused-parameter")
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${host_flags}>)
endfunction()
