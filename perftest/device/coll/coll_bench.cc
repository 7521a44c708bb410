// perftest/device/coll: one collective per binary (TSHMEM_COLL_BENCH selects it at compile time), tshmem's
// stream-ordered form against its NCCL twin in the same run, timed alike: CUDA events around `-n` back-to-back
// launches on one stream after `-w` warm-ups, the best of 3 such batches, every PE in step (a host barrier
// before each batch).
//
// Columns (NVSHMEM's): size(B) = bytes per PE of the user buffer (all-gather/all-to-all: of the gathered
// buffer), count, type, redop, latency(us), algbw = size / latency, busbw = algbw x the NCCL-tests factor
// (all-reduce 2(n-1)/n, all-gather/reduce-scatter/all-to-all (n-1)/n, broadcast 1); then NCCL's latency and
// busbw and the ratio tshmem/NCCL of bus bandwidth (> 1: tshmem faster). Without nccl.h at configure time
// the NCCL columns read "-". Multicast stays as the environment says (OFF on the GPU test hosts).
//   -d float|half|bfloat16|int32|int64 (default bfloat16), -b/-e/-f sizes, -n iters, -w warm-ups, --json.
//   --graph (via TSHMEM_COLL_GRAPH=1): each timed batch is replayed from a captured CUDA graph.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_config.h"
#include "tshmem/tshmem.h"
#if TSHMEM_HAVE_NCCL
#include <nccl.h>
#endif
#if defined(TSHMEM_COLL_DEVICE_LOOP)
#include "barrier_loop.h"
#endif

using namespace tshmem_perf;

namespace {

enum class Coll { allreduce, allgather, reduce_scatter, alltoall, broadcast, barrier };
constexpr Coll kColl = Coll::TSHMEM_COLL_BENCH;

const char *coll_name() {
  switch (kColl) {
    case Coll::allreduce: return "allreduce";
    case Coll::allgather: return "allgather";
    case Coll::reduce_scatter: return "reduce_scatter";
    case Coll::alltoall: return "alltoall";
    case Coll::broadcast: return "broadcast";
    case Coll::barrier: return "barrier";
  }
  return "?";
}

struct Dtype {
  const char *name;
  tshmemx_dtype_t tshmem;
  size_t size;
#if TSHMEM_HAVE_NCCL
  ncclDataType_t nccl;
#endif
};

bool find_dtype(const std::string &name, Dtype *out) {
  const Dtype all[] = {
#if TSHMEM_HAVE_NCCL
    {"float", TSHMEMX_DTYPE_FLOAT, 4, ncclFloat32},
    {"half", TSHMEMX_DTYPE_HALF, 2, ncclFloat16},
    {"bfloat16", TSHMEMX_DTYPE_BFLOAT16, 2, ncclBfloat16},
    {"int32", TSHMEMX_DTYPE_INT32, 4, ncclInt32},
    {"int64", TSHMEMX_DTYPE_INT64, 8, ncclInt64},
#else
    {"float", TSHMEMX_DTYPE_FLOAT, 4},
    {"half", TSHMEMX_DTYPE_HALF, 2},
    {"bfloat16", TSHMEMX_DTYPE_BFLOAT16, 2},
    {"int32", TSHMEMX_DTYPE_INT32, 4},
    {"int64", TSHMEMX_DTYPE_INT64, 8},
#endif
  };
  for (const Dtype &d : all)
    if (name == d.name) return *out = d, true;
  return false;
}

double bus_factor(int n) {
  switch (kColl) {
    case Coll::allreduce: return 2.0 * (n - 1) / n;
    case Coll::allgather:
    case Coll::reduce_scatter:
    case Coll::alltoall: return static_cast<double>(n - 1) / n;
    case Coll::broadcast:
    case Coll::barrier: return 1.0;
  }
  return 1.0;
}

struct Buffers {
  void *dst, *src;
};

/// One tshmem call of the benchmarked collective; `bytes` is the per-PE size of the table.
int tshmem_call(const Buffers &b, size_t bytes, const Dtype &d, int n, cudaStream_t stream) {
  auto s = reinterpret_cast<tshmemx_stream_t>(stream);
  switch (kColl) {
    case Coll::allreduce:
      return tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, b.dst, b.src, bytes / d.size, d.tshmem, TSHMEMX_OP_SUM, s);
    case Coll::reduce_scatter:
      return tshmemx_reduce_scatter_on_stream(TSHMEM_TEAM_WORLD, b.dst, b.src, bytes / d.size / n, d.tshmem,
                                              TSHMEMX_OP_SUM, s);
    case Coll::allgather: return tshmemx_allgather_on_stream(TSHMEM_TEAM_WORLD, b.dst, b.src, bytes / n, s);
    case Coll::alltoall: return tshmemx_alltoall_on_stream(TSHMEM_TEAM_WORLD, b.dst, b.src, bytes / n, s);
    case Coll::broadcast: return tshmemx_broadcast_on_stream(TSHMEM_TEAM_WORLD, b.dst, b.src, bytes, 0, s);
    case Coll::barrier: return tshmemx_barrier_on_stream(TSHMEM_TEAM_WORLD, s);
  }
  return -1;
}

