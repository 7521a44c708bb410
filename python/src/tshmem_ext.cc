// tshmem._C: the C API of libtshmem for the Python package (tshmem/__init__.py), without libtorch. Pointers and
// streams cross as Python ints; the Python layer reads tensors through their attributes and allocates nothing
// itself. Arrays over memory that is not this PE's heap (peer and multicast views) are made here, through DLPack
// (nanobind's ndarray), as numpy arrays or torch tensors that keep a Python owner alive; arrays over this PE's heap
// and the plain case of the hot calls are fast_path.cc's.
//
// Every failing call raises the exception class registered for its status with the library's message
// (tshmemx_last_error). Blocking calls release the GIL; the bootstrap callbacks of init(group=...) take it back.
#include <mpi.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ext_common.h"
#include "tshmem/tshmem.h"

namespace nb = nanobind;
using namespace tshmem_py;

namespace tshmem_py {

namespace {
nb::object *g_errors = nullptr;  // tuple of exception classes, indexed by status
}  // namespace

void set_error_classes(nb::tuple classes) {
  if (g_errors == nullptr) g_errors = new nb::object();  // for the process: exceptions outlive the module
  *g_errors = classes;
}

PyObject *error_class(int status) {
  if (g_errors != nullptr && status >= 0 && static_cast<size_t>(status) < nb::len(*g_errors))
    return (*g_errors)[static_cast<size_t>(status)].ptr();
  return PyExc_RuntimeError;
}

[[noreturn]] void raise_status(int status) {
  PyErr_SetString(error_class(status), tshmemx_last_error());
  throw nb::python_error();
}

}  // namespace tshmem_py

namespace {

// ---- init over Python callables (tshmem.init(group=...)) ------------------------------------------------------

struct Callbacks {
  nb::object allgather;  // (bytes) -> bytes of n_pes * len
  nb::object barrier;    // () -> None
  int n_pes = 0;
  nb::object error;  // the first exception a callable raised, re-raised by init
};
Callbacks *g_callbacks = nullptr;  // lives from init(group=...) to finalize
bool g_started_mpi = false;        // the package called MPI_Init_thread (and ends MPI at exit)

void remember(Callbacks *cb) {
  nb::python_error e;  // takes the pending exception
  if (!cb->error.is_valid() || cb->error.is_none()) cb->error = nb::borrow(e.value());
}

int py_allgather(const void *in, void *out, size_t bytes, void *user) {
  auto *cb = static_cast<Callbacks *>(user);
  nb::gil_scoped_acquire gil;
  try {
    nb::bytes data(static_cast<const char *>(in), bytes);
    nb::object got = cb->allgather(data);
    char *buffer = nullptr;
    Py_ssize_t length = 0;
    if (PyBytes_AsStringAndSize(got.ptr(), &buffer, &length) != 0) throw nb::python_error();
    if (static_cast<size_t>(length) != bytes * static_cast<size_t>(cb->n_pes)) {
      PyErr_Format(PyExc_ValueError,
                   "tshmem.init: the group's all-gather returned %zd bytes; expected %zu (%d PEs x %zu)", length,
                   bytes * static_cast<size_t>(cb->n_pes), cb->n_pes, bytes);
      throw nb::python_error();
    }
    std::memcpy(out, buffer, static_cast<size_t>(length));
    return 0;
  } catch (nb::python_error &e) {
    e.restore();
    remember(cb);
    return 1;
  }
}

int py_barrier(void *user) {
  auto *cb = static_cast<Callbacks *>(user);
  nb::gil_scoped_acquire gil;
  try {
    cb->barrier();
    return 0;
  } catch (nb::python_error &e) {
    e.restore();
    remember(cb);
    return 1;
  }
}

// ---- arrays over the heap ---------------------------------------------------------------------------------------

/// An array of `shape` (strides in elements, or C order when empty) at `address`, as a numpy array or a torch
/// tensor; `owner` stays alive as long as the array (or any view of it) does.
nb::object make_array(uintptr_t address, const std::vector<size_t> &shape, const std::vector<int64_t> &strides,
                      int code, int bits, int device_type, int device_id, nb::handle owner, bool torch) {
  nb::dlpack::dtype dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  const int64_t *s = strides.empty() ? nullptr : strides.data();
  if (torch)
    return nb::ndarray<nb::pytorch>(ptr<void>(address), shape.size(), shape.data(), owner, s, dtype, device_type,
                                    device_id)
        .cast();
  return nb::ndarray<nb::numpy>(ptr<void>(address), shape.size(), shape.data(), owner, s, dtype, device_type, device_id)
      .cast();
}

}  // namespace

