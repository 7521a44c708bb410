// tshmem._ep_C: the C API of libtshmem_ep (include/tshmem/ep.h) for the Python module tshmem.ep, without libtorch.
// Pointers and streams cross as ints: tshmem/ep.py reads them from torch tensors and streams, allocates every output
// and checks what only it can see (tensor dtypes, devices, shapes, contiguity). The rules the C API states are
// checked there alone; a failing call raises the exception class registered for its status, with the library's
// message ("<call>: <argument> = <value>; <rule>") prefixed by the Python call that made it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tshmem/ep.h"

namespace nb = nanobind;

namespace {

// Registered once by tshmem/ep.py: the exception class of each status (a tuple indexed by tshmem_ep_status_t).
nb::object *g_errors = nullptr;

[[noreturn]] void raise_status(tshmem_ep_status_t status, const char *call) {
  PyObject *cls = PyExc_RuntimeError;
  if (g_errors && g_errors->is_valid() && static_cast<size_t>(status) < nb::len(*g_errors))
    cls = (*g_errors)[static_cast<size_t>(status)].ptr();
  PyErr_Format(cls, "%s: %s", call, tshmem_ep_last_error());
  throw nb::python_error();
}

// `call` names the Python entry point for the message (the C message names the C call and the argument).
inline void check(tshmem_ep_status_t s, const char *call) {
  if (s != TSHMEM_EP_SUCCESS) raise_status(s, call);
}

template <class T>
T *ptr(uintptr_t p) {
  return reinterpret_cast<T *>(p);
}
inline cudaStream_t stream_of(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }
inline tshmem_ep_buffer_t buf(uintptr_t b) { return reinterpret_cast<tshmem_ep_buffer_t>(b); }
inline tshmem_ep_handle_t hdl(uintptr_t h) { return reinterpret_cast<tshmem_ep_handle_t>(h); }
inline tshmem_ep_dtype_t dt(int d) { return static_cast<tshmem_ep_dtype_t>(d); }

}  // namespace