#if TSHMEM_HAVE_NCCL
int nccl_call(const Buffers &b, size_t bytes, const Dtype &d, int n, ncclComm_t comm, cudaStream_t stream) {
  ncclResult_t rc = ncclSuccess;
  switch (kColl) {
    case Coll::allreduce: rc = ncclAllReduce(b.src, b.dst, bytes / d.size, d.nccl, ncclSum, comm, stream); break;
    case Coll::reduce_scatter:
      rc = ncclReduceScatter(b.src, b.dst, bytes / d.size / n, d.nccl, ncclSum, comm, stream);
      break;
    case Coll::allgather: rc = ncclAllGather(b.src, b.dst, bytes / n, ncclInt8, comm, stream); break;
    case Coll::alltoall: {
      const size_t chunk = bytes / n;
      rc = ncclGroupStart();
      for (int pe = 0; pe < n && rc == ncclSuccess; ++pe) {
        rc = ncclSend(static_cast<char *>(b.src) + pe * chunk, chunk, ncclInt8, pe, comm, stream);
        if (rc == ncclSuccess)
          rc = ncclRecv(static_cast<char *>(b.dst) + pe * chunk, chunk, ncclInt8, pe, comm, stream);
      }
      const ncclResult_t end = ncclGroupEnd();
      if (rc == ncclSuccess) rc = end;
      break;
    }
    case Coll::broadcast: rc = ncclBroadcast(b.src, b.dst, bytes, ncclInt8, 0, comm, stream); break;
    case Coll::barrier: rc = ncclAllReduce(b.src, b.dst, 1, ncclInt32, ncclSum, comm, stream); break;  // NCCL has none
  }
  return rc == ncclSuccess ? 0 : static_cast<int>(rc);
}
#endif

/// Seconds per call: warm-ups, then kBatches timed batches of `iters` calls between two events (or one graph
/// replay of them with --graph), each batch started on every PE at once (host barrier); the best batch counts.
/// A host thread descheduled for a moment stalls a whole back-to-back batch (the GPU waits for launches): the
/// best of three measures the collective, not the host's worst moment. Both sides are timed this way.
template <class Call>
double time_calls(const BenchConfig &config, cudaStream_t stream, bool graph, Call &&call) {
  constexpr int kBatches = 3;
  for (int i = 0; i < config.warmup_iters; ++i)
    if (call() != 0) return -1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaGraph_t g;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < config.iters; ++i) call();
    cudaStreamEndCapture(stream, &g);
    cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    cudaGraphLaunch(exec, stream);  // one warm replay
  }
  float best_ms = -1;
  for (int batch = 0; batch < kBatches; ++batch) {
    cudaStreamSynchronize(stream);
    MPI_Barrier(MPI_COMM_WORLD);
    cudaEventRecord(start, stream);
    if (graph) {
      cudaGraphLaunch(exec, stream);
    } else {
      for (int i = 0; i < config.iters; ++i) call();
    }
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (best_ms < 0 || ms < best_ms) best_ms = ms;
  }
  if (exec) cudaGraphExecDestroy(exec);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best_ms / 1e3 / config.iters;
}

}  // namespace

