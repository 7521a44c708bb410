// tshmem._C's fast path: the plain case of the calls a program makes in its loops (put, get, barrier_all,
// all_reduce, empty, zeros, free) recognised, checked and issued here in one step, instead of argument by argument
// in Python. A call that is anything but plainly valid (another array type, a view, a stream object, a dtype not
// seen yet, a refusal to explain) returns tshmem._C.SLOW, and the Python layer (tshmem/_ops.py, _runtime.py) takes
// it from the start and raises the error that names the argument and the rule: the messages live there, once. So
// what this file accepts must be a subset of what the Python layer accepts; every error test goes through here
// first, and an argument wrongly accepted here would fail it.
//
// Arrays are read without numpy's or torch's C API (the extension links neither): numpy arrays through the buffer
// protocol, torch tensors through five method calls. Only the exact types count (subclasses take the Python path).
// Arrays over this PE's heap are views of one array over the whole heap, made once per job: numpy's constructor
// or torch.as_strided, a fraction of what a DLPack import costs.
#include <dlfcn.h>
#include <strings.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ext_common.h"

namespace tshmem_py {
namespace {

/// What the Python layer hands over at init (tshmem/_runtime.py, _bind_fast_path), dropped at finalize.
struct FastState {
  bool bound = false;
  uintptr_t base = 0;
  uint64_t size = 0;
  bool gpu = false;  ///< the heap is device memory: arrays are CUDA tensors, calls stream-ordered
  int device = -1;
  nb::object blocks;            ///< dict: address -> _Block (the live allocations, in allocation order)
  nb::object scopes;            ///< list of the open tshmem.scope() blocks' lists
  nb::object block_class;       ///< _Block(ptr, nbytes, desc, where)
  nb::object weak_ref;          ///< weakref.ref
  nb::object array_dtypes;      ///< dict: numpy or torch dtype object -> DType (filled by the Python layer)
  nb::object dtype_args;        ///< dict: dtype argument (str, torch.dtype, ...) -> DType (likewise)
  nb::object ndarray_type;      ///< numpy.ndarray, or None
  nb::object tensor_type;       ///< torch.Tensor, or None
  nb::object reduce_op_type;    ///< tshmem.ReduceOp
  nb::object raw_stream;        ///< torch._C._cuda_getCurrentRawStream, or None
  nb::object as_strided;        ///< torch.as_strided, or None
  nb::object numpy_dtypes;      ///< dict: dtype name -> numpy.dtype
  nb::object torch_dtypes;      ///< dict: dtype name -> torch.dtype
  nb::object heap_numpy;        ///< uint8 numpy array over the heap (None on a GPU heap or without numpy)
  nb::object heap_torch;        ///< uint8 tensor over the heap (None without torch)
  nb::object typed_heaps;       ///< dict: dtype name -> heap_torch viewed as that dtype
  nb::object asymmetric_alloc;  ///< AsymmetricAllocationError
  nb::object package_dir;       ///< str: the package's folder (frames inside it are not the caller)
};

FastState *g = nullptr;  // for the process, never freed: Python objects must not be released after the interpreter
nb::object *g_slow = nullptr;
using StreamSync = int (*)(void *);
StreamSync g_stream_sync = nullptr;  // cudaStreamSynchronize of the CUDA runtime libtshmem loaded (GPU builds)

PyObject *slow() { return g_slow->inc_ref().ptr(); }

// ---- reading arguments -----------------------------------------------------------------------------------------

/// What a call needs of one array. `dtype` is the Python layer's DType (borrowed: the dict holds it).
struct Array {
  uintptr_t ptr = 0;
  size_t nbytes = 0;
  size_t numel = 0;
  PyObject *dtype = nullptr;
  int device = -1;  ///< -1: host memory; else the CUDA device index
  bool contiguous = false;
};

size_t itemsize_of(PyObject *dtype) { return PyLong_AsSize_t(PyTuple_GET_ITEM(dtype, 1)); }
const char *name_of(PyObject *dtype) { return PyUnicode_AsUTF8(PyTuple_GET_ITEM(dtype, 0)); }

/// Calls obj.name() and returns the result as an integer; false (error cleared) when that fails.
bool call_int(PyObject *obj, PyObject *name, long long *out) {
  PyObject *r = PyObject_CallMethodNoArgs(obj, name);
  if (r == nullptr) {
    PyErr_Clear();
    return false;
  }
  *out = PyLong_AsLongLong(r);
  Py_DECREF(r);
  if (*out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

/// The DType of an array's dtype object, or null (not seen yet, or not one tshmem handles).
PyObject *dtype_of_array(PyObject *obj) {
  PyObject *dt = PyObject_GetAttrString(obj, "dtype");
  if (dt == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject *found = PyDict_GetItemWithError(g->array_dtypes.ptr(), dt);
  Py_DECREF(dt);
  if (found == nullptr || found == Py_None) {
    PyErr_Clear();
    return nullptr;
  }
  return found;
}

/// Reads a numpy array or a torch tensor (the exact types); false for anything else, and for a read-only numpy
/// array when `writable` (a destination: the Python layer refuses it by name).
bool read_array(PyObject *obj, Array *a, bool writable = false) {
  PyTypeObject *type = Py_TYPE(obj);
  if (reinterpret_cast<PyObject *>(type) == g->tensor_type.ptr()) {
    static PyObject *data_ptr = PyUnicode_InternFromString("data_ptr");
    static PyObject *numel = PyUnicode_InternFromString("numel");
    static PyObject *get_device = PyUnicode_InternFromString("get_device");
    static PyObject *is_contiguous = PyUnicode_InternFromString("is_contiguous");
    if ((a->dtype = dtype_of_array(obj)) == nullptr) return false;
    long long address = 0, count = 0, device = 0;
    if (!call_int(obj, data_ptr, &address) || !call_int(obj, numel, &count) || !call_int(obj, get_device, &device))
      return false;
    PyObject *c = PyObject_CallMethodNoArgs(obj, is_contiguous);
    if (c == nullptr) {
      PyErr_Clear();
      return false;
    }
    a->contiguous = c == Py_True;
    Py_DECREF(c);
    a->ptr = static_cast<uintptr_t>(address);
    a->numel = static_cast<size_t>(count);
    a->nbytes = a->numel * itemsize_of(a->dtype);
    a->device = static_cast<int>(device);
    return true;
  }
  if (reinterpret_cast<PyObject *>(type) == g->ndarray_type.ptr()) {
    if ((a->dtype = dtype_of_array(obj)) == nullptr) return false;
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();
      return false;
    }
    a->ptr = reinterpret_cast<uintptr_t>(b.buf);
    a->nbytes = static_cast<size_t>(b.len);
    a->numel = b.itemsize > 0 ? a->nbytes / static_cast<size_t>(b.itemsize) : 0;
    a->contiguous = PyBuffer_IsContiguous(&b, 'C') != 0;
    a->device = -1;
    PyBuffer_Release(&b);
    return true;
  }
  return false;
}

/// A contiguous, non-empty array where this PE's calls take it: on the heap's device (or host memory on shm),
/// inside the heap when `on_heap`, writable when `written`.
/// The live allocation that starts at `ptr` (borrowed), or null: a view inside one, or freed memory.
PyObject *block_at(uintptr_t ptr) {
  nb::object key = nb::int_(ptr);
  PyObject *block = PyDict_GetItemWithError(g->blocks.ptr(), key.ptr());
  if (block == nullptr) PyErr_Clear();
  return block;
}

bool read_operand(PyObject *obj, bool on_heap, Array *a, bool written = false) {
  if (!read_array(obj, a, written) || !a->contiguous || a->nbytes == 0) return false;
  if (a->device != (g->gpu ? g->device : -1)) return false;
  if (!on_heap) return true;
  if (!(a->ptr >= g->base && a->ptr - g->base <= g->size && a->nbytes <= g->size - (a->ptr - g->base))) return false;
  // The start of a live allocation, within it; anything else (a view inside one, freed memory) the Python layer
  // checks and, where it must, refuses.
  PyObject *block = block_at(a->ptr);
  return block != nullptr && nb::cast<size_t>(nb::borrow(block).attr("nbytes")) >= a->nbytes;
}

/// An exact int (not bool) that fits an int.
bool read_int(PyObject *obj, int *out) {
  if (!PyLong_CheckExact(obj)) return false;
  int overflow = 0;
  const long v = PyLong_AsLongAndOverflow(obj, &overflow);
  if (overflow != 0 || v < INT32_MIN || v > INT32_MAX) {
    PyErr_Clear();
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

/// The stream a GPU call goes on: torch's current stream of the heap's device (None) or a cudaStream_t given as
/// an int. False for a stream object (the Python layer checks its device) or on a host heap with a stream.
bool read_stream(PyObject *stream, uintptr_t *out) {
  if (!g->gpu) {
    *out = 0;
    return stream == Py_None;
  }
  if (stream == Py_None) {
    if (g->raw_stream.is_none()) return false;
    PyObject *dev = PyLong_FromLong(g->device);
    PyObject *r = PyObject_CallOneArg(g->raw_stream.ptr(), dev);
    Py_DECREF(dev);
    if (r == nullptr) {
      PyErr_Clear();
      return false;
    }
    *out = static_cast<uintptr_t>(PyLong_AsUnsignedLongLongMask(r));
    Py_DECREF(r);
    return true;
  }
  if (!PyLong_CheckExact(stream)) return false;
  *out = static_cast<uintptr_t>(PyLong_AsUnsignedLongLongMask(stream));
  return true;
}

/// The host-blocking form on a GPU heap first waits for the work already queued on the stream.
void sync_stream(uintptr_t stream) {
  if (!g->gpu) return;
  int rc = 0;
  {
    nb::gil_scoped_release release;
    rc = g_stream_sync(reinterpret_cast<void *>(stream));
  }
  if (rc != 0) {
    PyErr_Format(error_class(TSHMEM_ERR_CUDA), "waiting for the stream's earlier work failed (CUDA error %d)", rc);
    throw nb::python_error();
  }
}

bool is_true(PyObject *obj, bool *out) {
  const int v = PyObject_IsTrue(obj);
  if (v < 0) {
    PyErr_Clear();
    return false;
  }
  *out = v != 0;
  return true;
}

// ---- arrays over the heap -------------------------------------------------------------------------------------

/// "(2,)", "(4, 8)", "()": a shape as Python prints a tuple.
std::string shape_text(const std::vector<size_t> &dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

PyObject *int_tuple(const std::vector<size_t> &values) {
  PyObject *t = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromSize_t(values[i]));
  return t;
}

/// The array of `dims` and dtype `name` at `offset` of this PE's heap, C order: a numpy array or a torch tensor
/// (on the heap's device), a view of the whole-heap array.
nb::object heap_view(uint64_t offset, const std::vector<size_t> &dims, const char *name, size_t itemsize, bool torch) {
  nb::object shape = nb::steal(int_tuple(dims));
  if (!torch) {
    PyObject *dt = PyDict_GetItemString(g->numpy_dtypes.ptr(), name);
    if (dt == nullptr || g->heap_numpy.is_none()) throw nb::value_error("tshmem: no numpy view of this heap");
    return g->ndarray_type(shape, nb::handle(dt), g->heap_numpy, offset);
  }
  if (g->heap_torch.is_none()) throw nb::value_error("tshmem: no torch view of this heap");
  PyObject *typed = PyDict_GetItemString(g->typed_heaps.ptr(), name);
  nb::object view;
  if (typed == nullptr) {
    PyObject *dt = PyDict_GetItemString(g->torch_dtypes.ptr(), name);
    if (dt == nullptr) throw nb::value_error("tshmem: torch has no such dtype");
    view = g->heap_torch.attr("view")(nb::handle(dt));
    PyDict_SetItemString(g->typed_heaps.ptr(), name, view.ptr());
  } else {
    view = nb::borrow(typed);
  }
  std::vector<size_t> strides(dims.size());
  size_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i] ? dims[i] : 1;
  }
  return g->as_strided(view, shape, nb::steal(int_tuple(strides)), offset / itemsize);
}

/// Where an allocation was made: (code, byte offset) of the first frame outside the package. The line number is
/// looked up only when the allocation is listed (code_line below): finding it costs more than the rest of the call
/// (before Python 3.11, which cannot say the offset: (code, -line)).
nb::object caller_location() {
  PyFrameObject *frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject *code = PyFrame_GetCode(frame);
    if (PyUnicode_Tailmatch(code->co_filename, g->package_dir.ptr(), 0, PY_SSIZE_T_MAX, -1) != 1) {
#if PY_VERSION_HEX >= 0x030B0000
      nb::object where = nb::make_tuple(nb::steal(reinterpret_cast<PyObject *>(code)), PyFrame_GetLasti(frame));
#else  // no PyFrame_GetLasti before 3.11: the line now
      nb::object where = nb::make_tuple(nb::steal(reinterpret_cast<PyObject *>(code)), -PyFrame_GetLineNumber(frame));
#endif
      Py_DECREF(frame);
      return where;
    }
    Py_DECREF(code);
    PyFrameObject *back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  return nb::str("?");
}

/// A shape from an exact int or a tuple or list of exact ints, each >= 0; false otherwise.
bool read_shape(PyObject *shape, std::vector<size_t> *dims) {
  auto dim = [&](PyObject *d) {
    if (!PyLong_CheckExact(d)) return false;
    const long long v = PyLong_AsLongLong(d);
    if (v < 0) {
      PyErr_Clear();
      return false;
    }
    dims->push_back(static_cast<size_t>(v));
    return true;
  };
  if (PyLong_CheckExact(shape)) return dim(shape);
  if (!PyTuple_CheckExact(shape) && !PyList_CheckExact(shape)) return false;
  PyObject *seq = shape;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!dim(PySequence_Fast_GET_ITEM(seq, i))) return false;
  return true;
}

bool live() { return g != nullptr && g->bound; }

// ---- the calls ---------------------------------------------------------------------------------------------------

/// put (put = true) or get, in the caller's mode: stream-ordered on a GPU heap, else host-blocking.
PyObject *rma(bool put, PyObject *dst, PyObject *src, PyObject *pe_arg, PyObject *stream_arg, PyObject *blocking_arg) {
  Array d, s;
  int pe = 0;
  uintptr_t stream = 0;
  bool blocking = false;
  if (!live() || !read_operand(dst, put, &d, true) || !read_operand(src, !put, &s) || d.dtype != s.dtype ||
      d.nbytes != s.nbytes || !read_int(pe_arg, &pe) || !is_true(blocking_arg, &blocking) ||
      !read_stream(stream_arg, &stream) || (blocking && g->gpu && g_stream_sync == nullptr))
    return slow();
  int rc = 0;
  if (g->gpu && !blocking) {
    rc = put ? tshmemx_putmem_on_stream(ptr<void>(d.ptr), ptr<const void>(s.ptr), d.nbytes, pe, stream_of(stream))
             : tshmemx_getmem_on_stream(ptr<void>(d.ptr), ptr<const void>(s.ptr), d.nbytes, pe, stream_of(stream));
  } else {
    sync_stream(stream);
    nb::gil_scoped_release release;
    rc = put ? tshmem_putmem(ptr<void>(d.ptr), ptr<const void>(s.ptr), d.nbytes, pe)
             : tshmem_getmem(ptr<void>(d.ptr), ptr<const void>(s.ptr), d.nbytes, pe);
  }
  check(rc);
  Py_RETURN_NONE;
}

PyObject *barrier_all(PyObject *stream_arg, PyObject *blocking_arg) {
  uintptr_t stream = 0;
  bool blocking = false;
  if (!live() || !is_true(blocking_arg, &blocking) || !read_stream(stream_arg, &stream) ||
      (blocking && g->gpu && g_stream_sync == nullptr))
    return slow();
  if (g->gpu && !blocking) {
    check(tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, stream_of(stream)));
  } else {
    sync_stream(stream);
    check(run_noted(nullptr, nullptr, [] {
      tshmem_barrier_all();
      return 0;
    }));
  }
  Py_RETURN_NONE;
}

/// The reduction operator: a ReduceOp, or its name in lower or upper case.
bool read_redop(PyObject *op, int *code) {
  if (Py_TYPE(op) == reinterpret_cast<PyTypeObject *>(g->reduce_op_type.ptr())) {
    *code = static_cast<int>(PyLong_AsLong(op));
    return true;
  }
  if (!PyUnicode_CheckExact(op)) return false;
  static const char *const names[] = {"sum", "min", "max", "prod", "and", "or", "xor"};
  const char *s = PyUnicode_AsUTF8(op);
  if (s == nullptr) {
    PyErr_Clear();
    return false;
  }
  for (int i = 0; i < 7; ++i)
    if (strcasecmp(s, names[i]) == 0) {
      *code = i;
      return true;
    }
  return false;
}

PyObject *all_reduce(PyObject *dst, PyObject *src, PyObject *op_arg, PyObject *team_arg, PyObject *stream_arg,
                     PyObject *blocking_arg) {
  Array d, s;
  int op = 0, team = 0;
  uintptr_t stream = 0;
  bool blocking = false;
  // The host heap has no collectives: the Python layer says so.
  if (!live() || !g->gpu || !read_operand(dst, true, &d, true)) return slow();
  if (src == Py_None)
    s = d;  // in place
  else if (!read_operand(src, true, &s))
    return slow();
  if (d.dtype != s.dtype || d.nbytes != s.nbytes || !read_redop(op_arg, &op) || !read_int(team_arg, &team) ||
      !is_true(blocking_arg, &blocking) || !read_stream(stream_arg, &stream) || (blocking && g_stream_sync == nullptr))
    return slow();
  PyObject *reduce_code = PyTuple_GET_ITEM(d.dtype, 4);
  const char *name = name_of(d.dtype);
  const bool floating = name[0] == 'f' || name[0] == 'b';  // float16/32/64, bfloat16 (bool has no reductions)
  if (reduce_code == Py_None || (op >= 4 && floating)) return slow();
  const auto dtype = static_cast<tshmemx_dtype_t>(PyLong_AsLong(reduce_code));
  const auto redop = static_cast<tshmemx_redop_t>(op);
  if (!blocking) {
    check(tshmemx_allreduce_on_stream(team, ptr<void>(d.ptr), ptr<const void>(s.ptr), d.numel, dtype, redop,
                                      stream_of(stream)));
  } else {
    sync_stream(stream);
    check(run_noted(nullptr, nullptr, [&] {
      return tshmemi_host_reduce(team, ptr<void>(d.ptr), ptr<const void>(s.ptr), d.numel, dtype, redop);
    }));
  }
  Py_RETURN_NONE;
}

/// Raises a failed allocation or free: an asymmetric request as AsymmetricAllocationError.
[[noreturn]] void raise_heap_status(int status) {
  if (status == TSHMEM_ERR_ASYMMETRIC) {
    PyErr_SetString(g->asymmetric_alloc.ptr(), tshmemx_last_error());
    throw nb::python_error();
  }
  raise_status(status);
}

/// tshmem.empty / tshmem.zeros with the default array type and alignment.
PyObject *allocate(bool zero, PyObject *shape, PyObject *dtype_arg) {
  if (!live()) return slow();
  std::vector<size_t> dims;
  PyObject *dtype = PyDict_GetItemWithError(g->dtype_args.ptr(), dtype_arg);  // borrowed
  if (dtype == nullptr) {
    PyErr_Clear();  // an unhashable argument, or one not seen yet
    return slow();
  }
  if (!read_shape(shape, &dims)) return slow();
  if (g->gpu ? g->heap_torch.is_none() : g->heap_numpy.is_none()) return slow();  // the Python layer says why
  const char *name = name_of(dtype);
  const size_t itemsize = itemsize_of(dtype);
  if (!g->gpu && std::strcmp(name, "bfloat16") == 0) return slow();  // numpy has none: the Python layer says so
  size_t nbytes = itemsize;
  for (size_t d : dims) {
    if (d != 0 && nbytes > SIZE_MAX / d) return slow();
    nbytes *= d;
  }
  if (nbytes == 0) return slow();
  const std::string desc =
      std::string(zero ? "tshmem.zeros" : "tshmem.empty") + "(shape=" + shape_text(dims) + ", dtype=" + name + ")";
  void *p = nullptr;
  const int status = run_noted(desc.c_str(), nullptr, [&] {
    p = zero ? tshmem_calloc(1, nbytes) : tshmem_malloc(nbytes);
    return 0;
  });
  if (status != 0) raise_heap_status(status);
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  nb::object array = heap_view(address - g->base, dims, name, itemsize, g->gpu);
  nb::object key = nb::int_(address);
  nb::object block = g->block_class(key, nbytes, nb::str(desc.c_str()), caller_location());
  block.attr("array") = g->weak_ref(array);  // free takes this array only (_runtime.py, _Block)
  PyDict_SetItem(g->blocks.ptr(), key.ptr(), block.ptr());
  const Py_ssize_t open_scopes = PyList_GET_SIZE(g->scopes.ptr());
  if (open_scopes > 0) PyList_Append(PyList_GET_ITEM(g->scopes.ptr(), open_scopes - 1), block.ptr());
  return array.release().ptr();
}

PyObject *release(PyObject *t) {
  Array a;
  if (!live() || !read_array(t, &a) || a.nbytes == 0) return slow();
  nb::object key = nb::int_(a.ptr);
  PyObject *block = PyDict_GetItemWithError(g->blocks.ptr(), key.ptr());  // borrowed
  if (block == nullptr) {
    PyErr_Clear();
    return slow();  // not a live allocation: the Python layer makes every PE refuse it
  }
  if (!nb::cast<bool>(nb::borrow(block).attr("is_array")(nb::handle(t)))) return slow();  // a view: likewise
  nb::object desc = nb::borrow(block).attr("desc");
  const std::string note = "tshmem.free(" + nb::cast<std::string>(desc) + ")";
  const int status = run_noted(note.c_str(), nullptr, [&] {
    tshmem_free(ptr<void>(a.ptr));
    return 0;
  });
  if (status != 0) raise_heap_status(status);
  PyDict_DelItem(g->blocks.ptr(), key.ptr());
  Py_RETURN_NONE;
}

nb::object item(const nb::dict &config, const char *key) { return nb::borrow(config[key]); }

}  // namespace

void define_fast_path(nb::module_ &m) {
  g_slow = new nb::object(nb::steal(PyObject_CallNoArgs(reinterpret_cast<PyObject *>(&PyBaseObject_Type))));
  m.attr("SLOW") = *g_slow;
  if (void *lib = dlopen("libtshmem.so.0", RTLD_LAZY | RTLD_NOLOAD)) {
    g_stream_sync = reinterpret_cast<StreamSync>(dlsym(lib, "cudaStreamSynchronize"));  // libtshmem's runtime
    dlclose(lib);
  }

  // After init: what the fast path needs of the job (see FastState). After finalize: fast_unbind.
  m.def("fast_bind", [](nb::dict config) {
    if (g == nullptr) g = new FastState();
    *g = FastState();
    g->base = nb::cast<uintptr_t>(config["base"]);
    g->size = nb::cast<uint64_t>(config["size"]);
    g->gpu = nb::cast<bool>(config["gpu"]);
    g->device = nb::cast<int>(config["device"]);
    g->blocks = item(config, "blocks");
    g->scopes = item(config, "scopes");
    g->block_class = item(config, "block_class");
    g->weak_ref = nb::module_::import_("weakref").attr("ref");
    g->array_dtypes = item(config, "array_dtypes");
    g->dtype_args = item(config, "dtype_args");
    g->ndarray_type = item(config, "ndarray_type");
    g->tensor_type = item(config, "tensor_type");
    g->reduce_op_type = item(config, "reduce_op_type");
    g->raw_stream = item(config, "raw_stream");
    g->as_strided = item(config, "as_strided");
    g->numpy_dtypes = item(config, "numpy_dtypes");
    g->torch_dtypes = item(config, "torch_dtypes");
    g->heap_numpy = item(config, "heap_numpy");
    g->heap_torch = item(config, "heap_torch");
    g->typed_heaps = nb::dict();
    g->asymmetric_alloc = item(config, "asymmetric_alloc");
    g->package_dir = item(config, "package_dir");
    g->bound = true;
  });
  m.def("fast_unbind", []() {
    if (g != nullptr) *g = FastState();
  });
  // The line of a caller_location (code, byte offset); a negative offset is the line itself (Python < 3.11).
  m.def("code_line", [](nb::handle code, int offset) {
    return offset < 0 ? -offset : PyCode_Addr2Line(reinterpret_cast<PyCodeObject *>(code.ptr()), offset);
  });
  m.def("heap_view", [](uint64_t offset, std::vector<size_t> dims, nb::handle dtype, bool torch) {
    if (!live()) throw nb::value_error("tshmem: no heap");
    return heap_view(offset, dims, name_of(dtype.ptr()), itemsize_of(dtype.ptr()), torch);
  });

  // Every argument may be None (nanobind refuses None for a plain handle parameter).
  auto a = [](const char *name) { return nb::arg(name).none(); };
  m.def(
      "fast_put",
      [](nb::handle dst, nb::handle src, nb::handle pe, nb::handle stream, nb::handle blocking) {
        return nb::steal(rma(true, dst.ptr(), src.ptr(), pe.ptr(), stream.ptr(), blocking.ptr()));
      },
      a("dst"), a("src"), a("pe"), a("stream"), a("blocking"));
  m.def(
      "fast_get",
      [](nb::handle dst, nb::handle src, nb::handle pe, nb::handle stream, nb::handle blocking) {
        return nb::steal(rma(false, dst.ptr(), src.ptr(), pe.ptr(), stream.ptr(), blocking.ptr()));
      },
      a("dst"), a("src"), a("pe"), a("stream"), a("blocking"));
  m.def(
      "fast_barrier_all",
      [](nb::handle stream, nb::handle blocking) { return nb::steal(barrier_all(stream.ptr(), blocking.ptr())); },
      a("stream"), a("blocking"));
  m.def(
      "fast_all_reduce",
      [](nb::handle dst, nb::handle src, nb::handle op, nb::handle team, nb::handle stream, nb::handle blocking) {
        return nb::steal(all_reduce(dst.ptr(), src.ptr(), op.ptr(), team.ptr(), stream.ptr(), blocking.ptr()));
      },
      a("dst"), a("src"), a("op"), a("team"), a("stream"), a("blocking"));
  m.def(
      "fast_empty",
      [](nb::handle shape, nb::handle dtype) { return nb::steal(allocate(false, shape.ptr(), dtype.ptr())); },
      a("shape"), a("dtype"));
  m.def(
      "fast_zeros",
      [](nb::handle shape, nb::handle dtype) { return nb::steal(allocate(true, shape.ptr(), dtype.ptr())); },
      a("shape"), a("dtype"));
  m.def(
      "fast_free", [](nb::handle t) { return nb::steal(release(t.ptr())); }, a("t"));
}

}  // namespace tshmem_py
