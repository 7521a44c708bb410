// The UCX transport's row of the table, and its choice of mode per memory type:
// - direct: the heap registered with UCX, every operation one ucp call (ucx_direct.cc). Host memory (the shm heap)
//   always; GPU memory only where UCX reaches it for RDMA (GPUDirect), since UCX's other paths into CUDA memory
//   (cuda_copy over tcp or shared memory) move it slower than staging does: TSHMEM_UCX_GPU_DIRECT=on|off|auto.
// - staged: the staged protocol (transport/staged/) carried by UCX's tag messages between the proxies: UCX moves
//   host memory to host memory, the origin's proxy stages the source and the target's proxy copies into its GPU
//   heap and applies atomics there, as over MPI.
// Every PE takes the same mode (agreed): the staged protocol needs both ends.
#include <atomic>
#include <cstdlib>
#include <thread>

#include "transport/staged/staged_transport.h"
#include "transport/ucx/ucx_parts.h"

namespace tshmemi {
namespace ucx {
namespace {

/// The transports UCX uses to reach `pe` ("tcp/eth0, cuda_copy/cuda"), where this UCX can say.
std::string transports_to(const Worker &worker, int pe) {
#if UCP_API_VERSION >= UCP_VERSION(1, 16)
  ucp_transport_entry_t entries[16];
  ucp_ep_attr_t attr = {};
  attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  attr.transports.entries = entries;
  attr.transports.num_entries = 16;
  attr.transports.entry_size = sizeof(ucp_transport_entry_t);
  if (worker.ep(pe) == nullptr || ucp_ep_query(worker.ep(pe), &attr) != UCS_OK) return "?";
  std::string out;
  for (unsigned i = 0; i < attr.transports.num_entries; ++i) {
    const std::string entry = std::string(entries[i].transport_name) + "/" + entries[i].device_name;
    if (out.find(entry) == std::string::npos) out += (out.empty() ? "" : ", ") + entry;
  }
  return out;
#else
  (void)worker, (void)pe;
  const char *tls = std::getenv("UCX_TLS");
  return format("UCX %d.%d does not list them; UCX_TLS=%s", UCP_API_MAJOR, UCP_API_MINOR, tls ? tls : "(unset)");
#endif
}

/// Whether UCX reaches GPU memory for RDMA here: CUDA memory is known to it, and an endpoint runs over an RDMA
/// transport (InfiniBand/RoCE rc, dc, ud, or gga). Where UCX cannot list an endpoint's transports: no.
bool gpu_direct_here(const Worker &worker, const std::vector<int> &node_of_pe, int me, std::string *why) {
  if (!worker.cuda_memory()) {
    *why = "UCX in this process has no CUDA memory support";
    return false;
  }
#if UCP_API_VERSION >= UCP_VERSION(1, 16)
  for (int pe = 0; pe < worker.n_pes(); ++pe) {
    if (worker.ep(pe) == nullptr || node_of_pe[static_cast<size_t>(pe)] == node_of_pe[static_cast<size_t>(me)])
      continue;
    const std::string tls = transports_to(worker, pe);
    for (const char *rdma : {"rc", "dc", "ud", "gga"})
      if (tls.rfind(rdma, 0) == 0 || tls.find(std::string(", ") + rdma) != std::string::npos) {
        *why = "GPUDirect RDMA over " + tls;
        return true;
      }
    *why = "no RDMA transport to PE " + std::to_string(pe) + " (" + tls + "): UCX would copy GPU memory through host";
    return false;
  }
  *why = "no PE of another node";
  return false;
#else
  (void)node_of_pe, (void)me;
  *why = "this UCX cannot list an endpoint's transports (UCX >= 1.16 can)";
  return false;
#endif
}

/// The staged protocol over UCX's messages; progress drives the worker first.
class Staged final : public Transport {
 public:
  Staged(std::unique_ptr<Worker> worker, std::unique_ptr<Transport> staged, std::string path)
      : worker_(std::move(worker)), staged_(std::move(staged)), path_(std::move(path)) {}
  ~Staged() override { staged_.reset(); }  // its messenger runs on the worker

  std::string path_of(int pe) const override { return path_ + ", " + transports_to(*worker_, pe) + ")"; }
  Status put(const PutOp &op, uint64_t *done) override { return staged_->put(op, done); }
  Status get(const GetOp &op, uint64_t *done) override { return staged_->get(op, done); }
  Status amo(const AmoOp &op, bool *issued) override { return staged_->amo(op, issued); }
  Status signal(const SignalOp &op, bool *issued) override { return staged_->signal(op, issued); }
  Status fence() override { return staged_->fence(); }
  Status quiet(const Waiter &waiter, bool *complete) override { return staged_->quiet(waiter, complete); }
  Status progress(bool *worked) override {
    bool moved = ucp_worker_progress(worker_->worker()) != 0;
    TSHMEM_CHECK(staged_->progress(&moved));
    if (moved)
      *worked = true;
    else
      std::this_thread::yield();  // as the direct mode does (ucx_direct.cc says why)
    return TSHMEM_SUCCESS;
  }
  uint64_t issued() const override { return staged_->issued(); }
  uint64_t released() const override { return staged_->released(); }
  std::string overdue(std::chrono::milliseconds bound) override { return staged_->overdue(bound); }
  std::string waiting_on() const override { return staged_->waiting_on(); }
  void abandon(const std::string &why) override {
    staged_->abandon(why);
    worker_->abandon();  // its endpoints to a stopped peer cannot be closed (ucx_worker.cc)
  }
  void tell_stopped() override {
    staged_->tell_stopped();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < until && ucp_worker_progress(worker_->worker()) != 0) {
    }
  }
  // The stop notice to a peer whose connection was still being set up when it stopped goes out only when this
  // worker progresses after the peer continues: a waiting thread does that here (the proxy thread has ended).
  void progress_after_stop() override { ucp_worker_progress(worker_->worker()); }
  void close() override { staged_->close(); }
  Status send_raw(int pe, const void *message, size_t bytes) override {
    // The staged protocol's send_raw tests its request until done: the worker must move meanwhile.
    std::atomic<bool> sent{false};
    std::thread progress([&] {
      while (!sent.load(std::memory_order_acquire)) ucp_worker_progress(worker_->worker());
    });
    const Status status = staged_->send_raw(pe, message, bytes);
    sent.store(true, std::memory_order_release);
    progress.join();
    return status;
  }