NB_MODULE(_ep_C, m) {
  g_errors = new nb::object(nb::tuple());  // lives as long as the process, as the module does

  m.def("_register", [](nb::tuple errors) { *g_errors = errors; });
  m.attr("FP8_BLOCK") = TSHMEM_EP_FP8_BLOCK;
  m.attr("MAX_TOPK") = TSHMEM_EP_MAX_TOPK;
  m.attr("MAX_PES") = TSHMEM_EP_MAX_PES;
  m.attr("NUM_STATUS") = static_cast<int>(TSHMEM_EP_NUM_STATUS);
  m.attr("BFLOAT16") = static_cast<int>(TSHMEM_EP_BFLOAT16);
  m.attr("FLOAT8_E4M3") = static_cast<int>(TSHMEM_EP_FLOAT8_E4M3);
  m.attr("FLOAT32") = static_cast<int>(TSHMEM_EP_FLOAT32);
  m.attr("FLOAT16") = static_cast<int>(TSHMEM_EP_FLOAT16);
  m.attr("INT64") = static_cast<int>(TSHMEM_EP_INT64);
  m.attr("INT32") = static_cast<int>(TSHMEM_EP_INT32);

  m.def("status_string",
        [](int s) { return std::string(tshmem_ep_status_string(static_cast<tshmem_ep_status_t>(s))); });
  m.def("dtype_size", [](int d) { return tshmem_ep_dtype_size(dt(d)); });
  m.def("dispatch_row_bytes",
        [](int64_t hidden, int d, int64_t num_topk) { return tshmem_ep_dispatch_row_bytes(hidden, dt(d), num_topk); });
  m.def("combine_row_bytes",
        [](int64_t hidden, int64_t num_topk) { return tshmem_ep_combine_row_bytes(hidden, num_topk); });
  m.def("buffer_size_hint",
        [](int n_pes, int64_t max_tokens, int64_t hidden, int d, int64_t num_topk, const char *call) {
          size_t nvl = 0, rdma = 0;
          check(tshmem_ep_buffer_size_hint(n_pes, max_tokens, hidden, dt(d), num_topk, &nvl, &rdma), call);
          return nb::make_tuple(nvl, rdma);
        });

  // ---- buffer (create and destroy are collective and host-blocking: the GIL is released while they wait)
  m.def("buffer_create", [](size_t nvl, size_t rdma, const char *call) {
    tshmem_ep_buffer_t b = nullptr;
    tshmem_ep_status_t s;
    {
      nb::gil_scoped_release release;
      s = tshmem_ep_buffer_create(nvl, rdma, &b);
    }
    check(s, call);
    return reinterpret_cast<uintptr_t>(b);
  });
  m.def("buffer_destroy", [](uintptr_t b, const char *call) {
    tshmem_ep_status_t s;
    {
      nb::gil_scoped_release release;
      s = tshmem_ep_buffer_destroy(buf(b));
    }
    check(s, call);
  });
  m.def("buffer_info", [](uintptr_t b, const char *call) {
    tshmem_ep_buffer_info_t i{};
    check(tshmem_ep_buffer_info(buf(b), &i), call);
    nb::dict d;
    d["my_pe"] = i.my_pe;
    d["n_pes"] = i.n_pes;
    d["pes_per_node"] = i.pes_per_node;
    d["num_nodes"] = i.num_nodes;
    d["device"] = i.device;
    d["num_blocks"] = i.num_blocks;
    d["num_nvl_bytes"] = i.num_nvl_bytes;
    d["num_rdma_bytes"] = i.num_rdma_bytes;
    return d;
  });
  m.def("buffer_set_num_blocks",
        [](uintptr_t b, int n, const char *call) { check(tshmem_ep_buffer_set_num_blocks(buf(b), n), call); });
  m.def("buffer_set_timeout_ms",
        [](uintptr_t b, int64_t ms, const char *call) { check(tshmem_ep_buffer_set_timeout_ms(buf(b), ms), call); });
  m.def("check_device_errors", [](uintptr_t b, uintptr_t s, const char *call) {
    tshmem_ep_status_t st;
    {
      nb::gil_scoped_release release;
      st = tshmem_ep_check_device_errors(buf(b), stream_of(s));
    }
    check(st, call);
  });

  // ---- layout
  m.def("get_dispatch_layout", [](uintptr_t b, uintptr_t topk_idx, int64_t num_tokens, int64_t num_topk,
                                  int64_t num_experts, uintptr_t per_rank, uintptr_t per_rdma_rank,
                                  uintptr_t per_expert, uintptr_t in_rank, uintptr_t s, const char *call) {
    tshmem_ep_status_t st;
    {
      nb::gil_scoped_release release;  // waits for the stream when the device found a bad expert id
      st = tshmem_ep_get_dispatch_layout(buf(b), ptr<const int64_t>(topk_idx), num_tokens, num_topk, num_experts,
                                         ptr<int32_t>(per_rank), ptr<int32_t>(per_rdma_rank), ptr<int32_t>(per_expert),
                                         ptr<bool>(in_rank), stream_of(s));
    }
    check(st, call);
  });

  // ---- handles and notify
  m.def("handle_create", [](uintptr_t b, int64_t max_tokens, int64_t num_experts, const char *call) {
    tshmem_ep_handle_t h = nullptr;
    check(tshmem_ep_handle_create(buf(b), max_tokens, num_experts, &h), call);
    return reinterpret_cast<uintptr_t>(h);
  });
  m.def("handle_destroy", [](uintptr_t h, const char *call) {
    tshmem_ep_status_t s;
    {
      nb::gil_scoped_release release;
      s = tshmem_ep_handle_destroy(hdl(h));
    }
    check(s, call);
  });
  m.def("handle_device_counts", [](uintptr_t h, const char *call) {
    const int32_t *counts = nullptr;
    check(tshmem_ep_handle_device_counts(hdl(h), &counts), call);
    return reinterpret_cast<uintptr_t>(counts);
  });
  // (device pointer, words per row) of the handle's published matrix [n_pes, row_words] int32.
  m.def("handle_published_matrix", [](uintptr_t h, const char *call) {
    const int32_t *matrix = nullptr;
    int64_t row_words = 0;
    check(tshmem_ep_handle_published_matrix(hdl(h), &matrix, &row_words), call);
    return nb::make_tuple(reinterpret_cast<uintptr_t>(matrix), row_words);
  });
  // Returns (num_recv_tokens, [aligned count per local expert]); (-1, None) with num_worst_tokens > 0.
  m.def("notify", [](uintptr_t b, uintptr_t h, uintptr_t in_rank, uintptr_t per_expert, int64_t num_tokens,
                     int64_t num_experts, int64_t expert_alignment, int64_t num_worst_tokens, int64_t num_local_experts,
                     uintptr_t s, const char *call) {
    int64_t num_recv = -1;
    std::vector<int32_t> per_local(static_cast<size_t>(num_local_experts > 0 ? num_local_experts : 0));
    tshmem_ep_status_t st;
    {
      nb::gil_scoped_release release;  // without num_worst_tokens it waits for the stream
      st = tshmem_ep_notify(buf(b), hdl(h), ptr<const bool>(in_rank), ptr<const int32_t>(per_expert), num_tokens,
                            num_experts, expert_alignment, num_worst_tokens, &num_recv,
                            per_local.empty() ? nullptr : per_local.data(), stream_of(s));
    }
    check(st, call);
    if (num_recv < 0) return nb::make_tuple(num_recv, nb::none());
    nb::list counts;
    for (int32_t c : per_local) counts.append(c);
    return nb::make_tuple(num_recv, counts);
  });

  // ---- dispatch and combine (on the stream; they return once launched)
  m.def("dispatch", [](uintptr_t b, uintptr_t h, uintptr_t x, int x_dtype, uintptr_t x_scales, int64_t num_tokens,
                       int64_t hidden, uintptr_t topk_idx, uintptr_t topk_weights, int64_t num_topk, uintptr_t recv_x,
                       uintptr_t recv_x_scales, uintptr_t recv_topk_idx, uintptr_t recv_topk_weights,
                       uintptr_t recv_src_idx, int64_t recv_capacity, uintptr_t s, const char *call) {
    check(tshmem_ep_dispatch(buf(b), hdl(h), ptr<const void>(x), dt(x_dtype), ptr<const float>(x_scales), num_tokens,
                             hidden, ptr<const int64_t>(topk_idx), ptr<const float>(topk_weights), num_topk,
                             ptr<void>(recv_x), ptr<float>(recv_x_scales), ptr<int64_t>(recv_topk_idx),
                             ptr<float>(recv_topk_weights), ptr<int32_t>(recv_src_idx), recv_capacity, stream_of(s)),
          call);
  });
  m.def("combine", [](uintptr_t b, uintptr_t h, uintptr_t x, int x_dtype, int64_t num_rows, int64_t hidden,
                      uintptr_t topk_weights, int64_t num_topk, uintptr_t bias0, uintptr_t bias1, uintptr_t combined_x,
                      uintptr_t combined_topk_weights, uintptr_t s, const char *call) {
    check(tshmem_ep_combine(buf(b), hdl(h), ptr<const void>(x), dt(x_dtype), num_rows, hidden,
                            ptr<const float>(topk_weights), num_topk, ptr<const void>(bias0), ptr<const void>(bias1),
                            ptr<void>(combined_x), ptr<float>(combined_topk_weights), stream_of(s)),
          call);
  });

  // ---- low-latency mode (on the stream; nothing waits for the device). Each returns the slot it used.
  m.attr("LL_SEND") = TSHMEM_EP_LL_SEND;
  m.attr("LL_RECV") = TSHMEM_EP_LL_RECV;
  m.attr("LL_BOTH") = TSHMEM_EP_LL_BOTH;
  m.def("ll_rdma_size_hint", [](int64_t max_tokens, int64_t hidden, int n_pes, int64_t num_experts) {
    return tshmem_ep_low_latency_rdma_size_hint(max_tokens, hidden, n_pes, num_experts);
  });
  m.def("ll_dispatch",
        [](uintptr_t b, uintptr_t x, uintptr_t topk_idx, int64_t num_tokens, int64_t hidden, int64_t num_topk,
           int64_t max_tokens, int64_t num_experts, bool use_fp8, bool round_scale, bool use_ue8m0, uintptr_t recv_x,
           uintptr_t recv_scales, uintptr_t recv_count, uintptr_t src_info, uintptr_t layout_range, uintptr_t cum_stats,
           uintptr_t wait_stats, int phases, int slot, uintptr_t s, const char *call) {
          tshmem_ep_ll_dispatch_args_t a{};
          a.x = ptr<const void>(x);
          a.topk_idx = ptr<const int64_t>(topk_idx);
          a.num_tokens = num_tokens;
          a.hidden = hidden;
          a.num_topk = num_topk;
          a.num_max_dispatch_tokens_per_rank = max_tokens;
          a.num_experts = num_experts;
          a.use_fp8 = use_fp8;
          a.round_scale = round_scale;
          a.use_ue8m0 = use_ue8m0;
          a.packed_recv_x = ptr<void>(recv_x);
          a.packed_recv_x_scales = ptr<void>(recv_scales);
          a.packed_recv_count = ptr<int32_t>(recv_count);
          a.packed_recv_src_info = ptr<int32_t>(src_info);
          a.packed_recv_layout_range = ptr<int64_t>(layout_range);
          a.cumulative_local_expert_recv_stats = ptr<int32_t>(cum_stats);
          a.dispatch_wait_recv_cost_stats = ptr<int64_t>(wait_stats);
          check(tshmem_ep_low_latency_dispatch(buf(b), &a, phases, &slot, stream_of(s)), call);
          return slot;
        });
  m.def("ll_combine", [](uintptr_t b, uintptr_t x, uintptr_t topk_idx, uintptr_t topk_weights, uintptr_t src_info,
                         uintptr_t layout_range, int64_t num_tokens, int64_t hidden, int64_t num_topk,
                         int64_t max_tokens, int64_t num_experts, bool zero_copy, uintptr_t combined_x,
                         uintptr_t wait_stats, int phases, int slot, uintptr_t s, const char *call) {
    tshmem_ep_ll_combine_args_t a{};
    a.x = ptr<const void>(x);
    a.topk_idx = ptr<const int64_t>(topk_idx);
    a.topk_weights = ptr<const float>(topk_weights);
    a.src_info = ptr<const int32_t>(src_info);
    a.layout_range = ptr<const int64_t>(layout_range);
    a.num_tokens = num_tokens;
    a.hidden = hidden;
    a.num_topk = num_topk;
    a.num_max_dispatch_tokens_per_rank = max_tokens;
    a.num_experts = num_experts;
    a.zero_copy = zero_copy;
    a.combined_x = ptr<void>(combined_x);
    a.combine_wait_recv_cost_stats = ptr<int64_t>(wait_stats);
    check(tshmem_ep_low_latency_combine(buf(b), &a, phases, &slot, stream_of(s)), call);
    return slot;
  });
  m.def("ll_next_combine_buffer",
        [](uintptr_t b, int64_t max_tokens, int64_t hidden, int64_t num_experts, const char *call) {
          void *p = nullptr;
          check(tshmem_ep_low_latency_next_combine_buffer(buf(b), max_tokens, hidden, num_experts, &p), call);
          return reinterpret_cast<uintptr_t>(p);
        });
  m.def("ll_clean",
        [](uintptr_t b, int64_t max_tokens, int64_t hidden, int64_t num_experts, uintptr_t s, const char *call) {
          tshmem_ep_status_t st;
          {
            nb::gil_scoped_release release;
            st = tshmem_ep_low_latency_clean(buf(b), max_tokens, hidden, num_experts, stream_of(s));
          }
          check(st, call);
        });
  m.def("ll_update_mask", [](uintptr_t b, int pe, bool mask, uintptr_t s, const char *call) {
    check(tshmem_ep_low_latency_update_mask(buf(b), pe, mask ? 1 : 0, stream_of(s)), call);
  });
  m.def("ll_query_mask", [](uintptr_t b, uintptr_t status, uintptr_t s, const char *call) {
    check(tshmem_ep_low_latency_query_mask(buf(b), ptr<int32_t>(status), stream_of(s)), call);
  });
  m.def("ll_clean_mask", [](uintptr_t b, uintptr_t s, const char *call) {
    check(tshmem_ep_low_latency_clean_mask(buf(b), stream_of(s)), call);
  });
}