NB_MODULE(_C, m) {
  m.def("_register", [](nb::tuple errors) { set_error_classes(errors); });
  // Every failure becomes an exception that carries the library's message: that is the report (the library
  // logs it at info level, TSHMEM_DEBUG=info, instead of printing a warning per PE beside it).
  tshmemi_errors_reported_by_caller(1);
  define_fast_path(m);
  m.def("num_status", []() { return static_cast<int>(TSHMEM_NUM_STATUS); });
  m.def("strerror", [](int code) { return std::string(tshmemx_strerror(code)); });
  m.def("last_error", []() { return std::string(tshmemx_last_error()); });

  // ---- init and queries
  // MPI cannot start twice in one process, and tshmem_finalize ends the MPI that tshmem_init started: the package
  // starts MPI itself (MPI_THREAD_MULTIPLE, as tshmem_init would), so that init and finalize may alternate, and
  // ends it at exit (finalize_mpi, from an atexit hook after the last finalize).
  m.def("init", []() {
    int rc = 0;
    {
      nb::gil_scoped_release release;
      int initialized = 0, finalized = 0, provided = 0;
      MPI_Initialized(&initialized);
      MPI_Finalized(&finalized);
      if (!initialized && !finalized && MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) == 0)
        g_started_mpi = true;
      rc = tshmem_init();
    }
    check(rc);
  });
  m.def("finalize_mpi", []() {  // only an MPI the package started (mpi4py's, say, is its owner's to end)
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (g_started_mpi && !finalized && tshmem_my_pe() < 0) MPI_Finalize();
  });
  m.def("init_callbacks", [](int rank, int n_pes, nb::object allgather, nb::object barrier, bool nvshmem_env) {
    auto *cb = new Callbacks{allgather, barrier, n_pes, nb::none()};
    tshmemx_bootstrap_callbacks_t c = TSHMEMX_BOOTSTRAP_CALLBACKS_INITIALIZER;
    c.rank = rank;
    c.n_pes = n_pes;
    c.allgather = py_allgather;
    c.barrier = py_barrier;
    c.user = cb;
    int rc = 0;
    {
      nb::gil_scoped_release release;
      rc = tshmemx_init_callbacks(nvshmem_env ? TSHMEMX_INIT_NVSHMEM_ENV : 0u, &c);
    }
    if (rc != 0) {
      nb::object cause = cb->error;
      delete cb;
      if (cause.is_valid() && !cause.is_none()) {
        // The group's own exception, with tshmem's message in its notes.
        PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(cause.ptr())), cause.ptr());
        throw nb::python_error();
      }
      raise_status(rc);
    }
    delete g_callbacks;  // a previous job's (finalized)
    g_callbacks = cb;
  });
  m.def("finalize", []() {
    tshmemx_clear_last_error();
    {
      nb::gil_scoped_release release;
      tshmem_finalize();
    }
    const int code = tshmemx_last_error_code();
    if (tshmem_my_pe() < 0) {  // done: the callbacks are no longer called
      delete g_callbacks;
      g_callbacks = nullptr;
    }
    if (code != TSHMEM_SUCCESS) raise_status(code);
  });
  m.def("my_pe", []() { return tshmem_my_pe(); });
  m.def("n_pes", []() { return tshmem_n_pes(); });
  m.def("local_pe", []() { return tshmemx_local_pe(); });
  m.def("local_n_pes", []() { return tshmemx_local_n_pes(); });
  m.def("cuda_device", []() { return tshmemx_cuda_device(); });
  m.def("backend_name", []() -> nb::object {
    const char *name = tshmemx_backend_name();
    return name ? nb::object(nb::str(name)) : nb::none();
  });
  m.def("heap_base", []() { return reinterpret_cast<uintptr_t>(tshmemx_heap_base()); });
  m.def("heap_size", []() { return static_cast<uint64_t>(tshmemx_heap_size()); });
  m.def("mc_status", []() -> nb::object {
    const char *s = tshmemx_mc_status();
    return s ? nb::object(nb::str(s)) : nb::none();
  });
  m.def("pe_accessible", [](int pe) { return tshmem_pe_accessible(pe) != 0; });
  m.def("info", [](bool json) {
    std::string text(tshmemx_info(json ? 1 : 0, nullptr, 0) + 1, '\0');
    text.resize(tshmemx_info(json ? 1 : 0, text.data(), text.size()));
    return text;
  });
  m.def("peer_bases", []() {
    std::vector<uintptr_t> bases;
    const int n = tshmem_n_pes();
    for (int pe = 0; pe < n; ++pe) bases.push_back(reinterpret_cast<uintptr_t>(tshmemx_peer_base(pe)));
    return bases;
  });

  // ---- teams
  m.def("team_my_pe", [](int team) { return tshmem_team_my_pe(team); });
  m.def("team_n_pes", [](int team) { return tshmem_team_n_pes(team); });
  m.def("team_translate_pe", [](int src, int pe, int dest) { return tshmem_team_translate_pe(src, pe, dest); });
  m.def("team_split_strided", [](int parent, int start, int stride, int size, Note d, Note e) {
    tshmem_team_t team = TSHMEM_TEAM_INVALID;
    noted(d, e, [&] {
      return tshmem_team_split_strided(parent, start, stride, size, nullptr, 0, &team) == 0 ? 0
                                                                                            : tshmemx_last_error_code();
    });
    return static_cast<int>(team);
  });
  m.def("team_destroy", [](int team) {
    tshmemx_clear_last_error();
    tshmem_team_destroy(team);
    check_last();
  });

  // ---- the heap
  // kind: 0 malloc, 1 calloc, 2 align. Returns the address (0 for size 0).
  m.def("alloc", [](int kind, size_t size, size_t alignment, Note d, Note e) {
    void *p = nullptr;
    noted(d, e, [&] {
      p = kind == 1 ? tshmem_calloc(1, size) : kind == 2 ? tshmem_align(alignment, size) : tshmem_malloc(size);
      return 0;
    });
    return reinterpret_cast<uintptr_t>(p);
  });
  m.def("free", [](uintptr_t p, Note d, Note e) {
    noted(d, e, [&] {
      tshmem_free(ptr<void>(p));
      return 0;
    });
  });
  m.def("ptr_checked", [](uintptr_t p, size_t bytes, int pe) {
    void *out = nullptr;
    check(tshmemx_ptr_checked(ptr<void>(p), bytes, pe, &out));
    return reinterpret_cast<uintptr_t>(out);
  });
  m.def("mc_ptr_checked", [](int team, uintptr_t p, size_t bytes) {
    void *out = nullptr;
    check(tshmemx_mc_ptr_checked(team, ptr<void>(p), bytes, &out));
    return reinterpret_cast<uintptr_t>(out);
  });
  // A buffer's address, bytes and C-contiguity, through the buffer protocol (numpy's __array_interface__ builds a
  // dict per read: several times slower on the hot path of every call).
  m.def("buffer_info", [](nb::handle obj) {
    Py_buffer b;
    if (PyObject_GetBuffer(obj.ptr(), &b, PyBUF_RECORDS_RO) != 0) throw nb::python_error();
    const uintptr_t address = reinterpret_cast<uintptr_t>(b.buf);
    const Py_ssize_t bytes = b.len;
    const bool contiguous = PyBuffer_IsContiguous(&b, 'C') != 0;
    PyBuffer_Release(&b);
    return nb::make_tuple(address, bytes, contiguous);
  });
  m.def("array", [](uintptr_t address, std::vector<size_t> shape, std::vector<int64_t> strides, int code, int bits,
                    int device_type, int device_id, nb::handle owner, bool torch) {
    return make_array(address, shape, strides, code, bits, device_type, device_id, owner, torch);
  });

  // ---- RMA, signals, ordering (host-blocking, and on a stream)
  m.def("putmem", [](uintptr_t dst, uintptr_t src, size_t n, int pe) {
    int rc = 0;
    {
      nb::gil_scoped_release release;
      rc = tshmem_putmem(ptr<void>(dst), ptr<const void>(src), n, pe);
    }
    check(rc);
  });
  m.def("getmem", [](uintptr_t dst, uintptr_t src, size_t n, int pe) {
    int rc = 0;
    {
      nb::gil_scoped_release release;
      rc = tshmem_getmem(ptr<void>(dst), ptr<const void>(src), n, pe);
    }
    check(rc);
  });
  m.def("putmem_on_stream", [](uintptr_t dst, uintptr_t src, size_t n, int pe, uintptr_t s) {
    check(tshmemx_putmem_on_stream(ptr<void>(dst), ptr<const void>(src), n, pe, stream_of(s)));
  });
  m.def("getmem_on_stream", [](uintptr_t dst, uintptr_t src, size_t n, int pe, uintptr_t s) {
    check(tshmemx_getmem_on_stream(ptr<void>(dst), ptr<const void>(src), n, pe, stream_of(s)));
  });
  m.def("putmem_signal", [](uintptr_t dst, uintptr_t src, size_t n, uintptr_t sig, uint64_t value, int op, int pe) {
    int rc = 0;
    {
      nb::gil_scoped_release release;
      rc = tshmemx_putmem_signal(ptr<void>(dst), ptr<const void>(src), n, ptr<uint64_t>(sig), value, op, pe);
    }
    check(rc);
  });
  m.def("putmem_signal_on_stream",
        [](uintptr_t dst, uintptr_t src, size_t n, uintptr_t sig, uint64_t value, int op, int pe, uintptr_t s) {
          check(tshmemx_putmem_signal_on_stream(ptr<void>(dst), ptr<const void>(src), n, ptr<uint64_t>(sig), value, op,
                                                pe, stream_of(s)));
        });
  m.def("signal_wait_until", [](uintptr_t sig, int cmp, uint64_t value, int64_t timeout_ms) {
    uint64_t found = 0;
    int rc = 0;
    {
      nb::gil_scoped_release release;
      rc = tshmemx_signal_wait_until(ptr<uint64_t>(sig), cmp, value, timeout_ms, &found);
    }
    check(rc);
    return found;
  });
  m.def("signal_wait_until_on_stream", [](uintptr_t sig, int cmp, uint64_t value, uintptr_t s) {
    check(tshmemx_signal_wait_until_on_stream(ptr<uint64_t>(sig), cmp, value, stream_of(s)));
  });
  m.def("quiet", []() {
    tshmemx_clear_last_error();
    {
      nb::gil_scoped_release release;
      tshmem_quiet();
    }
    check_last();
  });
  m.def("barrier_all", [](Note d, Note e) {
    noted(d, e, [] {
      tshmem_barrier_all();
      return 0;
    });
  });
  m.def("barrier", [](int team, Note d, Note e) { noted(d, e, [&] { return tshmem_barrier(team); }); });
  m.def("barrier_on_stream", [](int team, uintptr_t s) { check(tshmemx_barrier_on_stream(team, stream_of(s))); });
  m.def("cumodule_init",
        [](uintptr_t module) { check(tshmemx_cumodule_init(reinterpret_cast<tshmemx_cumodule_t>(module))); });

  // ---- collectives: on a stream, or host-blocking (checked rendezvous, with the binding's note)
  m.def("allreduce_on_stream",
        [](int team, uintptr_t dst, uintptr_t src, size_t count, int dtype, int op, uintptr_t s) {
          check(tshmemx_allreduce_on_stream(team, ptr<void>(dst), ptr<const void>(src), count,
                                            static_cast<tshmemx_dtype_t>(dtype), static_cast<tshmemx_redop_t>(op),
                                            stream_of(s)));
        });
  m.def("reduce_scatter_on_stream",
        [](int team, uintptr_t dst, uintptr_t src, size_t count, int dtype, int op, uintptr_t s) {
          check(tshmemx_reduce_scatter_on_stream(team, ptr<void>(dst), ptr<const void>(src), count,
                                                 static_cast<tshmemx_dtype_t>(dtype), static_cast<tshmemx_redop_t>(op),
                                                 stream_of(s)));
        });
  m.def("allgather_on_stream", [](int team, uintptr_t dst, uintptr_t src, size_t nbytes, uintptr_t s) {
    check(tshmemx_allgather_on_stream(team, ptr<void>(dst), ptr<const void>(src), nbytes, stream_of(s)));
  });
  m.def("alltoall_on_stream", [](int team, uintptr_t dst, uintptr_t src, size_t nbytes, uintptr_t s) {
    check(tshmemx_alltoall_on_stream(team, ptr<void>(dst), ptr<const void>(src), nbytes, stream_of(s)));
  });
  m.def("broadcast_on_stream", [](int team, uintptr_t dst, uintptr_t src, size_t nbytes, int root, uintptr_t s) {
    check(tshmemx_broadcast_on_stream(team, ptr<void>(dst), ptr<const void>(src), nbytes, root, stream_of(s)));
  });
  m.def("host_reduce", [](int team, uintptr_t dst, uintptr_t src, size_t count, int dtype, int op, Note d, Note e) {
    noted(d, e, [&] {
      return tshmemi_host_reduce(team, ptr<void>(dst), ptr<const void>(src), count, static_cast<tshmemx_dtype_t>(dtype),
                                 static_cast<tshmemx_redop_t>(op));
    });
  });
  m.def("host_reduce_scatter",
        [](int team, uintptr_t dst, uintptr_t src, size_t count, int dtype, int op, Note d, Note e) {
          noted(d, e, [&] {
            return tshmemi_host_reduce_scatter(team, ptr<void>(dst), ptr<const void>(src), count,
                                               static_cast<tshmemx_dtype_t>(dtype), static_cast<tshmemx_redop_t>(op));
          });
        });
  m.def("host_fcollect", [](int team, uintptr_t dst, uintptr_t src, size_t nbytes, Note d, Note e) {
    noted(d, e, [&] { return tshmemi_host_fcollect(team, ptr<void>(dst), ptr<const void>(src), nbytes); });
  });
  m.def("host_alltoall", [](int team, uintptr_t dst, uintptr_t src, size_t nbytes, Note d, Note e) {
    noted(d, e, [&] { return tshmemi_host_alltoall(team, ptr<void>(dst), ptr<const void>(src), nbytes); });
  });
  m.def("host_broadcast", [](int team, uintptr_t dst, uintptr_t src, size_t nbytes, int root, Note d, Note e) {
    noted(d, e, [&] { return tshmemi_host_broadcast(team, ptr<void>(dst), ptr<const void>(src), nbytes, root); });
  });
}
