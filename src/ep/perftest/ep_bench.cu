// Dispatch and combine in DeepEP's normal-mode benchmark shape, with DeepEP's figure of merit: algorithm bandwidth
// = bytes this PE receives (dispatch: fp8 rows and their scales; combine: the bf16 rows it sends back, the same
// count) / time of one call. The link limit is measured in the same run: a device-to-device copy on this GPU
// (the loopback limit of one PE) and, with 2 or more PEs, a copy into the next PE's heap through its peer
// pointer. Options: NVSHMEM's (-n iterations, -w warm-up, --json FILE) plus --tokens, --hidden, --topk,
// --experts (default 4096, 7168, 8, 256) and --blocks (data kernel blocks, 0: the default).
// --low-latency: the low-latency rows instead, at DeepEP's low-latency shape (128 tokens per PE unless --tokens
// says otherwise): fp8 dispatch and bf16 combine, each timed inside dispatch + combine pairs (the two slots
// alternate), algorithm bandwidth = rows this PE receives x row bytes / time, beside the same copies.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_config.h"
#include "cuda_check.h"
#include "tshmem/ep.h"
#include "tshmem/tshmem.h"
#include "tshmem/tshmemx.h"

namespace {

using tshmem_perf::BenchConfig;
using tshmem_perf::fmt_double;
using tshmem_perf::Reporter;

struct Shape {
  int64_t tokens = 4096, hidden = 7168, topk = 8, experts = 256;
  int blocks = 0;
  bool low_latency = false, tokens_given = false;
};

/// Takes this benchmark's own options out of argv (the rest goes to the shared parser).
bool take_shape(int *argc, char **argv, Shape *s) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    if (a == "--low-latency") {
      s->low_latency = true;
      continue;
    }
    if (a == "--tokens") s->tokens_given = true;
    int64_t *dst = a == "--tokens"    ? &s->tokens
                   : a == "--hidden"  ? &s->hidden
                   : a == "--topk"    ? &s->topk
                   : a == "--experts" ? &s->experts
                                      : nullptr;
    if (dst || a == "--blocks") {
      if (i + 1 >= *argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        return false;
      }
      char *end = nullptr;
      const long long v = std::strtoll(argv[++i], &end, 10);
      if (!end || *end || v < 0) {
        std::fprintf(stderr, "%s = %s; must be a non-negative integer\n", a.c_str(), argv[i]);
        return false;
      }
      if (dst)
        *dst = v;
      else
        s->blocks = static_cast<int>(v);
      continue;
    }
    argv[out++] = argv[i];
  }
  *argc = out;
  return true;
}

