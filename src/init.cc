// tshmem_init / tshmem_finalize: the one init path.
//
// Every step that can fail on one PE ends with a collective agreement, so that a failure anywhere
// fails init everywhere with the same message and nothing stays allocated.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "bootstrap/agree.h"
#include "bootstrap/node_sync.h"
#include "context.h"
#include "cuda/gpu_runtime.h"
#include "cuda/gpu_warmup.h"
#if TSHMEM_HAVE_CUDA
#include "cuda/module_loading.h"
#endif
#include "init_steps.h"
#include "state/registry.h"
#include "transport/transport.h"
#include "tshmem/device/internal_regions.h"
#include "tshmem/device/state_types.h"

namespace tshmemi {
namespace {

std::atomic<Context *> g_context{nullptr};              // live between init and finalize
std::atomic<int> g_thread_level{TSHMEM_THREAD_SINGLE};  // of the live (or last) context
// Set while tshmem_finalize waits for the calls in flight: later calls find no context, so a stream of calls
// from other threads cannot keep finalize waiting for the lock (readers would otherwise starve the writer).
std::atomic<bool> g_finalizing{false};

// Init and finalize hold it exclusively; API calls under TSHMEM_THREAD_MULTIPLE hold it shared (ContextRef).
std::shared_mutex &lifetime_mutex() {
  static std::shared_mutex mutex;
  return mutex;
}

const char *thread_level_name(int level) {
  switch (level) {
    case TSHMEM_THREAD_SINGLE: return "TSHMEM_THREAD_SINGLE";
    case TSHMEM_THREAD_FUNNELED: return "TSHMEM_THREAD_FUNNELED";
    case TSHMEM_THREAD_SERIALIZED: return "TSHMEM_THREAD_SERIALIZED";
    case TSHMEM_THREAD_MULTIPLE: return "TSHMEM_THREAD_MULTIPLE";
  }
  return "?";
}

// The level every PE provides: the request, capped by what MPI gives each PE (the lowest over all PEs).
Status agree_on_thread_level(Context &ctx, int requested) {
  Bootstrap &boot = *ctx.boot;
  const int64_t mine = std::min(requested, boot.thread_level());
  int64_t lowest = mine;
  TSHMEM_CHECK(boot.allreduce(&mine, &lowest, 1, ReduceOp::kMin));
  ctx.thread_level = static_cast<int>(lowest);
  if (mine < requested)
    TSHMEMI_LOG(kWarn, kLogInit, "tshmem_init_thread: requested %s, providing %s: MPI provides only that level (%s)",
                thread_level_name(requested), thread_level_name(static_cast<int>(mine)),
                boot.initialised_by_tshmem() ? "tshmem asked MPI_Init_thread for MPI_THREAD_MULTIPLE"
                                             : "the application initialised MPI with it");
  else if (lowest < requested && boot.rank() == 0)
    TSHMEMI_LOG(kWarn, kLogInit, "tshmem_init_thread: requested %s, providing %s: another PE's MPI provides only that",
                thread_level_name(requested), thread_level_name(static_cast<int>(lowest)));
  return TSHMEM_SUCCESS;
}

int backend_id(const std::string &name) {
  if (name == "shm") return 1;
  if (name == "vmm") return 2;
  if (name == "ipc") return 3;
  return 0;
}

// Resolves TSHMEM_MEM_BACKEND=auto: vmm when this PE sees a GPU, shm otherwise.
Status choose_backend(const EnvOptions &env, std::string *backend) {
  *backend = env.mem_backend;
  const bool gpu = gpu_available();
  if (*backend == "auto") *backend = gpu ? "vmm" : "shm";
  if ((*backend == "vmm" || *backend == "ipc") && !gpu)
    return set_error(TSHMEM_ERR_CUDA, "TSHMEM_MEM_BACKEND=%s: no CUDA device is usable on this host (%s)",
                     backend->c_str(), gpu_unavailable_reason().c_str());
  return TSHMEM_SUCCESS;
}

// TSHMEM_REMOTE_TRANSPORT as a number every PE can compare: 0 for auto, else 1 + its row of the table.
int64_t transport_index(const std::string &name) {
  const auto &table = transport_table();
  for (size_t i = 0; i < table.size(); ++i)
    if (name == table[i]->name) return static_cast<int64_t>(i) + 1;
  return 0;
}

Status validate_configuration(Context &ctx, const std::string &backend) {
  const std::vector<AgreedField> fields = {
      {"TSHMEM_SYMMETRIC_SIZE", static_cast<int64_t>(ctx.env.symmetric_size), std::to_string(ctx.env.symmetric_size)},
      {"TSHMEM_MEM_BACKEND (resolved)", backend_id(backend), backend},
      {"TSHMEM_DEBUG_NODE_SIZE", ctx.env.debug_node_size, std::to_string(ctx.env.debug_node_size)},
      {"TSHMEM_REMOTE_TRANSPORT", transport_index(ctx.env.remote_transport), ctx.env.remote_transport},
      {"build option TSHMEM_SYMMETRY_CHECK", TSHMEM_SYMMETRY_CHECK, TSHMEM_SYMMETRY_CHECK ? "ON" : "OFF"},
      {"tshmem version", TSHMEM_VERSION_CODE, TSHMEM_VERSION_STRING},
      {"device state layout", TSHMEMI_DEVICE_STATE_VERSION, std::to_string(TSHMEMI_DEVICE_STATE_VERSION)},
  };
  return agree_on_fields(*ctx.boot, fields, "tshmem_init");
}

Status create_backend(Context &ctx, const std::string &backend, std::unique_ptr<ShmHeapReservation> early_heap) {
  if (backend == "shm") return make_shm_backend(ctx.env.init_timeout_ms, std::move(early_heap), &ctx.mem);
#if TSHMEM_HAVE_CUDA
  if (backend == "vmm") return make_vmm_backend(ctx.cuda_device, ctx.env.init_timeout_ms, &ctx.mem);
  if (backend == "ipc") return make_ipc_backend(ctx.cuda_device, &ctx.mem);
#endif
  return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_MEM_BACKEND=%s: this build has no such backend (built without CUDA?)",
                   backend.c_str());
}

// How each PE is reached, decided once at init: itself, a peer of this node (its heap mapped: loads and stores),
// or a PE of another node (the off-node transport). Logged at info, with the transport's choice at warn level on
// PE 0 when auto passed over a transport (so a job that expected UCX sees why it runs over MPI).
void log_peer_paths(const Context &ctx) {
  const Proxy &proxy = *ctx.proxy;
  const int me = ctx.boot->rank();
  if (me == 0 && !proxy.choice_note().empty())
    TSHMEMI_LOG(kWarn, kLogInit, "PEs of other nodes are reached through %s (TSHMEM_REMOTE_TRANSPORT=%s; %s)",
                proxy.transport_name().c_str(), ctx.env.remote_transport.c_str(), proxy.choice_note().c_str());
  if (me == 0) {
    const TransportEntry *entry = find_transport(proxy.transport_name());
    TSHMEMI_LOG(kInfo, kLogInit, "remote transport %s: %s", proxy.transport_name().c_str(),
                entry != nullptr ? entry->about().c_str() : "?");
  }
  const std::vector<int> &node = ctx.boot->node_of_pe();
  for (int pe = 0; pe < ctx.boot->size(); ++pe) {
    if (node[static_cast<size_t>(pe)] == node[static_cast<size_t>(me)]) continue;
    TSHMEMI_LOG(kInfo, kLogInit, "PE %d (node %d) is reached through %s (TSHMEM_REMOTE_TRANSPORT=%s)", pe,
                node[static_cast<size_t>(pe)], proxy.path_of(pe).c_str(), ctx.env.remote_transport.c_str());
  }
}

// PEs of other nodes have no load/store path: every backend reaches them through the off-node proxy
// (design.md, "Beyond one node"). Every PE takes the same decision from agreed facts.
Status create_proxy(Context &ctx) {
  if (!ctx.spans_nodes) return TSHMEM_SUCCESS;
  if (ctx.boot->native_comm() == nullptr) {  // the proxy talks MPI: a bootstrap over callbacks has none
    ctx.offnode_reason =
        "tshmem was initialised over the application's collectives (tshmemx_init_callbacks, tshmem.init(group=...)), "
        "which carry no off-node transport; start the job under mpirun or srun (tshmem_init) to reach other nodes";
    if (ctx.boot->rank() == 0)
      TSHMEMI_LOG(kWarn, kLogInit, "PEs of other nodes are unreachable: %s", ctx.offnode_reason.c_str());
    return TSHMEM_SUCCESS;
  }
  ProxyConfig config;
  config.chunk_bytes = ctx.env.proxy_chunk;
  config.ring_entries = static_cast<uint32_t>(ctx.env.proxy_ring);
  config.stage_max = ctx.env.proxy_stage_max;
  config.timeout_ms = ctx.env.proxy_timeout_ms;
  config.warn_ms = ctx.env.wait_warn_ms;
  config.device_wait_timeout_ms = ctx.env.wait_timeout_ms;
  config.env = &ctx.env;
  config.host_pes = std::max(ctx.env.launcher.local_size, ctx.boot->local_size());
  TSHMEM_CHECK(make_proxy(*ctx.boot, *ctx.mem, ctx.env.symmetric_size, config,
                          ctx.mem->device_memory() ? ctx.cuda_device : -1, &ctx.proxy, &ctx.offnode_reason));
  if (ctx.proxy) {
    Proxy *proxy = ctx.proxy.get();
    ctx.heap->set_offnode_quiet([proxy] { return proxy->quiet(); });
    ctx.rendezvous->attach_proxy(proxy);
    log_peer_paths(ctx);
  } else if (ctx.boot->rank() == 0) {
    TSHMEMI_LOG(kWarn, kLogInit, "PEs of other nodes are unreachable: %s", ctx.offnode_reason.c_str());
  }
  return TSHMEM_SUCCESS;
}

// A job on one node whose heaps are host shared memory (shm) makes its barriers and checked rendezvous there
// from now on (bootstrap/node_sync.h): cache-line transfers instead of MPI messages. Every PE takes the same
// decision from agreed facts (one node, the agreed backend, every peer heap mapped in the agreed step before).
void attach_node_sync(Context &ctx) {
  Bootstrap &boot = *ctx.boot;
  if (ctx.spans_nodes || boot.size() > NodeSync::kMaxPes) return;  // several nodes, or many PEs
  std::vector<void *> pages;
  for (int pe : boot.local_pes()) {
    void *page = ctx.mem->node_sync_page(pe);
    if (page == nullptr) return;
    pages.push_back(page);
  }
  boot.attach_node_sync(std::make_unique<NodeSync>(std::move(pages), boot.local_rank(), &boot.bounds()));
}

// The device state from the parts init made (cuda/gpu_runtime.h).
Status make_device_state(Context &ctx) {
  tshmemi_team_entry teams[TSHMEMI_TEAM_SLOTS];
  ctx.teams.snapshot(teams);
  DeviceStateInputs in;
  in.cuda_device = ctx.cuda_device;
  in.peers = &ctx.peers;
  in.boot = ctx.boot.get();
  in.mem = ctx.mem.get();
  in.heap_size = ctx.heap->size();
  in.wait_timeout_ms = ctx.env.wait_timeout_ms;
  in.teams = teams;
  if (ctx.proxy) {
    in.proxy_channel = ctx.proxy->device_channel();
    in.proxy_device_side = ctx.proxy->device_side();
  } else {
    in.proxy_unavailable = !ctx.offnode_reason.empty();
  }
  return create_device_state(in, &ctx.device_state);
}

// What the multicast policy looks at (nvls/nvls.h).
NvlsPolicyInput nvls_input(const Context &ctx) {
  NvlsPolicyInput input;
  input.env = &ctx.env;
  input.backend = ctx.mem->name();
  input.cuda_device = ctx.cuda_device;
  input.local_n_pes = ctx.boot->local_size();
  input.heap_base = reinterpret_cast<uintptr_t>(ctx.mem->local_base());
  input.heap_size = ctx.heap->size();
  // The multicast object binds the whole heap: a heap backed as it is used is backed whole first (collective).
  MemBackend *mem = ctx.mem.get();
  Bootstrap *boot = ctx.boot.get();
  const uint64_t heap_size = ctx.heap->size();
  input.back_whole_heap = [mem, boot, heap_size] {
    return mem->back(*boot, 0, heap_size, "tshmem_init (multicast: the heap it binds)");
  };
  return input;
}

// What every PE holds after the steps that completed: the teardown of a failed init follows this, never
// what one PE happens to hold, so that every PE runs the same collectives.
struct InitProgress {
  bool backend_on_every_pe = false;  ///< ctx.mem exists everywhere: its collective destroy runs everywhere
};

// The steps, in the order of TSHMEM_INIT_STEP_LIST, each through run_step (the fault switch, then an
// agreement). A step whose work is collective (config, gpu, proxy, nvls) runs on every PE first, and
// its run_step carries only the switch and the verdict.
Status init_steps(Context &ctx, unsigned flags, const void *mpi_comm, const tshmemx_bootstrap_callbacks_t *callbacks,
                  int requested, const int *provided, InitProgress *progress) {
  // The environment is parsed before the bootstrap, but its verdict is shared after it: a malformed
  // variable on one PE fails init on all of them.
  Status env_status = parse_env(&ctx.env, nullptr, (flags & TSHMEMX_INIT_NVSHMEM_ENV) != 0);
  std::string env_error = env_status != TSHMEM_SUCCESS ? last_error_message() : std::string();
  if (env_status == TSHMEM_SUCCESS) {
    unsigned mask = kLogAll;
    log_subsys_from(ctx.env.debug_subsys, &mask);
    log_configure(log_level_from(ctx.env.debug), mask);
  }
  const int node_size = env_status == TSHMEM_SUCCESS ? static_cast<int>(ctx.env.debug_node_size) : 0;
  // Where the heap is sure to be shm (asked for, or the only backend of this build), its memory is reserved on a
  // thread of its own while MPI starts: MPI_Init mostly waits for the launcher, and reserving every page of the
  // heap is most of the rest of init. The heap-own step takes the file and its verdict (ShmHeapReservation).
  std::unique_ptr<ShmHeapReservation> early_heap;
  if (env_status == TSHMEM_SUCCESS &&
      (ctx.env.mem_backend == "shm" || (ctx.env.mem_backend == "auto" && !TSHMEM_HAVE_CUDA)))
    early_heap = ShmHeapReservation::start(ctx.env.symmetric_size);
  // Where the heap will be on a GPU and tshmem starts MPI, CUDA starts on its own thread meanwhile (gpu_warmup.h).
  std::unique_ptr<GpuWarmup> gpu_warmup;
  if (env_status == TSHMEM_SUCCESS && ctx.env.mem_backend != "shm" && callbacks == nullptr &&
      (flags & TSHMEMX_INIT_WITH_MPI_COMM) == 0)
    gpu_warmup = GpuWarmup::start(ctx.env);  // null in a build without CUDA
  // Every wait of init on other PEs is bounded too, by the init bound (a step's own work, as mapping a large heap,
  // may keep a PE from the next collective for a while); a malformed environment keeps the defaults until init fails.
  WaitBounds bounds;
  if (env_status == TSHMEM_SUCCESS) bounds = {ctx.env.init_timeout_ms, ctx.env.wait_warn_ms};
  TSHMEM_CHECK(callbacks != nullptr ? make_callback_bootstrap(*callbacks, node_size, &ctx.boot)
                                    : make_mpi_bootstrap((flags & TSHMEMX_INIT_WITH_MPI_COMM) ? mpi_comm : nullptr,
                                                         node_size, bounds, &ctx.boot));
  ctx.boot->set_bounds(bounds);
  Bootstrap &boot = *ctx.boot;
  log_set_pe(boot.rank(), boot.size());
  ctx.spans_nodes = boot.local_size() != boot.size();  // the same answer on every PE
#if TSHMEM_HAVE_CUDA
  // Before this process's first CUDA call of init (the backend's choice asks for devices): a job over several
  // nodes loads every module when CUDA starts (cuda/module_loading.h says why).
  if (ctx.spans_nodes) {
    if (gpu_warmup) gpu_warmup->join();  // CUDA reads the environment while it starts: no setenv meanwhile
    prefer_eager_module_loading();
  }
#endif
  if (env_status != TSHMEM_SUCCESS) {
    set_error_message(env_status, env_error);
  } else {
    FaultSpec fault;  // parse_env has checked the text already
    env_status = parse_fault_spec("TSHMEM_DEBUG_FAIL", ctx.env.debug_fail, &fault);
    if (env_status == TSHMEM_SUCCESS) env_status = arm_faults(fault, boot.rank(), boot.size());
    // A value that names no transport is refused on one node too: the same job fails the same way on several.
    if (env_status == TSHMEM_SUCCESS) env_status = check_remote_transport(ctx.env.remote_transport);
  }
  // The arguments of tshmem_init_thread are checked here too, after the bootstrap, so that a bad argument on
  // one PE fails init on all of them.
  if (env_status == TSHMEM_SUCCESS && (requested < TSHMEM_THREAD_SINGLE || requested > TSHMEM_THREAD_MULTIPLE))
    env_status = set_error(TSHMEM_ERR_INVALID_ARG,
                           "tshmem_init_thread: requested = %d is not a thread level (TSHMEM_THREAD_SINGLE = 0 .. "
                           "TSHMEM_THREAD_MULTIPLE = 3)",
                           requested);
  else if (env_status == TSHMEM_SUCCESS && provided == nullptr)
    env_status = set_error(TSHMEM_ERR_INVALID_ARG, "tshmem_init_thread: provided is NULL");
  TSHMEM_CHECK(run_step(boot, InitStep::kEnv, [&] { return env_status; }));
  TSHMEM_CHECK(agree_on_thread_level(ctx, requested));

  std::string backend;
  TSHMEM_CHECK(run_step(boot, InitStep::kBackendChoice, [&] {
    if (boot.size() > TSHMEM_MAX_PES)
      return set_error(TSHMEM_ERR_CONFIG, "%d PEs exceed TSHMEM_MAX_PES (%d)", boot.size(), TSHMEM_MAX_PES);
    return choose_backend(ctx.env, &backend);
  }));
  TSHMEM_CHECK(validate_configuration(ctx, backend));
  TSHMEM_CHECK(run_step(boot, InitStep::kConfig, [] { return TSHMEM_SUCCESS; }));
  // select_gpu is collective (a node-local allgather): it runs on every PE, and the switch after it.
  GpuChoice gpu;
  const Status gpu_selected = backend != "shm" ? select_gpu(ctx.env, boot, &gpu) : TSHMEM_SUCCESS;
  if (gpu_warmup) gpu_warmup->settle(gpu_selected == TSHMEM_SUCCESS ? gpu.device : -1);
  ctx.cuda_device = gpu.device;
  ctx.coll_early_launch = gpu.coll_early_launch;
  TSHMEM_CHECK(run_step(boot, InitStep::kGpu, [&] { return gpu_selected; }));
  TSHMEM_CHECK(run_step(boot, InitStep::kBackend, [&] { return create_backend(ctx, backend, std::move(early_heap)); }));
  progress->backend_on_every_pe = true;
  TSHMEM_CHECK(ctx.mem->create(boot, ctx.env.symmetric_size));  // collective: heap-own, heap-exchange, heap-peers
  TSHMEM_CHECK(run_step(boot, InitStep::kPeerTable, [&] { return PeerTable::build(*ctx.mem, boot, &ctx.peers); }));
  attach_node_sync(ctx);
  ctx.teams.init(boot);
  // A job that spans nodes also keeps the end of the heap: the collectives' area for the world team
  // (internal_regions.h; the same offset on every PE, as the heap size is).
  static_assert(TSHMEM_INTERNAL_HEAP_BYTES + TSHMEMI_COLL_SPAN_BYTES + 4096 < 2 * TSHMEM_INTERNAL_HEAP_BYTES,
                "the smallest heap (TSHMEM_SYMMETRIC_SIZE) leaves no room for user blocks");
  const bool spans_nodes = ctx.spans_nodes;
  const uint64_t reserved_end =
      spans_nodes ? TSHMEMI_COLL_SPAN_OFFSET(ctx.env.symmetric_size) : uint64_t{ctx.env.symmetric_size};
  ctx.check = std::make_unique<CollectiveCheck>(boot);
  ctx.heap = std::make_unique<SymmetricHeap>(*ctx.check, *ctx.mem, ctx.env.symmetric_size, TSHMEM_INTERNAL_HEAP_BYTES,
                                             reserved_end);
  ctx.rendezvous = std::make_unique<Rendezvous>(*ctx.mem, *ctx.check);
  // A heap backed as it is used (vmm) backs that end area now, apart from the first chunk (collective; the same
  // decision on every PE).
  if (spans_nodes)
    TSHMEM_CHECK(
        ctx.mem->back(boot, reserved_end, ctx.env.symmetric_size, "tshmem_init (the spanning collectives' area)"));
  // tshmem's own regions (device barrier counters) start zeroed on every PE.
  TSHMEM_CHECK(run_step(boot, InitStep::kReservedRegion, [&] {
    if (ctx.mem->created_zeroed()) return Status(TSHMEM_SUCCESS);
    const Status internal = ctx.mem->zero(ctx.mem->local_base(), TSHMEM_INTERNAL_HEAP_BYTES);
    if (internal != TSHMEM_SUCCESS || !spans_nodes) return internal;
    return ctx.mem->zero(static_cast<char *>(ctx.mem->local_base()) + reserved_end, TSHMEMI_COLL_SPAN_HEADER_BYTES);
  }));
  TSHMEM_CHECK(create_proxy(ctx));  // agrees internally; ctx.proxy is set on every PE or on none
  TSHMEM_CHECK(run_step(boot, InitStep::kProxy, [] { return TSHMEM_SUCCESS; }));
  TSHMEM_CHECK(run_step(boot, InitStep::kDeviceState,
                        [&] { return ctx.mem->device_memory() ? make_device_state(ctx) : Status(TSHMEM_SUCCESS); }));
  // Collective: the multicast policy; ctx.nvls is set on every PE or on none.
  TSHMEM_CHECK(nvls_init(boot, nvls_input(ctx), &ctx.nvls, &ctx.nvls_reason));
  TSHMEM_CHECK(run_step(boot, InitStep::kNvls, [] { return TSHMEM_SUCCESS; }));
  TSHMEM_CHECK(run_step(boot, InitStep::kReady, [] { return TSHMEM_SUCCESS; }));  // an allreduce: the last barrier
  TSHMEMI_LOG(kInfo, kLogInit, "initialised: %d PEs (%d on this node), backend %s, heap %llu bytes at %p%s",
              boot.size(), boot.local_size(), ctx.mem->name(), static_cast<unsigned long long>(ctx.env.symmetric_size),
              ctx.mem->local_base(), ctx.proxy ? ", other nodes through the proxy" : "");
  return TSHMEM_SUCCESS;
}

}  // namespace