int main(int argc, char **argv) {
  BenchConfig config;
  config.min_size = 8 << 10;
  config.max_size = 256 << 20;
  config.iters = 100;
  config.warmup_iters = 10;
  config.datatype = "bfloat16";
  int exit_code = 0;
  const std::string bench = std::string("coll_") + coll_name();
  if (!parse_args(argc, argv, bench.c_str(), &config, &exit_code)) return exit_code;
  Dtype dtype;
  if (!find_dtype(config.datatype, &dtype)) {
    std::fprintf(stderr, "%s: -d %s: use float, half, bfloat16, int32 or int64\n", bench.c_str(),
                 config.datatype.c_str());
    return 2;
  }
  MPI_Init(&argc, &argv);
  tshmemx_init_attr_t attr = TSHMEMX_INIT_ATTR_INITIALIZER;
  MPI_Comm comm_world = MPI_COMM_WORLD;
  attr.mpi_comm = &comm_world;
  if (tshmemx_init_attr(TSHMEMX_INIT_WITH_MPI_COMM, &attr) != 0) {
    std::fprintf(stderr, "%s: tshmem_init failed: %s\n", bench.c_str(), tshmemx_last_error());
    MPI_Finalize();
    return 1;
  }
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const bool graph =
      std::getenv("TSHMEM_COLL_GRAPH") != nullptr && std::strcmp(std::getenv("TSHMEM_COLL_GRAPH"), "1") == 0;
  const size_t span = config.max_size * static_cast<size_t>(n);  // covers every kind's largest buffer
  Buffers ours{tshmem_malloc(span), tshmem_malloc(span)};
  if (ours.dst == nullptr || ours.src == nullptr) {
    std::fprintf(stderr, "%s: tshmem_malloc(2 x %zu) failed: %s (raise TSHMEM_SYMMETRIC_SIZE)\n", bench.c_str(), span,
                 tshmemx_last_error());
    tshmem_finalize();
    MPI_Finalize();
    return 1;
  }
  cudaMemset(ours.src, 0, span);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
#if TSHMEM_HAVE_NCCL
  ncclUniqueId id;
  if (me == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t nccl = nullptr;
  const bool have_nccl = ncclCommInitRank(&nccl, n, id, me) == ncclSuccess;
  Buffers theirs{nullptr, nullptr};
  cudaMalloc(&theirs.dst, span);
  cudaMalloc(&theirs.src, span);
  cudaMemset(theirs.src, 0, span);
#else
  const bool have_nccl = false;
#endif
  Reporter report(config, bench, me == 0);
  report.note(std::string("tshmem ") + bench + " vs NCCL, " + std::to_string(n) + " PEs, type " + dtype.name +
              ", multicast: " + tshmemx_mc_status() + (graph ? ", CUDA graph" : ", back-to-back launches") +
              (have_nccl ? "" : ", NCCL not built or failed to init"));
  report.header(bench, {"size(B)", "count", "type", "redop", "latency(us)", "algbw(GB/s)", "busbw(GB/s)",
                        "nccl_latency(us)", "nccl_busbw(GB/s)", "ratio"});
  const std::vector<size_t> sizes = kColl == Coll::barrier ? std::vector<size_t>{0} : config.sizes();
  for (size_t bytes : sizes) {
    const size_t unit = dtype.size * static_cast<size_t>(n);
    if (kColl != Coll::barrier && kColl != Coll::broadcast && (bytes < unit || bytes % unit != 0)) continue;
    tshmem_barrier_all();
    const double t = time_calls(config, stream, graph, [&] { return tshmem_call(ours, bytes, dtype, n, stream); });
    if (t < 0) {
      std::fprintf(stderr, "%s: size %zu: %s\n", bench.c_str(), bytes, tshmemx_last_error());
      break;
    }
    double tn = 0;
#if TSHMEM_HAVE_NCCL
    if (have_nccl)
      tn = time_calls(config, stream, graph, [&] { return nccl_call(theirs, bytes, dtype, n, nccl, stream); });
#endif
    const double alg = t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0;
    const double bus = alg * bus_factor(n);
    const double bus_n = tn > 0 ? static_cast<double>(bytes) / tn / 1e9 * bus_factor(n) : 0;
    report.row({std::to_string(bytes), std::to_string(bytes / dtype.size), dtype.name,
                kColl == Coll::allreduce || kColl == Coll::reduce_scatter ? "sum" : "-", fmt_double(t * 1e6, 2),
                fmt_double(alg, 2), fmt_double(bus, 2), tn > 0 ? fmt_double(tn * 1e6, 2) : "-",
                tn > 0 ? fmt_double(bus_n, 2) : "-", tn > 0 ? fmt_double(tn / t, 3) : "-"});
  }
#if defined(TSHMEM_COLL_DEVICE_LOOP)
  // The device-side cost: `-n` x 10 barriers in one kernel (one block of 32 threads per PE), per barrier.
  if (kColl == Coll::barrier) {
    report.header(bench + " in one kernel", {"barrier", "barriers per kernel", "latency(us)"});
    const char *names[] = {"coll::barrier_block", "barrier_all<block>"};
    const int loop_iters = config.iters * 10;
    for (int which = 0; which < 2; ++which) {
      tshmem_barrier_all();
      if (tshmem_coll_barrier_loop_us(config.warmup_iters * 10, which, 32, stream) < 0) break;  // warm-up
      tshmem_barrier_all();
      const double us = tshmem_coll_barrier_loop_us(loop_iters, which, 32, stream);
      if (us < 0) {
        std::fprintf(stderr, "%s: in-kernel barrier loop failed: %s\n", bench.c_str(),
                     cudaGetErrorString(cudaGetLastError()));
        break;
      }
      report.row({names[which], std::to_string(loop_iters), fmt_double(us, 3)});
    }
  }
#endif
#if TSHMEM_HAVE_NCCL
  if (have_nccl) ncclCommDestroy(nccl);
  cudaFree(theirs.dst);
  cudaFree(theirs.src);
#endif
  cudaStreamDestroy(stream);
  tshmem_free(ours.src);
  tshmem_free(ours.dst);
  tshmem_finalize();
  MPI_Finalize();
  return 0;
}