#define CHECK_EP(call)                                                        \
  do {                                                                        \
    const tshmem_ep_status_t s_ = (call);                                     \
    if (s_ != TSHMEM_EP_SUCCESS) {                                            \
      std::fprintf(stderr, "%s failed: %s\n", #call, tshmem_ep_last_error()); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                           \
    }                                                                         \
  } while (0)

/// Mean time of one `op` in microseconds, the slowest PE's (every PE waits for the others in each op anyway).
template <class Op>
double time_us(const BenchConfig &c, cudaStream_t st, Op &&op) {
  for (int i = 0; i < c.warmup_iters; ++i) op();
  PERF_CUDA(cudaStreamSynchronize(st));
  tshmem_barrier_all();
  cudaEvent_t a, b;
  PERF_CUDA(cudaEventCreate(&a));
  PERF_CUDA(cudaEventCreate(&b));
  PERF_CUDA(cudaEventRecord(a, st));
  for (int i = 0; i < c.iters; ++i) op();
  PERF_CUDA(cudaEventRecord(b, st));
  PERF_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  PERF_CUDA(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  double us = 1000.0 * ms / c.iters, worst = 0;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

double mean_over_pes(double v) {
  double sum = 0;
  int n = 1;
  MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return sum / n;
}

/// Mean times of the two halves of `iters` op pairs, each half timed by events around it (slowest PE's), in us.
template <class A, class B>
std::pair<double, double> time_pair_us(const BenchConfig &c, cudaStream_t st, A &&first, B &&second) {
  for (int i = 0; i < c.warmup_iters; ++i) {
    first();
    second();
  }
  PERF_CUDA(cudaStreamSynchronize(st));
  tshmem_barrier_all();
  std::vector<cudaEvent_t> ev(static_cast<size_t>(3 * c.iters));
  for (auto &e : ev) PERF_CUDA(cudaEventCreate(&e));
  for (int i = 0; i < c.iters; ++i) {
    PERF_CUDA(cudaEventRecord(ev[static_cast<size_t>(3 * i)], st));
    first();
    PERF_CUDA(cudaEventRecord(ev[static_cast<size_t>(3 * i + 1)], st));
    second();
    PERF_CUDA(cudaEventRecord(ev[static_cast<size_t>(3 * i + 2)], st));
  }
  PERF_CUDA(cudaStreamSynchronize(st));
  double a = 0, b = 0;
  for (int i = 0; i < c.iters; ++i) {
    float x = 0, y = 0;
    PERF_CUDA(cudaEventElapsedTime(&x, ev[static_cast<size_t>(3 * i)], ev[static_cast<size_t>(3 * i + 1)]));
    PERF_CUDA(cudaEventElapsedTime(&y, ev[static_cast<size_t>(3 * i + 1)], ev[static_cast<size_t>(3 * i + 2)]));
    a += x;
    b += y;
  }
  for (auto &e : ev) cudaEventDestroy(e);
  double us[2] = {1000.0 * a / c.iters, 1000.0 * b / c.iters}, worst[2] = {0, 0};
  MPI_Allreduce(us, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return {worst[0], worst[1]};
}

/// Routing of T tokens: K distinct experts of E per token, uniform (drawn as DeepEP's benchmark does, from random
/// scores and top-k), [T][K].
std::vector<int64_t> uniform_routing(int64_t T, int64_t K, int64_t E, std::mt19937 &rng) {
  std::vector<int64_t> idx(static_cast<size_t>(T * K)), perm(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) perm[static_cast<size_t>(e)] = e;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t j = k + static_cast<int64_t>(rng() % static_cast<uint32_t>(E - k));
      std::swap(perm[static_cast<size_t>(k)], perm[static_cast<size_t>(j)]);
      idx[static_cast<size_t>(t * K + k)] = perm[static_cast<size_t>(k)];
    }
  }
  return idx;
}

/// One row of a table: the op, the mean rows received, the slowest PE's time and the mean bandwidth over PEs.
struct EpRow {
  Reporter &report;
  double mean_recv;
  void operator()(const char *op, double us, double bytes) const {
    report.row({op, fmt_double(mean_recv, 0), fmt_double(us, 1), fmt_double(mean_over_pes(bytes / us / 1e3), 2)});
  }
};

/// The end of a table's note: the PEs, nodes and blocks of `buf`, and what the figures are.
std::string run_note(tshmem_ep_buffer_t buf, int n) {
  tshmem_ep_buffer_info_t info{};
  CHECK_EP(tshmem_ep_buffer_info(buf, &info));
  return std::to_string(n) + " PEs, " + std::to_string(info.num_nodes) + " node(s), " +
         std::to_string(info.num_blocks) + " blocks; times are the slowest PE's, bandwidths the mean over PEs";
}

/// The link limit, as rows link_copy_local and (where every PE reaches the next one by load/store) link_copy_peer:
/// a device copy of `bytes` (at least 1 MiB; the largest PE's, since the heap allocation below is collective) on
/// this GPU and into the next PE's heap.
void link_copy_rows(const BenchConfig &config, cudaStream_t st, double bytes, int n, int me, const EpRow &row) {
  unsigned long long mine = std::max<unsigned long long>(static_cast<unsigned long long>(bytes), 1 << 20), most = 0;
  MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  const size_t copy_bytes = static_cast<size_t>(most);
  char *src = nullptr;
  PERF_CUDA(cudaMalloc(&src, copy_bytes));
  char *sym = static_cast<char *>(tshmem_malloc(copy_bytes));
  if (sym == nullptr) {
    std::fprintf(stderr, "tshmem_malloc(%zu) failed: %s\n", copy_bytes, tshmemx_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const double t_local =
      time_us(config, st, [&] { PERF_CUDA(cudaMemcpyAsync(sym, src, copy_bytes, cudaMemcpyDeviceToDevice, st)); });
  char *peer = n > 1 ? static_cast<char *>(tshmem_ptr(sym, (me + 1) % n)) : nullptr;
  int have_peer = peer != nullptr, all_peer = 0;
  MPI_Allreduce(&have_peer, &all_peer, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  row("link_copy_local", t_local, static_cast<double>(copy_bytes));
  if (all_peer) {
    const double t_peer =
        time_us(config, st, [&] { PERF_CUDA(cudaMemcpyAsync(peer, src, copy_bytes, cudaMemcpyDeviceToDevice, st)); });
    row("link_copy_peer", t_peer, static_cast<double>(copy_bytes));
  }
  tshmem_free(sym);
  PERF_CUDA(cudaFree(src));
}

/// The low-latency rows (--low-latency): DeepEP's low_latency_dispatch (fp8) and low_latency_combine (bf16).
void run_low_latency(const Shape &shape, const BenchConfig &config, Reporter &report, int n, int me) {
  const int64_t T = shape.tokens, H = shape.hidden, K = shape.topk, E = shape.experts, L = E / n;
  std::mt19937 rng(4321u + static_cast<unsigned>(me));
  const std::vector<int64_t> idx = uniform_routing(T, K, E, rng);
  const std::vector<float> w(idx.size(), 1.0f / static_cast<float>(K));
  const size_t rdma = tshmem_ep_low_latency_rdma_size_hint(T, H, n, E);
  if (rdma == 0) {
    if (me == 0) std::fprintf(stderr, "tshmem_ep_bench --low-latency: shape out of range\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  tshmem_ep_buffer_t buf = nullptr;
  CHECK_EP(tshmem_ep_buffer_create(0, rdma, &buf));
  CHECK_EP(tshmem_ep_buffer_set_num_blocks(buf, shape.blocks));
  cudaStream_t st;
  PERF_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const size_t rows = static_cast<size_t>(L) * static_cast<size_t>(n * T);
  void *x, *rx, *rsc, *y, *out, *d_w;
  int64_t *d_idx, *range;
  int32_t *count, *src;
  PERF_CUDA(cudaMalloc(&x, static_cast<size_t>(T * H) * 2 + 16));
  PERF_CUDA(cudaMemset(x, 0x3c, static_cast<size_t>(T * H) * 2 + 16));
  PERF_CUDA(cudaMalloc(&d_idx, sizeof(int64_t) * idx.size() + 8));
  PERF_CUDA(cudaMemcpy(d_idx, idx.data(), sizeof(int64_t) * idx.size(), cudaMemcpyHostToDevice));
  PERF_CUDA(cudaMalloc(&d_w, sizeof(float) * w.size() + 4));
  PERF_CUDA(cudaMemcpy(d_w, w.data(), sizeof(float) * w.size(), cudaMemcpyHostToDevice));
  PERF_CUDA(cudaMalloc(&rx, rows * static_cast<size_t>(H)));
  PERF_CUDA(cudaMalloc(&rsc, rows * static_cast<size_t>(H / 128) * 4));
  PERF_CUDA(cudaMalloc(&y, rows * static_cast<size_t>(H) * 2));
  PERF_CUDA(cudaMemset(y, 0x3c, rows * static_cast<size_t>(H) * 2));
  PERF_CUDA(cudaMalloc(&out, static_cast<size_t>(T * H) * 2 + 16));
  PERF_CUDA(cudaMalloc(&count, sizeof(int32_t) * static_cast<size_t>(L)));
  PERF_CUDA(cudaMalloc(&src, sizeof(int32_t) * rows));
  PERF_CUDA(cudaMalloc(&range, sizeof(int64_t) * static_cast<size_t>(L * n)));
  tshmem_ep_ll_dispatch_args_t da{};
  da.x = x;
  da.topk_idx = d_idx;
  da.num_tokens = T;
  da.hidden = H;
  da.num_topk = K;
  da.num_max_dispatch_tokens_per_rank = T;
  da.num_experts = E;
  da.use_fp8 = 1;
  da.packed_recv_x = rx;
  da.packed_recv_x_scales = rsc;
  da.packed_recv_count = count;
  da.packed_recv_src_info = src;
  da.packed_recv_layout_range = range;
  tshmem_ep_ll_combine_args_t ca{};
  ca.x = y;
  ca.topk_idx = d_idx;
  ca.topk_weights = static_cast<const float *>(d_w);
  ca.src_info = src;
  ca.layout_range = range;
  ca.num_tokens = T;
  ca.hidden = H;
  ca.num_topk = K;
  ca.num_max_dispatch_tokens_per_rank = T;
  ca.num_experts = E;
  ca.combined_x = out;
  auto dispatch = [&] { CHECK_EP(tshmem_ep_low_latency_dispatch(buf, &da, TSHMEM_EP_LL_BOTH, nullptr, st)); };
  auto combine = [&] { CHECK_EP(tshmem_ep_low_latency_combine(buf, &ca, TSHMEM_EP_LL_BOTH, nullptr, st)); };
  const auto halves = time_pair_us(config, st, dispatch, combine);
  const double t_pair = time_us(config, st, [&] {
    dispatch();
    combine();
  });
  std::vector<int32_t> counts(static_cast<size_t>(L));
  PERF_CUDA(cudaMemcpy(counts.data(), count, sizeof(int32_t) * counts.size(), cudaMemcpyDeviceToHost));
  double recv = 0;
  for (int32_t c : counts) recv += c;
  const double disp_bytes = recv * static_cast<double>(H + H / 128 * 4);
  const double comb_bytes = recv * static_cast<double>(H * 2);
  report.note("DeepEP low-latency shape: " + std::to_string(T) + " tokens per PE, hidden " + std::to_string(H) +
              ", top-" + std::to_string(K) + " of " + std::to_string(E) + " experts, fp8 dispatch, bf16 combine; " +
              run_note(buf, n));
  report.header("ep low-latency dispatch/combine", {"op", "recv_rows", "time(us)", "BW (GB/sec)"});
  const EpRow row{report, mean_over_pes(recv)};
  row("ll_dispatch_fp8", halves.first, disp_bytes);
  row("ll_combine_bf16", halves.second, comb_bytes);
  row("ll_dispatch+combine", t_pair, disp_bytes + comb_bytes);
  // The copies of the same run: the combine's bytes.
  link_copy_rows(config, st, comb_bytes, n, me, row);
  CHECK_EP(tshmem_ep_check_device_errors(buf, st));
  for (void *p : {x, rx, rsc, y, out, d_w, static_cast<void *>(d_idx), static_cast<void *>(range),
                  static_cast<void *>(count), static_cast<void *>(src)})
    cudaFree(p);
  CHECK_EP(tshmem_ep_buffer_destroy(buf));
  cudaStreamDestroy(st);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Shape shape;
  BenchConfig config;
  config.iters = 20;
  config.warmup_iters = 5;
  int code = 0;
  if (!take_shape(&argc, argv, &shape) || !tshmem_perf::parse_args(argc, argv, "tshmem_ep_bench", &config, &code)) {
    MPI_Finalize();
    return code ? code : 1;
  }
  int devices = 0, have = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int me_world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me_world);
  if (!all) {
    if (me_world == 0) std::printf("tshmem_ep_bench: skipped: no GPU\n");
    MPI_Finalize();
    return 0;
  }
  if (tshmem_init() != 0 || tshmemx_cuda_device() < 0) {
    std::printf("tshmem_ep_bench: skipped: no GPU heap (%s)\n", tshmemx_last_error());
    tshmem_finalize();
    MPI_Finalize();
    return 0;
  }
  const int n = tshmem_n_pes(), me = tshmem_my_pe();
  if (shape.low_latency) {
    if (!shape.tokens_given) shape.tokens = 128;
    Reporter ll_report(config, "ep_bench_low_latency", me == 0);
    ll_report.set_labels("tshmem", "default");
    run_low_latency(shape, config, ll_report, n, me);
    tshmem_finalize();
    MPI_Finalize();
    return 0;
  }
  const int64_t T = shape.tokens, H = shape.hidden, K = shape.topk, E = shape.experts;
  Reporter report(config, "ep_bench", me == 0);
  report.set_labels("tshmem", "default");
  // Uniform routing; fp8 rows of random bytes with their scales; bf16 combine rows.
  std::mt19937 rng(1234u + static_cast<unsigned>(me));
  const std::vector<int64_t> idx = uniform_routing(T, K, E, rng);
  size_t nvl = 0, rdma = 0;
  CHECK_EP(tshmem_ep_buffer_size_hint(n, T, H, TSHMEM_EP_FLOAT8_E4M3, K, &nvl, &rdma));
  tshmem_ep_buffer_t buf = nullptr;
  const bool one_node = tshmemx_local_n_pes() == n;
  CHECK_EP(tshmem_ep_buffer_create(nvl, one_node ? 0 : rdma, &buf));
  CHECK_EP(tshmem_ep_buffer_set_num_blocks(buf, shape.blocks));
  cudaStream_t st;
  PERF_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int64_t *d_idx;
  float *d_w, *d_scales;
  uint8_t *d_x;
  int32_t *per_rank, *per_expert;
  bool *in_rank;
  PERF_CUDA(cudaMalloc(&d_idx, sizeof(int64_t) * idx.size()));
  PERF_CUDA(cudaMemcpy(d_idx, idx.data(), sizeof(int64_t) * idx.size(), cudaMemcpyHostToDevice));
  PERF_CUDA(cudaMalloc(&d_w, sizeof(float) * idx.size()));
  PERF_CUDA(cudaMemset(d_w, 0, sizeof(float) * idx.size()));
  PERF_CUDA(cudaMalloc(&d_scales, sizeof(float) * static_cast<size_t>(T * (H / 128))));
  PERF_CUDA(cudaMemset(d_scales, 0, sizeof(float) * static_cast<size_t>(T * (H / 128))));
  PERF_CUDA(cudaMalloc(&d_x, static_cast<size_t>(T * H)));
  PERF_CUDA(cudaMemset(d_x, 0x31, static_cast<size_t>(T * H)));
  PERF_CUDA(cudaMalloc(&per_rank, sizeof(int32_t) * static_cast<size_t>(n)));
  PERF_CUDA(cudaMalloc(&per_expert, sizeof(int32_t) * static_cast<size_t>(E)));
  PERF_CUDA(cudaMalloc(&in_rank, static_cast<size_t>(T * n)));
  CHECK_EP(tshmem_ep_get_dispatch_layout(buf, d_idx, T, K, E, per_rank, nullptr, per_expert, in_rank, st));
  tshmem_ep_handle_t h = nullptr;
  CHECK_EP(tshmem_ep_handle_create(buf, T, E, &h));
  int64_t R = 0;
  CHECK_EP(tshmem_ep_notify(buf, h, in_rank, per_expert, T, E, 1, 0, &R, nullptr, st));
  uint8_t *rx;
  float *rsc, *rw;
  int64_t *ridx;
  uint16_t *cx, *out;
  const size_t Rz = static_cast<size_t>(std::max<int64_t>(R, 1));
  PERF_CUDA(cudaMalloc(&rx, Rz * static_cast<size_t>(H)));
  PERF_CUDA(cudaMalloc(&rsc, sizeof(float) * Rz * static_cast<size_t>(H / 128)));
  PERF_CUDA(cudaMalloc(&rw, sizeof(float) * Rz * static_cast<size_t>(K)));
  PERF_CUDA(cudaMalloc(&ridx, sizeof(int64_t) * Rz * static_cast<size_t>(K)));
  PERF_CUDA(cudaMalloc(&cx, sizeof(uint16_t) * Rz * static_cast<size_t>(H)));
  PERF_CUDA(cudaMemset(cx, 0x3c, sizeof(uint16_t) * Rz * static_cast<size_t>(H)));
  PERF_CUDA(cudaMalloc(&out, sizeof(uint16_t) * static_cast<size_t>(T * H)));

  auto dispatch = [&] {
    CHECK_EP(tshmem_ep_dispatch(buf, h, d_x, TSHMEM_EP_FLOAT8_E4M3, d_scales, T, H, d_idx, d_w, K, rx, rsc, ridx, rw,
                                nullptr, R, st));
  };
  auto combine = [&] {
    CHECK_EP(tshmem_ep_combine(buf, h, cx, TSHMEM_EP_BFLOAT16, R, H, nullptr, 0, nullptr, nullptr, out, nullptr, st));
  };
  auto notify = [&] {
    int64_t r = 0;
    CHECK_EP(tshmem_ep_notify(buf, h, in_rank, per_expert, T, E, 1, 0, &r, nullptr, st));
  };
  const double t_dispatch = time_us(config, st, dispatch);
  const double t_combine = time_us(config, st, combine);
  const double t_notify = time_us(config, st, notify);
  const double t_pair = time_us(config, st, [&] {
    dispatch();
    combine();
  });
  const double disp_bytes = static_cast<double>(R) * static_cast<double>(H + H / 128 * 4);
  const double comb_bytes = static_cast<double>(R) * static_cast<double>(H * 2);

  report.note("DeepEP normal-mode shape: " + std::to_string(T) + " tokens, hidden " + std::to_string(H) + ", top-" +
              std::to_string(K) + " of " + std::to_string(E) + " experts, fp8 dispatch, bf16 combine; " +
              run_note(buf, n));
  report.header("ep dispatch/combine", {"op", "recv_tokens", "time(us)", "BW (GB/sec)"});
  const EpRow row{report, mean_over_pes(static_cast<double>(R))};
  row("dispatch_fp8", t_dispatch, disp_bytes);
  row("combine_bf16", t_combine, comb_bytes);
  row("notify", t_notify, 0.0);
  row("dispatch+combine", t_pair, disp_bytes + comb_bytes);
  // The link limit: a device copy of the size a combine moves.
  link_copy_rows(config, st, comb_bytes, n, me, row);

  CHECK_EP(tshmem_ep_check_device_errors(buf, st));
  for (void *p :
       {static_cast<void *>(d_idx), static_cast<void *>(d_w), static_cast<void *>(d_scales), static_cast<void *>(d_x),
        static_cast<void *>(per_rank), static_cast<void *>(per_expert), static_cast<void *>(in_rank),
        static_cast<void *>(rx), static_cast<void *>(rsc), static_cast<void *>(rw), static_cast<void *>(ridx),
        static_cast<void *>(cx), static_cast<void *>(out)})
    cudaFree(p);
  CHECK_EP(tshmem_ep_handle_destroy(h));
  CHECK_EP(tshmem_ep_buffer_destroy(buf));
  cudaStreamDestroy(st);
  tshmem_finalize();
  MPI_Finalize();
  return 0;
}