Context::Context() = default;
Context::~Context() {
  // Reverse order of creation. The backend's memory goes before the bootstrap (which may finalise MPI).
  if (boot) boot->detach_node_sync();  // it lives in the backend's memory
  device_state.reset();
  nvls.reset();  // local undo only; finalize and the failed-init path run the collective teardown first
  proxy.reset();
  rendezvous.reset();
  heap.reset();
  check.reset();
  mem.reset();
  boot.reset();
}

ContextRef::ContextRef() {
  // The level only changes under the exclusive lock, at init; calls that race init break every level's rule.
  if (g_thread_level.load(std::memory_order_acquire) == TSHMEM_THREAD_MULTIPLE) {
    if (g_finalizing.load(std::memory_order_acquire)) return;  // finalize has begun: no context
    lifetime_ = std::shared_lock<std::shared_mutex>(lifetime_mutex());
  }
  ctx_ = g_context.load(std::memory_order_acquire);
}

ContextRef require_context(const char *call) {
  ContextRef ref;
  if (!ref) set_error(TSHMEM_ERR_NOT_INITIALIZED, "%s: tshmem is not initialised (call tshmem_init first)", call);
  return ref;
}

Status query_thread_level(int *provided) {
  ContextRef ctx = require_context("tshmem_query_thread");
  if (!ctx) return TSHMEM_ERR_NOT_INITIALIZED;
  if (provided == nullptr) return set_error(TSHMEM_ERR_INVALID_ARG, "tshmem_query_thread: provided is NULL");
  *provided = ctx->thread_level;
  return TSHMEM_SUCCESS;
}