 private:
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<Transport> staged_;
  std::string path_;
};

Status make(const TransportInputs &in, std::unique_ptr<Transport> *out, std::string *unavailable) {
  Bootstrap &boot = *in.boot;
  auto worker = std::make_unique<Worker>();
  // A host heap takes the direct mode (below), where an idle proxy is woken by what arrives (UCX's emulated
  // operations need the target's progress); a GPU heap may stage, and leaves UCX's choice of transports as it is.
  // The direct mode on a host heap moves the callers' memory: its endpoints can be cancelled (ucx_worker.h).
  const bool wakeup = !in.heap_on_gpu && !in.env->debug_ucx_staged;
  TSHMEM_CHECK(worker->create(boot, in.node_of_pe, wakeup, wakeup, unavailable));
  if (!unavailable->empty()) return TSHMEM_SUCCESS;

  // The mode, per memory type; then the same on every PE.
  std::string why;
  bool direct = true;
  if (in.env->debug_ucx_staged) {
    direct = false;
    why = "TSHMEM_DEBUG_UCX_STAGED=1";
  } else if (!in.heap_on_gpu) {
    why = "a host-memory heap";
  } else if (in.env->ucx_gpu_direct == "off") {
    direct = false;
    why = "TSHMEM_UCX_GPU_DIRECT=off";
  } else if (in.env->ucx_gpu_direct == "on") {
    why = "TSHMEM_UCX_GPU_DIRECT=on";
  } else {
    direct = gpu_direct_here(*worker, in.node_of_pe, boot.rank(), &why);
    why = "TSHMEM_UCX_GPU_DIRECT=auto: " + why;
  }
  const int64_t mine = direct ? 1 : 0;
  int64_t all = 0;
  TSHMEM_CHECK(boot.allreduce(&mine, &all, 1, ReduceOp::kMin));
  if (direct && all == 0) {
    direct = false;
    why = "another PE stages (its UCX reaches no GPU memory for RDMA)";
  }
  const char *memory = in.heap_on_gpu ? "GPU heap" : "host heap";
  if (direct) {
    // The registration covers the whole heap: a GPU heap backed as it is used is backed whole first (collective:
    // `direct` is agreed).
    if (in.heap_on_gpu && in.back_whole_heap) TSHMEM_CHECK(in.back_whole_heap());
    TSHMEM_CHECK(worker->map_heap(boot, in.heap, in.heap_bytes, in.heap_on_gpu, unavailable));
    if (!unavailable->empty()) return TSHMEM_SUCCESS;
    // The path names the transports once endpoints exist (every PE of another node has one).
    std::string tls;  // to a PE of another node (the endpoint to this PE itself is UCX's self transport)
    const int me = boot.rank();
    for (int pe = 0; pe < worker->n_pes() && tls.empty(); ++pe)
      if (in.node_of_pe[static_cast<size_t>(pe)] != in.node_of_pe[static_cast<size_t>(me)])
        tls = transports_to(*worker, pe);
    const std::string path = format("ucx direct (%s registered with UCX, %s; %s)", memory, why.c_str(), tls.c_str());
    return make_direct(std::move(worker), in, path, out);
  }
  StagedConfig config;
  config.heap = in.heap;
  config.heap_bytes = in.heap_bytes;
  config.chunk_bytes = in.chunk_bytes;
  config.my_pe = boot.rank();
  config.n_pes = boot.size();
  std::unique_ptr<Transport> staged;
  TSHMEM_CHECK(make_staged_transport(make_messenger(*worker), *in.memory, config, *in.sink, &staged));
  const std::string path =
      format("ucx staged (%s through pinned host memory, the target's proxy copies it in; %s", memory, why.c_str());
  *out = std::make_unique<Staged>(std::move(worker), std::move(staged), path);
  return TSHMEM_SUCCESS;
}

std::string not_built() { return std::string(); }

std::string about() {
  const char *tls = std::getenv("UCX_TLS");
  return format("UCX %s loaded from %s (built against %d.%d); UCX_TLS=%s", loaded_version().c_str(),
                loaded_library().c_str(), UCP_API_MAJOR, UCP_API_MINOR, tls ? tls : "(unset: UCX's choice)");
}

}  // namespace
}  // namespace ucx

const TransportEntry &transport_entry_ucx() {
  static const TransportEntry entry = {"ucx", ucx::not_built, ucx::about, ucx::make};
  return entry;
}

}  // namespace tshmemi
