// What the two halves of tshmem._C share: raising the library's failures as the package's exception classes, and
// running a checked collective with the binding's note.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>
#include <string>

#include "tshmem/tshmem.h"

namespace tshmem_py {

namespace nb = nanobind;

/// Registers the exception classes, indexed by status (tshmem/_errors.py: BY_CODE).
void set_error_classes(nb::tuple classes);
/// The class registered for `status` (RuntimeError before registration).
PyObject *error_class(int status);
/// Raises the class registered for `status` with the library's message (tshmemx_last_error).
[[noreturn]] void raise_status(int status);

inline void check(int status) {
  if (status != TSHMEM_SUCCESS) raise_status(status);
}

/// For the C calls that return nothing (or a pointer): the last error decides.
inline void check_last() {
  const int code = tshmemx_last_error_code();
  if (code != TSHMEM_SUCCESS) raise_status(code);
}

template <class T>
inline T *ptr(uintptr_t p) {
  return reinterpret_cast<T *>(p);
}
inline tshmemx_stream_t stream_of(uintptr_t s) { return reinterpret_cast<tshmemx_stream_t>(s); }

/// Runs one collective call with its note (description, this PE's refusal; either may be null), drops a note the
/// call did not take, and returns its status (the call's own, else the last error), with the GIL released.
template <class F>
int run_noted(const char *description, const char *local_error, F &&call) {
  tshmemx_clear_last_error();
  int status = 0;
  {
    nb::gil_scoped_release release;
    if (description != nullptr || local_error != nullptr) tshmemx_note_next_collective(description, local_error);
    status = call();
    tshmemx_note_next_collective(nullptr, nullptr);  // a call that failed before its check leaves it
  }
  return status != 0 ? status : tshmemx_last_error_code();
}

using Note = std::optional<std::string>;  // None, or the text

/// run_noted, raising its failure.
template <class F>
void noted(const Note &description, const Note &local_error, F &&call) {
  const int status = run_noted(description ? description->c_str() : nullptr,
                               local_error ? local_error->c_str() : nullptr, static_cast<F &&>(call));
  if (status != 0) raise_status(status);
}

/// Defines the fast path's functions on the module (fast_path.cc).
void define_fast_path(nb::module_ &m);

}  // namespace tshmem_py
