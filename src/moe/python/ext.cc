// tshmem_moe._C: the C API of libtshmem_moe for Python objects, without libtorch. A tensor argument is read
// through Python alone: a torch.Tensor by its attributes (data_ptr(), dtype, shape, stride(),
// is_cuda/get_device()), a numpy array by the buffer protocol and its dtype. Outputs are allocated by the Python layer
// (tshmem_moe/__init__.py) and passed in; the library checks them. One build serves every torch version.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "tshmem/moe.h"

namespace nb = nanobind;

namespace {

// Registered once by the Python layer: {dtype object: tshmem_moe_dtype_t}, the torch.Tensor class (or None)
// and the exception class of each status.
struct Registry {
  nb::object dtypes;       // dict
  nb::object tensor_type;  // torch.Tensor or None
  nb::object errors;       // tuple indexed by status
  nb::object s_dtype, s_shape, s_stride, s_data_ptr, s_is_cuda, s_is_cpu, s_get_device;
};
Registry *g = nullptr;

[[noreturn]] void raise_status(tshmem_moe_status_t status) {
  PyObject *cls = PyExc_RuntimeError;
  if (g && g->errors.is_valid() && static_cast<size_t>(status) < nb::len(g->errors))
    cls = g->errors[static_cast<size_t>(status)].ptr();
  PyErr_SetString(cls, tshmem_moe_last_error());
  throw nb::python_error();
}

inline void check(tshmem_moe_status_t s) {
  if (s != TSHMEM_MOE_SUCCESS) raise_status(s);
}

[[noreturn]] void raise_arg(PyObject *type, const char *call, const char *name, const char *what) {
  PyErr_Format(type, "tshmem_moe.%s: %s %s", call, name, what);
  throw nb::python_error();
}

nb::object attr(nb::handle o, const nb::object &name) {
  PyObject *r = PyObject_GetAttr(o.ptr(), name.ptr());
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::object call0(nb::handle o, const nb::object &name) {
  PyObject *args[1] = {o.ptr()};
  PyObject *r = PyObject_VectorcallMethod(name.ptr(), args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

int64_t as_i64(nb::handle o) {
  long long v = PyLong_AsLongLong(o.ptr());
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return static_cast<int64_t>(v);
}

// Fills shape and strides (elements) of a torch tensor from its shape and stride() tuples.
void fill_dims(tshmem_moe_tensor_t *t, nb::handle shape, nb::handle strides, const char *call, const char *name) {
  const Py_ssize_t nd = PyTuple_Size(shape.ptr());
  if (nd < 0) throw nb::python_error();
  if (nd > TSHMEM_MOE_MAX_DIMS) raise_arg(PyExc_ValueError, call, name, "has more than 4 dimensions");
  t->ndim = static_cast<int32_t>(nd);
  for (Py_ssize_t i = 0; i < nd; ++i) {
    t->shape[i] = as_i64(PyTuple_GET_ITEM(shape.ptr(), i));
    t->strides[i] = as_i64(PyTuple_GET_ITEM(strides.ptr(), i));
  }
}

int dtype_code(nb::handle dtype, const char *call, const char *name) {
  PyObject *code = PyDict_GetItemWithError(g->dtypes.ptr(), dtype.ptr());
  if (!code) {
    if (PyErr_Occurred()) throw nb::python_error();
    nb::str s = nb::str(dtype);
    PyErr_Format(PyExc_TypeError,
                 "tshmem_moe.%s: %s has dtype %s; supported: bool, int32, int64, float32, bfloat16, float8_e4m3fn",
                 call, name, s.c_str());
    throw nb::python_error();
  }
  return static_cast<int>(PyLong_AsLong(code));
}

// A view of a torch tensor or numpy array. `name` and `call` only serve messages.
tshmem_moe_tensor_t view(nb::handle o, const char *call, const char *name) {
  tshmem_moe_tensor_t t{};
  if (o.is_none()) raise_arg(PyExc_TypeError, call, name, "is None");
  const int tt = g->tensor_type.is_none() ? 0 : PyObject_IsInstance(o.ptr(), g->tensor_type.ptr());
  if (tt < 0) throw nb::python_error();
  if (tt) {
    t.dtype = static_cast<tshmem_moe_dtype_t>(dtype_code(attr(o, g->s_dtype), call, name));
    if (PyObject_IsTrue(attr(o, g->s_is_cuda).ptr())) {
      t.device = static_cast<int32_t>(as_i64(call0(o, g->s_get_device)));
    } else if (PyObject_IsTrue(attr(o, g->s_is_cpu).ptr())) {
      t.device = TSHMEM_MOE_DEVICE_CPU;
    } else {
      raise_arg(PyExc_ValueError, call, name, "is on neither a CUDA device nor the CPU");
    }
    t.data = PyLong_AsVoidPtr(call0(o, g->s_data_ptr).ptr());
    if (PyErr_Occurred()) throw nb::python_error();
    fill_dims(&t, attr(o, g->s_shape), call0(o, g->s_stride), call, name);
    return t;
  }
  // numpy (and any buffer exporter with a `dtype`): the buffer protocol, which costs far less than
  // __array_interface__ (a new dict per read).
  Py_buffer b;
  if (PyObject_GetBuffer(o.ptr(), &b, PyBUF_RECORDS_RO) != 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "tshmem_moe.%s: %s is a %s; it must be a torch.Tensor or a numpy array", call, name,
                 Py_TYPE(o.ptr())->tp_name);
    throw nb::python_error();
  }
  struct Release {
    Py_buffer *b;
    ~Release() { PyBuffer_Release(b); }
  } release{&b};  // the caller keeps the array alive for the call
  t.dtype = static_cast<tshmem_moe_dtype_t>(dtype_code(attr(o, g->s_dtype), call, name));
  t.device = TSHMEM_MOE_DEVICE_CPU;
  t.data = b.buf;
  if (b.ndim > TSHMEM_MOE_MAX_DIMS) raise_arg(PyExc_ValueError, call, name, "has more than 4 dimensions");
  t.ndim = b.ndim;
  const int64_t esize = static_cast<int64_t>(tshmem_moe_dtype_size(t.dtype));
  if (esize != static_cast<int64_t>(b.itemsize)) raise_arg(PyExc_TypeError, call, name, "has an unexpected item size");
  for (int i = 0; i < b.ndim; ++i) {
    t.shape[i] = static_cast<int64_t>(b.shape[i]);
    if (b.strides[i] % esize != 0) raise_arg(PyExc_ValueError, call, name, "has a stride that is not a whole element");
    t.strides[i] = static_cast<int64_t>(b.strides[i]) / esize;
  }
  return t;
}

// An optional input: None gives NULL.
struct Opt {
  tshmem_moe_tensor_t t{};
  bool set = false;
  Opt(nb::handle o, const char *call, const char *name) {
    if (!o.is_none()) {
      t = view(o, call, name);
      set = true;
    }
  }
  const tshmem_moe_tensor_t *get() const { return set ? &t : nullptr; }
  tshmem_moe_tensor_t *get() { return set ? &t : nullptr; }
};

inline cudaStream_t stream_of(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

}  // namespace

NB_MODULE(_C, m) {
  g = new Registry;  // lives as long as the process: the module is never unloaded while objects refer to it
  g->dtypes = nb::dict();
  g->tensor_type = nb::none();
  g->errors = nb::tuple();
  g->s_dtype = nb::steal(PyUnicode_InternFromString("dtype"));
  g->s_shape = nb::steal(PyUnicode_InternFromString("shape"));
  g->s_stride = nb::steal(PyUnicode_InternFromString("stride"));
  g->s_data_ptr = nb::steal(PyUnicode_InternFromString("data_ptr"));
  g->s_is_cuda = nb::steal(PyUnicode_InternFromString("is_cuda"));
  g->s_is_cpu = nb::steal(PyUnicode_InternFromString("is_cpu"));
  g->s_get_device = nb::steal(PyUnicode_InternFromString("get_device"));

  m.def(
      "_register",
      [](nb::dict dtypes, nb::handle tensor_type, nb::tuple errors) {
        g->dtypes = dtypes;
        g->tensor_type = nb::borrow(tensor_type);
        g->errors = errors;
      },
      nb::arg("dtypes"), nb::arg("tensor_type").none(), nb::arg("errors"));
  m.def("_view", [](nb::handle o) {  // for tests: what the library sees
    tshmem_moe_tensor_t t = view(o, "_view", "tensor");
    nb::list shape, strides;
    for (int i = 0; i < t.ndim; ++i) {
      shape.append(t.shape[i]);
      strides.append(t.strides[i]);
    }
    return nb::make_tuple(reinterpret_cast<uintptr_t>(t.data), static_cast<int>(t.dtype), nb::tuple(shape),
                          nb::tuple(strides), t.device);
  });

  m.def("set_num_sms", [](int n) { check(tshmem_moe_set_num_sms(n)); });
  m.def("get_num_sms", [](int device) {
    int n = 0;
    check(tshmem_moe_get_num_sms(device, &n));
    return n;
  });
  m.def("get_device_num_sms", [](int device) {
    int n = 0;
    check(tshmem_moe_get_device_num_sms(device, &n));
    return n;
  });
  m.def("set_check_mode", [](int mode) { tshmem_moe_set_check_mode(static_cast<tshmem_moe_check_mode_t>(mode)); });
  m.def("get_check_mode", []() { return static_cast<int>(tshmem_moe_get_check_mode()); });
  m.def("check_device_errors",
        [](int device, uintptr_t s) { check(tshmem_moe_check_device_errors(device, stream_of(s))); });

  m.def("topk_gate", [](nb::handle scores, int64_t k, nb::handle out, uintptr_t s) {
    const char *c = "topk_gate";
    tshmem_moe_tensor_t a = view(scores, c, "scores"), o = view(out, c, "topk_idx");
    check(tshmem_moe_topk_gate(&a, k, &o, stream_of(s)));
  });
  m.def("topk_sum_and_topk_group_idx",
        [](nb::handle scores, int64_t num_topk_sum, int64_t num_topk_groups, nb::handle out, uintptr_t s) {
          const char *c = "topk_sum_and_topk_group_idx";
          tshmem_moe_tensor_t a = view(scores, c, "scores"), o = view(out, c, "group_idx");
          check(tshmem_moe_topk_sum_and_topk_group_idx(&a, num_topk_sum, num_topk_groups, &o, stream_of(s)));
        });
  m.def(
      "top2_sum_gate",
      [](nb::handle logits, nb::handle bias, nb::tuple p, int scoring, nb::handle mask, nb::handle fix, nb::handle map,
         nb::handle count, nb::handle unmapped, nb::handle idx, nb::handle w, uintptr_t s) {
        const char *c = "top2_sum_gate";
        tshmem_moe_tensor_t l = view(logits, c, "logits"), b = view(bias, c, "bias");
        Opt mk(mask, c, "mask"), fx(fix, c, "fix_routing_mask"), mp(map, c, "to_physical_map"),
            ct(count, c, "logical_count"), um(unmapped, c, "unmapped_topk_idx");
        tshmem_moe_tensor_t oi = view(idx, c, "topk_idx"), ow = view(w, c, "topk_weights");
        tshmem_moe_top2_sum_gate_params_t q{};
        q.num_topk = as_i64(p[0]);
        q.num_topk_groups = as_i64(p[1]);
        q.num_groups = as_i64(p[2]);
        q.use_shared_as_routed = PyObject_IsTrue(p[3].ptr());
        q.num_shared_experts = as_i64(p[4]);
        q.routed_scaling_factor = static_cast<float>(PyFloat_AsDouble(p[5].ptr()));
        if (PyErr_Occurred()) throw nb::python_error();
        q.ep_rank = as_i64(p[6]);
        q.num_ep_ranks = as_i64(p[7]);
        q.tp_rank = as_i64(p[8]);
        q.num_tp_ranks = as_i64(p[9]);
        q.scoring_func = static_cast<tshmem_moe_scoring_func_t>(scoring);
        check(tshmem_moe_top2_sum_gate(&l, &b, &q, mk.get(), fx.get(), mp.get(), ct.get(), um.get(), &oi, &ow,
                                       stream_of(s)));
      },
      nb::arg("logits"), nb::arg("bias"), nb::arg("params"), nb::arg("scoring"), nb::arg("mask").none(),
      nb::arg("fix_routing_mask").none(), nb::arg("to_physical_map").none(), nb::arg("logical_count").none(),
      nb::arg("unmapped_topk_idx").none(), nb::arg("topk_idx"), nb::arg("topk_weights"), nb::arg("stream"));
  m.def("scoring_func", [](const std::string &name) {
    tshmem_moe_scoring_func_t f{};
    check(tshmem_moe_scoring_func_parse(name.c_str(), &f));
    return static_cast<int>(f);
  });
  m.def("group_count", [](nb::handle group_idx, int64_t num_groups, nb::handle out, uintptr_t s) {
    const char *c = "group_count";
    tshmem_moe_tensor_t a = view(group_idx, c, "group_idx"), o = view(out, c, "counts");
    check(tshmem_moe_group_count(&a, num_groups, &o, stream_of(s)));
  });
  m.def("aux_fi", [](nb::handle topk_idx, int64_t num_experts, int64_t num_aux_topk, nb::handle out, uintptr_t s) {
    const char *c = "aux_fi";
    tshmem_moe_tensor_t a = view(topk_idx, c, "topk_idx"), o = view(out, c, "fi");
    check(tshmem_moe_aux_fi(&a, num_experts, num_aux_topk, &o, stream_of(s)));
  });
  m.def("normalize_weight", [](nb::handle w, nb::handle den, nb::handle out, uintptr_t s) {
    const char *c = "normalize_weight";
    tshmem_moe_tensor_t a = view(w, c, "topk_weights"), d = view(den, c, "denominator"),
                        o = view(out, c, "normalized_weights");
    check(tshmem_moe_normalize_weight(&a, &d, &o, stream_of(s)));
  });
  m.def("mask_indices_by_tp", [](nb::handle idx, int64_t n, int64_t num_ep_ranks, int64_t tp_rank, int64_t num_tp_ranks,
                                 nb::handle out, uintptr_t s) {
    const char *c = "mask_indices_by_tp";
    tshmem_moe_tensor_t a = view(idx, c, "indices"), o = view(out, c, "masked_indices");
    check(tshmem_moe_mask_indices_by_tp(&a, n, num_ep_ranks, tp_rank, num_tp_ranks, &o, stream_of(s)));
  });
  m.def("inplace_unique_group_indices", [](nb::handle gi, int64_t num_groups, uintptr_t s) {
    tshmem_moe_tensor_t a = view(gi, "inplace_unique_group_indices", "group_indices");
    check(tshmem_moe_inplace_unique_group_indices(&a, num_groups, stream_of(s)));
  });
  m.def("get_fused_mapping", [](nb::handle topk_idx, int64_t num_experts, int64_t num_expanded_tokens,
                                int64_t alignment, nb::tuple outs, uintptr_t s) {
    const char *c = "get_fused_mapping";
    static const char *names[7] = {"pos_to_expert", "pos_to_token", "pos_to_token_topk",    "token_topk_to_pos",
                                   "expert_start",  "expert_end",   "num_tokens_per_expert"};
    if (nb::len(outs) != 7) raise_arg(PyExc_TypeError, c, "outs", "must hold 7 tensors");
    tshmem_moe_tensor_t a = view(topk_idx, c, "topk_idx");
    tshmem_moe_fused_mapping_t mp{};
    tshmem_moe_tensor_t *dst[7] = {&mp.pos_to_expert, &mp.pos_to_token, &mp.pos_to_token_topk,    &mp.token_topk_to_pos,
                                   &mp.expert_start,  &mp.expert_end,   &mp.num_tokens_per_expert};
    for (size_t i = 0; i < 7; ++i) *dst[i] = view(outs[i], c, names[i]);
    // The outputs are the caller's (never library-allocated), so the call never takes the library's own sync
    // path: force_no_sync = 1 with the length the Python layer chose.
    check(tshmem_moe_get_fused_mapping(&a, num_experts, num_expanded_tokens, alignment, 1, &mp, nullptr, nullptr,
                                       stream_of(s)));
  });
  m.def("expand_to_fused", [](nb::handle x, nb::handle pos, nb::handle pte, nb::handle out, uintptr_t s) {
    const char *c = "expand_to_fused";
    tshmem_moe_tensor_t a = view(x, c, "x"), p = view(pos, c, "token_topk_to_pos"), e = view(pte, c, "pos_to_expert"),
                        o = view(out, c, "out");
    check(tshmem_moe_expand_to_fused(&a, &p, &e, &o, stream_of(s)));
  });
  m.def("expand_to_fused_with_sf", [](nb::handle x, nb::handle x_sf, int64_t npc, nb::handle pos, nb::handle pte,
                                      bool col_major, nb::handle out, nb::handle out_sf, uintptr_t s) {
    const char *c = "expand_to_fused_with_sf";
    tshmem_moe_tensor_t a = view(x, c, "x"), f = view(x_sf, c, "x_sf"), p = view(pos, c, "token_topk_to_pos"),
                        e = view(pte, c, "pos_to_expert"), o = view(out, c, "out"), of = view(out_sf, c, "out_sf");
    check(tshmem_moe_expand_to_fused_with_sf(&a, &f, npc, &p, &e, col_major ? 1 : 0, &o, &of, stream_of(s)));
  });
  m.def(
      "reduce_fused",
      [](nb::handle x, nb::handle x_sf, nb::handle w, nb::handle pos, const std::string &fp8, nb::handle sf,
         nb::handle out, uintptr_t s) {
        const char *c = "reduce_fused";
        tshmem_moe_tensor_t a = view(x, c, "x"), p = view(pos, c, "token_topk_to_pos"), o = view(out, c, "out");
        Opt f(x_sf, c, "x_sf"), ww(w, c, "topk_weights"), sc(sf, c, "sf");
        check(tshmem_moe_reduce_fused(&a, f.get(), ww.get(), &p, fp8.c_str(), sc.get(), &o, stream_of(s)));
      },
      nb::arg("x"), nb::arg("x_sf").none(), nb::arg("topk_weights").none(), nb::arg("token_topk_to_pos"),
      nb::arg("fp8_format"), nb::arg("sf").none(), nb::arg("out"), nb::arg("stream"));
}
