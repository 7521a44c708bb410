// tshmem_init / tshmem_finalize: the one init path.
//
// Every step that can fail on one PE ends with a collective agreement, so that a failure anywhere
// fails init everywhere with the same message and nothing stays allocated.
#include <cstring>

#include "bootstrap/agree.h"
#include "context.h"
#include "cuda/gpu_runtime.h"
#include "state/registry.h"
#include "tshmem/device/state_types.h"

namespace tshmemi {
namespace {

Context *g_context = nullptr;  // live between init and finalize

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

Status validate_configuration(Context &ctx, const std::string &backend) {
  const std::vector<AgreedField> fields = {
      {"TSHMEM_SYMMETRIC_SIZE", static_cast<int64_t>(ctx.env.symmetric_size), std::to_string(ctx.env.symmetric_size)},
      {"TSHMEM_MEM_BACKEND (resolved)", backend_id(backend), backend},
      {"TSHMEM_DEBUG_NODE_SIZE", ctx.env.debug_node_size, std::to_string(ctx.env.debug_node_size)},
      {"build option TSHMEM_SYMMETRY_CHECK", TSHMEM_SYMMETRY_CHECK, TSHMEM_SYMMETRY_CHECK ? "ON" : "OFF"},
      {"tshmem version", TSHMEM_VERSION_CODE, TSHMEM_VERSION_STRING},
      {"device state layout", TSHMEMI_DEVICE_STATE_VERSION, std::to_string(TSHMEMI_DEVICE_STATE_VERSION)},
  };
  return agree_on_fields(*ctx.boot, fields, "tshmem_init");
}

Status create_backend(Context &ctx, const std::string &backend) {
  if (backend == "shm") return make_shm_backend(&ctx.mem);
#if TSHMEM_HAVE_CUDA
  if (backend == "vmm") return make_vmm_backend(ctx.cuda_device, &ctx.mem);
  if (backend == "ipc") return make_ipc_backend(ctx.cuda_device, &ctx.mem);
#endif
  return set_error(TSHMEM_ERR_CONFIG, "TSHMEM_MEM_BACKEND=%s: this build has no such backend (built without CUDA?)",
                   backend.c_str());
}

// PEs of other nodes have no load/store path: every backend reaches them through the off-node proxy
// (design.md, "Beyond one node"). Every PE takes the same decision from agreed facts.
Status create_host_rma(Context &ctx) {
  const bool one_node = ctx.boot->local_size() == ctx.boot->size();  // the same answer on every PE
  if (one_node) return TSHMEM_SUCCESS;
  ProxyConfig config;
  config.chunk_bytes = ctx.env.proxy_chunk;
  config.ring_entries = static_cast<uint32_t>(ctx.env.proxy_ring);
  Status local = TSHMEM_SUCCESS;
  const int64_t ring = ctx.env.proxy_ring;
  if (ring < 2 || ring > (int64_t{1} << 24) || (ring & (ring - 1)) != 0)
    local = set_error(TSHMEM_ERR_CONFIG, "TSHMEM_PROXY_RING=%lld: must be a power of two in [2, 16777216]",
                      static_cast<long long>(ring));
  else if (ctx.env.proxy_chunk < 64 || ctx.env.proxy_chunk > (uint64_t{256} << 20))
    local = set_error(TSHMEM_ERR_CONFIG, "TSHMEM_PROXY_CHUNK=%llu: must be in [64, 268435456] bytes",
                      static_cast<unsigned long long>(ctx.env.proxy_chunk));
  TSHMEM_CHECK(agree_on_status(*ctx.boot, local, "tshmem_init: sizing the off-node proxy"));
  TSHMEM_CHECK(make_proxy_host_rma(*ctx.boot, *ctx.mem, ctx.env.symmetric_size, config,
                                   ctx.mem->device_memory() ? ctx.cuda_device : -1, &ctx.host_rma,
                                   &ctx.offnode_reason));
  if (ctx.host_rma) {
    ctx.heap->attach_host_rma(ctx.host_rma.get());
  } else if (ctx.boot->rank() == 0) {
    TSHMEMI_LOG(kWarn, kLogInit, "PEs of other nodes are unreachable: %s", ctx.offnode_reason.c_str());
  }
  return TSHMEM_SUCCESS;
}

Status init_steps(Context &ctx, unsigned flags, const void *mpi_comm) {
  // The environment is parsed before the bootstrap, but its verdict is shared after it: a malformed
  // variable on one PE fails init on all of them.
  const Status env_status = parse_env(&ctx.env);
  std::string env_error = env_status != TSHMEM_SUCCESS ? last_error_message() : std::string();
  if (env_status == TSHMEM_SUCCESS) {
    unsigned mask = kLogAll;
    log_subsys_from(ctx.env.debug_subsys, &mask);
    log_configure(log_level_from(ctx.env.debug), mask);
  }
  const int node_size = env_status == TSHMEM_SUCCESS ? static_cast<int>(ctx.env.debug_node_size) : 0;
  TSHMEM_CHECK(make_mpi_bootstrap((flags & TSHMEMX_INIT_WITH_MPI_COMM) ? mpi_comm : nullptr, node_size, &ctx.boot));
  Bootstrap &boot = *ctx.boot;
  log_set_pe(boot.rank(), boot.size());
  if (env_status != TSHMEM_SUCCESS) set_error_message(env_status, env_error);
  TSHMEM_CHECK(agree_on_status(boot, env_status, "tshmem_init: reading the environment"));

  Status local = TSHMEM_SUCCESS;
  if (boot.size() > TSHMEM_MAX_PES)
    local = set_error(TSHMEM_ERR_CONFIG, "%d PEs exceed TSHMEM_MAX_PES (%d)", boot.size(), TSHMEM_MAX_PES);
  std::string backend;
  if (local == TSHMEM_SUCCESS) local = choose_backend(ctx.env, &backend);
  TSHMEM_CHECK(agree_on_status(boot, local, "tshmem_init: choosing the memory backend"));
  TSHMEM_CHECK(validate_configuration(ctx, backend));

  if (backend != "shm") {
    TSHMEM_CHECK(agree_on_status(boot, select_gpu(ctx), "tshmem_init: selecting the GPU"));
  }
  TSHMEM_CHECK(agree_on_status(boot, create_backend(ctx, backend), "tshmem_init: creating the backend"));
  TSHMEM_CHECK(ctx.mem->create(boot, ctx.env.symmetric_size));  // collective; agrees internally
  TSHMEM_CHECK(
      agree_on_status(boot, PeerTable::build(*ctx.mem, boot, &ctx.peers), "tshmem_init: building the peer table"));
  ctx.heap = std::make_unique<SymmetricHeap>(boot, *ctx.mem, ctx.env.symmetric_size, TSHMEM_INTERNAL_HEAP_BYTES);
  // tshmem's own region (device barrier counters) starts zeroed on every PE.
  TSHMEM_CHECK(agree_on_status(boot, ctx.mem->zero(ctx.mem->local_base(), TSHMEM_INTERNAL_HEAP_BYTES),
                               "tshmem_init: clearing the internal heap region"));
  TSHMEM_CHECK(create_host_rma(ctx));
  if (ctx.mem->device_memory()) {
    TSHMEM_CHECK(agree_on_status(boot, create_device_state(ctx), "tshmem_init: filling the device state"));
  }
  TSHMEM_CHECK(nvls_init(ctx));  // collective: the multicast policy, and the region where it is allowed
  TSHMEM_CHECK(boot.barrier());
  TSHMEMI_LOG(kInfo, kLogInit, "initialised: %d PEs (%d on this node), backend %s, heap %llu bytes at %p%s",
              boot.size(), boot.local_size(), ctx.mem->name(), static_cast<unsigned long long>(ctx.env.symmetric_size),
              ctx.mem->local_base(), ctx.host_rma ? ", other nodes through the proxy" : "");
  return TSHMEM_SUCCESS;
}

}  // namespace

Context::Context() = default;
Context::~Context() {
  // Reverse order of creation. The backend's memory goes before the bootstrap (which may finalise MPI).
  device_state.reset();
  nvls.reset();  // local undo only; finalize and the failed-init path run the collective teardown first
  host_rma.reset();
  heap.reset();
  mem.reset();
  boot.reset();
}

Context *context() { return g_context; }

Context *require_context(const char *call) {
  if (g_context == nullptr)
    set_error(TSHMEM_ERR_NOT_INITIALIZED, "%s: tshmem is not initialised (call tshmem_init first)", call);
  return g_context;
}

Status check_pe(const Context &ctx, const char *call, int pe) {
  if (pe < 0 || pe >= ctx.peers.n_pes())
    return set_error(TSHMEM_ERR_INVALID_PE, "%s: PE %d out of range [0, %d) on PE %d", call, pe, ctx.peers.n_pes(),
                     ctx.peers.my_pe());
  return TSHMEM_SUCCESS;
}

Status init_context(unsigned flags, const void *mpi_comm) {
  if (g_context != nullptr)
    return set_error(TSHMEM_ERR_INVALID_ARG, "tshmem_init: already initialised (call tshmem_finalize first)");
  clear_last_error();
  auto ctx = std::make_unique<Context>();
  const Status status = init_steps(*ctx, flags, mpi_comm);
  if (status != TSHMEM_SUCCESS) {
    // Every PE agreed on the failure, so every PE tears down together.
    const std::string message = last_error_message();
    if (ctx->boot) nvls_finalize(*ctx);
    if (ctx->host_rma) ctx->host_rma->destroy();  // collective: every PE that made it is here
    if (ctx->mem && ctx->boot && ctx->mem->local_base() != nullptr) ctx->mem->destroy(*ctx->boot);
    ctx.reset();
    log_set_pe(-1, -1);
    return set_error_message(status, message);
  }
  g_context = ctx.release();
  return TSHMEM_SUCCESS;
}

void finalize_context() {
  if (g_context == nullptr) return;
  Context *ctx = g_context;
  // The finalize rendezvous is checked like any collective: a PE still allocating is named, not hung.
  if (ctx->heap->rendezvous(CollectiveKind::kFinalize) != TSHMEM_SUCCESS) {
    // Some PE is not finalizing: tearing down now would leave it in a collective nobody else joins.
    // tshmem stays initialised everywhere; the error (on every PE) says which PE did what.
    set_error_message(static_cast<Status>(last_error_code()),
                      last_error_message() + " tshmem_finalize did nothing: call it again on every PE.");
    return;
  }
  g_context = nullptr;
  ctx->device_state.reset();                    // withdraws the state from every registered unit
  nvls_finalize(*ctx);                          // collective: unmap, unbind, release the multicast object
  if (ctx->host_rma) ctx->host_rma->destroy();  // collective: drained before the memory under it goes
  ctx->mem->destroy(*ctx->boot);
  delete ctx;
  log_set_pe(-1, -1);
}

}  // namespace tshmemi
