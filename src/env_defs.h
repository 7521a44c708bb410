// Every TSHMEM_* variable, once. This list generates the options struct, the strict parser, the
// `tshmem-info` listing and the README table (a test checks that the README matches it).
//
// X(NAME, field, kind, default text, category, description)
//   kind: Size (bytes, suffix K/M/G/T), Int, Bool (0/1/true/false/yes/no/on/off), Choice (one of a list), String
// TSHMEM_ENV_CHOICES_<NAME> gives the allowed values of a Choice.
//
// clang-format off
#define TSHMEM_ENV_LIST(X)                                                                                        \
  X(SYMMETRIC_SIZE, symmetric_size, Size, "1G", "heap", "Bytes of symmetric heap per PE (suffix K/M/G/T). Must match on all PEs.") \
  X(MEM_BACKEND, mem_backend, Choice, "auto", "heap", "Memory backend: auto (vmm with a GPU, else shm), vmm, ipc, shm. Must match on all PEs.") \
  X(DEVICE, device, Int, "-1", "placement", "CUDA device for this PE; -1 picks by node-local rank.")                    \
  X(ALLOW_SHARED_GPU, allow_shared_gpu, Bool, "0", "placement", "Allow more PEs on a node than GPUs (PEs share GPUs round-robin).") \
  X(BIND, bind, Choice, "auto", "placement", "CPU binding: auto (CPUs nearest the GPU, via hwloc) or none.")           \
  X(DISABLE_NVLS, disable_nvls, Bool, "0", "nvls", "1 forbids NVLink multicast: no multicast driver call is made.")          \
  X(INIT_TIMEOUT_MS, init_timeout_ms, Int, "60000", "init", "Longest wait of one init step for another PE (each collective of init, the descriptor exchange's connect, accept, send, receive); it then fails naming the step and the peer. 1 to 86400000.") \
  X(WAIT_TIMEOUT_MS, wait_timeout_ms, Int, "0", "device", "A device wait for another PE (signal_wait_until, wait_until, barriers, collectives) longer than this traps with a message; 0 waits forever. Waits for the off-node proxy also end at TSHMEM_PROXY_TIMEOUT_MS. 0 to 86400000.") \
  X(COLL_PDL, coll_pdl, Bool, "1", "coll", "On-stream collectives launch as programmatic dependent launches (Hopper and later): the kernel becomes resident while the previous one finishes. 0 = ordinary launches.") \
  X(PROXY_RING, proxy_ring, Int, "1024", "proxy", "Requests in each off-node proxy channel (a power of two, 2 .. 16777216); producers wait while it is full.") \
  X(PROXY_CHUNK, proxy_chunk, Size, "512K", "proxy", "Most bytes the off-node proxy moves in one message (64 .. 256M); its staging memory is 16 such buffers. Must match on all PEs.") \
  X(PROXY_STAGE_MAX, proxy_stage_max, Size, "64K", "proxy", "The largest put from a kernel to a PE of another node whose payload the kernel writes into pinned host staging itself (the proxy then reads it with the CPU: no CUDA copy in the origin process); larger puts are copied out of the GPU heap by the proxy. 0 = every put copied by the proxy. 0 .. 1M; the staging ring is 64 such payloads.") \
  X(PROXY_TIMEOUT_MS, proxy_timeout_ms, Int, "300000", "proxy", "Longest wait on other PEs: a host call waiting for the off-node proxy (putmem, getmem, quiet) or for other PEs in a collective tshmem runs over MPI (the agreement of every checked call, barrier_all, team barriers, finalize) then fails, leaving tshmem in a failed state; a kernel's quiet, g, get, fetching atomic, full channel or barrier arrival traps; each names the call, the PEs and what it waited for. 1 to 86400000.") \
  X(WAIT_WARN_MS, wait_warn_ms, Int, "10000", "proxy", "A host call that has waited this long for other PEs (a collective, the rendezvous of barrier_all, a team barrier or finalize, the off-node proxy) says once what it waits for and when it gives up (TSHMEM_PROXY_TIMEOUT_MS); 0 = no such warning. 0 to 86400000.") \
  X(REMOTE_TRANSPORT, remote_transport, String, "auto", "proxy", "How PEs of other nodes are reached: auto (ucx where built and it starts, else mpi), ucx or mpi (the rows of the transport table; tshmem-info lists them). A transport named that cannot start fails init on every PE. Must match on all PEs.") \
  X(UCX_GPU_DIRECT, ucx_gpu_direct, Choice, "auto", "proxy", "UCX and a GPU heap: on hands GPU memory to UCX directly (GPUDirect RDMA); off stages it through pinned host memory; auto: on where UCX has a transport that registers CUDA memory for RDMA.") \
  X(DEBUG, debug, Choice, "warn", "debug", "Log level: none, warn, info, trace.")                                      \
  X(DEBUG_SUBSYS, debug_subsys, String, "ALL", "debug", "Comma list of INIT,BOOT,HEAP,MEM,CUDA,TOPO,NVLS or ALL.") \
  X(DEBUG_NODE_SIZE, debug_node_size, Int, "0", "debug", "Testing: treat each N consecutive PEs of a node as a node of their own (off-node paths on one host); 0 = off. Must match on all PEs.") \
  X(DEBUG_UCX_STAGED, debug_ucx_staged, Bool, "0", "debug", "Testing: UCX carries the staged protocol even where it could reach the heap directly (a host heap), as it does for a GPU heap without GPUDirect.") \
  X(DEBUG_PROXY_PROGRESS, debug_proxy_progress, Bool, "1", "debug", "Testing: 0 = the off-node proxy thread never drives its transport's progress (it still takes requests): what other PEs' operations on this PE need from it is then done by tshmem's waits on its application threads alone (the ucx transport's direct mode can; the mpi transport cannot).") \
  X(DEBUG_FAIL, debug_fail, String, "", "debug", "Testing: make init step STEP fail on some PEs: STEP:PES[:pause], PES = all, 0,2-3 or all-but-0; :pause waits (to be killed) instead of failing. tshmem-info lists the steps.")
// clang-format on

// NVSHMEM's names that mean the same: read as NVSHMEM_<NAME> where TSHMEM_<NAME> is unset, when the program
// initialised through the NVSHMEM compat headers (TSHMEMX_INIT_NVSHMEM_ENV). NVSHMEM_DISABLE_NVLS is read
// always, by NVSHMEM's own rule (a site-wide switch; see parse_env).
#define TSHMEM_ENV_NVSHMEM_NAMES(X) X(SYMMETRIC_SIZE)

#define TSHMEM_ENV_CHOICES_MEM_BACKEND "auto|vmm|ipc|shm"
#define TSHMEM_ENV_CHOICES_BIND "auto|none"
#define TSHMEM_ENV_CHOICES_DEBUG "none|warn|info|trace"
#define TSHMEM_ENV_CHOICES_UCX_GPU_DIRECT "auto|on|off"