Status check_pe(const Context &ctx, const char *call, int pe) {
  if (pe < 0 || pe >= ctx.peers.n_pes())
    return set_error(TSHMEM_ERR_INVALID_PE, "%s: PE %d out of range [0, %d) on PE %d", call, pe, ctx.peers.n_pes(),
                     ctx.peers.my_pe());
  return TSHMEM_SUCCESS;
}

Status init_context(unsigned flags, const void *mpi_comm, int requested, int *provided,
                    const tshmemx_bootstrap_callbacks_t *callbacks) {
  std::unique_lock<std::shared_mutex> lifetime(lifetime_mutex());
  if (g_context.load() != nullptr)
    return set_error(TSHMEM_ERR_INVALID_ARG, "tshmem_init: already initialised (call tshmem_finalize first)");
  clear_last_error();
  const CallScope scope("tshmem_init");
  auto ctx = std::make_unique<Context>();
  InitProgress progress;
  const Status status = init_steps(*ctx, flags, mpi_comm, callbacks, requested, provided, &progress);
  disarm_faults();
  if (status != TSHMEM_SUCCESS) {
    // Every PE agreed on the failure at the same step, so every PE runs the same teardown: each collective
    // below is chosen by agreed progress, never by what this PE alone created (a PE whose heap failed
    // still joins the backend's destroy, or its peers would wait there forever).
    const std::string message = last_error_message();
    // The node sync lives in the backend's memory, which the teardown below unmaps.
    if (ctx->boot) ctx->boot->detach_node_sync();
    if (ctx->boot) nvls_finalize(*ctx->boot, &ctx->nvls);  // ctx.nvls: set on every PE or on none
    if (ctx->proxy) ctx->proxy->destroy();                 // the same
    if (progress.backend_on_every_pe) ctx->mem->destroy(*ctx->boot);
    ctx.reset();
    log_set_pe(-1, -1);
    return set_error_message(status, message);
  }
  *provided = ctx->thread_level;
  // From here on the waits of calls on other PEs end at TSHMEM_PROXY_TIMEOUT_MS.
  ctx->boot->set_bounds({ctx->env.proxy_timeout_ms, ctx->env.wait_warn_ms});
  g_thread_level.store(ctx->thread_level, std::memory_order_release);
  g_context.store(ctx.release(), std::memory_order_release);
  return TSHMEM_SUCCESS;
}

void finalize_context() {
  // Waits for this PE's calls in flight (under MULTIPLE); later ones find no context.
  g_finalizing.store(true, std::memory_order_release);
  std::unique_lock<std::shared_mutex> lifetime(lifetime_mutex());
  Context *ctx = g_context.load();
  if (ctx == nullptr) {
    g_finalizing.store(false, std::memory_order_release);
    return;
  }
  const CallScope scope("tshmem_finalize");
  const CallDeadline deadline(ctx->boot->bounds());  // one bound for the rendezvous and the teardown's collectives
  // The finalize rendezvous is checked like any collective: a PE still allocating is named, not hung. In the failed
  // state (an earlier collective passed its bound: a PE stopped or gone) there is no rendezvous: finalize tears down
  // without waiting for other PEs, and so does a rendezvous that itself passes its bound.
  Status failure = ctx->boot->usable("tshmem_finalize");
  if (failure == TSHMEM_SUCCESS) failure = ctx->rendezvous->finalize();
  std::string failure_message = failure != TSHMEM_SUCCESS ? last_error_message() : std::string();
  if (failure != TSHMEM_SUCCESS && !ctx->boot->failed()) {
    // Some PE is not finalizing: tearing down now would leave it in a collective nobody else joins.
    // tshmem stays initialised everywhere; the error (on every PE) says which PE did what.
    set_error_message(failure, failure_message + " tshmem_finalize did nothing: call it again on every PE.");
    g_finalizing.store(false, std::memory_order_release);
    return;
  }
  g_context.store(nullptr, std::memory_order_release);
  g_finalizing.store(false, std::memory_order_release);  // calls from now on find no context anyway
  ctx->device_state.reset();                             // withdraws the state from every registered unit
  nvls_finalize(*ctx->boot, &ctx->nvls);                 // collective: unmap, unbind, release the multicast object
  // The node sync lives in the backend's memory, which goes below: the collectives from here on take MPI.
  ctx->boot->detach_node_sync();
  // Collective: drained before the memory under it goes. When the off-node path had stopped it tears down
  // without draining, and the error it returns is what finalize leaves behind.
  Status lost = TSHMEM_SUCCESS;
  std::string lost_message;
  if (ctx->proxy && (lost = ctx->proxy->destroy()) != TSHMEM_SUCCESS) lost_message = last_error_message();
  ctx->mem->destroy(*ctx->boot);  // in the failed state its barrier fails at once, and it releases what it holds
  const bool failed = ctx->boot->failed();
  delete ctx;
  log_flush_throttled();
  log_set_pe(-1, -1);
  if (failed) {
    if (failure == TSHMEM_SUCCESS) {  // the failure came during the teardown
      failure = TSHMEM_ERR_TIMEOUT;
      failure_message = lost != TSHMEM_SUCCESS ? lost_message : std::string("a collective of the teardown failed");
    }
    // The failure's own text, without a second "tshmem_finalize: " in front.
    const std::string prefix = "tshmem_finalize: ";
    if (failure_message.compare(0, prefix.size(), prefix) == 0) failure_message.erase(0, prefix.size());
    set_error(failure,
              "tshmem_finalize: tshmem is in a failed state, so it tears down without waiting for other PEs (what "
              "was in flight to them is lost): %s",
              failure_message.c_str());
  } else if (lost != TSHMEM_SUCCESS) {
    set_error_message(lost, lost_message);
  }
}

}  // namespace tshmemi
