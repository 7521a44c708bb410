/*
 * Every part of the symmetric heap that tshmem keeps for itself, in one place. Plain C (plus C++ checks) so that the
 * host runtime, which reserves, zeroes and guards these regions, builds without CUDA; the device code addresses them
 * from its own heap base (own_heap_base). The allocator never hands out a byte of either region; host RMA and the
 * on-stream collectives refuse ranges that touch them.
 *
 * At the start of every heap: the internal region, TSHMEM_INTERNAL_HEAP_BYTES, zeroed at init.
 *   0                      uint64 sync_arrival[TSHMEM_MAX_PES]  slot j: the last sync epoch PE j announced here
 *   8 KiB                  uint64 sync_epoch                    syncs this PE has completed (its own leader only)
 *   8 KiB + 128            uint32 grid_arrived                  blocks arrived at the current grid barrier
 *   8 KiB + 256            uint32 grid_generation               grid barriers completed on this PE
 *   16 KiB                 uint64 row_epoch[ROWS]               collective barriers block row r has completed (WORLD
 *                                                               and NODE share them: same PEs whenever both are
 *                                                               node-local)
 *   + 8 * ROWS             uint64 flag[ROWS][MAX_TEAM]          flag[r][k]: last epoch member k announced on row r
 *   after the flags        uint64 ll_calls[LL_ROWS]             LL all-reduces LL row r has completed on this PE
 *   after the LL calls     uint64 thread_epoch, thread_flag[MAX_TEAM]   the thread forms' row (WORLD, NODE)
 *   64 KiB                 LL area, 2 MiB: [LL_ROWS][2 parities][n - 1 senders][lines] of 16-byte lines
 *   64 KiB + 2 MiB         per split team handle h >= FIRST_SPLIT_TEAM: uint64 row_epoch[ROWS],
 *                          flag[ROWS][MAX_TEAM], thread_epoch, thread_flag[MAX_TEAM] (zeroed again by
 *                          tshmem_team_destroy, so a reused handle starts from zero)
 *   64 KiB + 3 MiB         end
 *
 * A heap in host memory (shm) runs no kernel, so the LL area serves the host-blocking collectives instead: from
 * TSHMEMI_HOST_COLL_SYNC_OFFSET(h), 2 KiB per team handle h: two 64-byte rendezvous slots (NodeSync's), then this
 * PE's report for a failed call. Never zeroed after init: a split team's calls continue the numbers of the last
 * team that held its handle (src/coll/coll_host_mem.h). After them, TSHMEMI_HOST_COLL_STAGE_BYTES for each of
 * WORLD and NODE and each call parity: a small collective's source, copied there before the rendezvous, so the
 * members read copies and the call needs no closing rendezvous. After them, in builds without the symmetry check,
 * TSHMEMI_HOST_COLL_RING_BYTES for each of WORLD and NODE: the broadcast ring (src/coll/broadcast_ring.h), this
 * PE's count of completed broadcasts in its first 64 bytes, then TSHMEMI_HOST_COLL_RING_ENTRIES entries, each a
 * 64-byte header and the data of one broadcast this PE was the root of.
 *
 * At the end of every heap of a job that spans nodes: the spanning collectives' area, TSHMEMI_COLL_SPAN_BYTES from
 * TSHMEMI_COLL_SPAN_OFFSET(heap size), 4 KiB aligned; init zeroes its barrier words. Bounded per PE whatever the
 * job or message size: 64 KiB + 32 x 32 KiB = 1.0625 MiB.
 *   0                      uint64 row_epoch[ROWS]               spanning barriers row r has completed on this PE
 *   256                    uint64 flag[ROWS][MAX_TEAM]          flag[r][k]: last epoch member k announced on row r
 *   HEADER                 ROWS x ROW_BYTES of staging          block row r's data (its n slots)
 */
#ifndef TSHMEM_DEVICE_INTERNAL_REGIONS_H
#define TSHMEM_DEVICE_INTERNAL_REGIONS_H

#include "tshmem/device/state_types.h"

/** Bytes at the start of every heap that tshmem keeps for itself (the layout above). */
#define TSHMEM_INTERNAL_HEAP_BYTES (64u * 1024u + 2048u * 1024u + 1024u * 1024u)

/* The device sync words (sync_all / sync_pes, the grid barrier). */
#define TSHMEMI_SYNC_ARRIVAL_OFFSET 0u
#define TSHMEMI_SYNC_EPOCH_OFFSET (TSHMEMI_SYNC_ARRIVAL_OFFSET + 8u * TSHMEM_MAX_PES)
#define TSHMEMI_GRID_ARRIVED_OFFSET (TSHMEMI_SYNC_EPOCH_OFFSET + 128u)
#define TSHMEMI_GRID_GENERATION_OFFSET (TSHMEMI_GRID_ARRIVED_OFFSET + 128u)
#define TSHMEMI_SYNC_BYTES (16u * 1024u)

/* The collectives' barrier words and LL area. */
/** Block rows (blockIdx.x of a *_block call, gridDim.x of a *_grid call) and team size the flags cover. */
#define TSHMEMI_COLL_MAX_ROWS 32
#define TSHMEMI_COLL_MAX_TEAM 128
/** Block rows of the LL all-reduce (its own counters and slots; no barrier flags). */
#define TSHMEMI_COLL_LL_MAX_ROWS 128
/** Offsets of WORLD's and NODE's words: row epochs, flags, LL call counters, the thread row. */
#define TSHMEMI_COLL_ROW_EPOCHS_OFFSET TSHMEMI_SYNC_BYTES
#define TSHMEMI_COLL_FLAGS_OFFSET (TSHMEMI_COLL_ROW_EPOCHS_OFFSET + 8u * TSHMEMI_COLL_MAX_ROWS)
#define TSHMEMI_COLL_LL_CALLS_OFFSET (TSHMEMI_COLL_FLAGS_OFFSET + 8u * TSHMEMI_COLL_MAX_ROWS * TSHMEMI_COLL_MAX_TEAM)
#define TSHMEMI_COLL_THREAD_EPOCH_OFFSET (TSHMEMI_COLL_LL_CALLS_OFFSET + 8u * TSHMEMI_COLL_LL_MAX_ROWS)
/** The LL area: offset, size, bytes per row and parity. */
#define TSHMEMI_COLL_LL_OFFSET (64u * 1024u)
#define TSHMEMI_COLL_LL_BYTES (2048u * 1024u)
#define TSHMEMI_COLL_LL_PARITY_BYTES (TSHMEMI_COLL_LL_BYTES / TSHMEMI_COLL_LL_MAX_ROWS / 2)
/** Barrier words of split team handle h (>= TSHMEMI_COLL_FIRST_SPLIT_TEAM): offset, bytes. */
#define TSHMEMI_COLL_FIRST_SPLIT_TEAM 3
#define TSHMEMI_COLL_TEAM_SYNC_BYTES \
  (8u * TSHMEMI_COLL_MAX_ROWS + 8u * TSHMEMI_COLL_MAX_ROWS * TSHMEMI_COLL_MAX_TEAM + 8u + 8u * TSHMEMI_COLL_MAX_TEAM)
#define TSHMEMI_COLL_TEAM_SYNC_OFFSET(h)            \
  (TSHMEMI_COLL_LL_OFFSET + TSHMEMI_COLL_LL_BYTES + \
   (size_t)((h)-TSHMEMI_COLL_FIRST_SPLIT_TEAM) * TSHMEMI_COLL_TEAM_SYNC_BYTES)
/** The host-blocking collectives' rendezvous of team handle h on a heap in host memory (see the top). */
#define TSHMEMI_HOST_COLL_SYNC_BYTES 2048u
#define TSHMEMI_HOST_COLL_SYNC_OFFSET(h) (TSHMEMI_COLL_LL_OFFSET + (size_t)(h)*TSHMEMI_HOST_COLL_SYNC_BYTES)
#define TSHMEMI_HOST_COLL_STAGE_BYTES (128u * 1024u)
/** Staging of team slot s (0: WORLD, 1: NODE) for calls of parity p. */
#define TSHMEMI_HOST_COLL_STAGE_OFFSET(s, p) \
  (TSHMEMI_HOST_COLL_SYNC_OFFSET(TSHMEMI_TEAM_SLOTS) + ((size_t)(s)*2u + (size_t)(p)) * TSHMEMI_HOST_COLL_STAGE_BYTES)
/** The broadcast ring of team slot s (0: WORLD, 1: NODE): entries, bytes per entry, bytes per team slot. */
#define TSHMEMI_HOST_COLL_RING_ENTRIES 256u
#define TSHMEMI_HOST_COLL_RING_ENTRY_BYTES 1024u
#define TSHMEMI_HOST_COLL_RING_BYTES (4096u + TSHMEMI_HOST_COLL_RING_ENTRIES * TSHMEMI_HOST_COLL_RING_ENTRY_BYTES)
#define TSHMEMI_HOST_COLL_RING_OFFSET(s) \
  (TSHMEMI_HOST_COLL_STAGE_OFFSET(2, 0) + (size_t)(s)*TSHMEMI_HOST_COLL_RING_BYTES)
/** Data bytes per 16-byte LL line for elements of `elem_size` bytes (impl/coll.cuh, ll_format, says why). */
#define TSHMEMI_COLL_LL_LINE_BYTES(elem_size) ((elem_size) == 8 ? 8u : 12u)
/** Lines one block row can take per LL call in a team of n: (n - 1) slots per parity. */
#define TSHMEMI_COLL_LL_ROW_LINES(n) ((size_t)(TSHMEMI_COLL_LL_PARITY_BYTES / 16) / (size_t)((n) > 1 ? (n)-1 : 1))

/* The spanning collectives' area at the end of the heap. */
/** Block rows and members the area serves (equal to TSHMEMI_COLL_MAX_ROWS / _MAX_TEAM; checked below). */
#define TSHMEMI_COLL_SPAN_ROWS 32u
#define TSHMEMI_COLL_SPAN_TEAM 128u
/** Barrier words, rounded up to 64 KiB so that the staging rows start 64 KiB aligned. */
#define TSHMEMI_COLL_SPAN_HEADER_BYTES (64u * 1024u)
/** Staging bytes of one block row. */
#define TSHMEMI_COLL_SPAN_ROW_BYTES (32u * 1024u)
/** The whole area. */
#define TSHMEMI_COLL_SPAN_BYTES (TSHMEMI_COLL_SPAN_HEADER_BYTES + TSHMEMI_COLL_SPAN_ROWS * TSHMEMI_COLL_SPAN_ROW_BYTES)
/** Where the area starts in a heap of `heap_bytes` (the same on every PE: the heap size is symmetric). */
#define TSHMEMI_COLL_SPAN_OFFSET(heap_bytes) \
  (((unsigned long long)(heap_bytes)-TSHMEMI_COLL_SPAN_BYTES) & ~(unsigned long long)4095)
/** Offsets inside the area. */
#define TSHMEMI_COLL_SPAN_EPOCHS 0u
#define TSHMEMI_COLL_SPAN_FLAGS 256u
/** Whether a collective on `team` takes the spanning path: the world team of a job whose PEs are not all on one
 * node. Decided here only: the host's launches (src/coll/coll_on_stream.cc, via TeamInfo::spans_nodes) and the device
 * forms (impl/coll_spanning.cuh, spans_nodes) both ask it. Any other team that reaches another node is refused by
 * the host before a launch. */
#define TSHMEMI_COLL_SPANS_NODES(team, n_pes, local_n_pes) ((team) == TSHMEM_TEAM_WORLD && (local_n_pes) != (n_pes))

#ifdef __cplusplus
static_assert(TSHMEMI_GRID_GENERATION_OFFSET + 4 <= TSHMEMI_SYNC_BYTES, "device sync words overflow their 16 KiB");
static_assert(TSHMEMI_COLL_THREAD_EPOCH_OFFSET + 8 + 8 * TSHMEMI_COLL_MAX_TEAM <= TSHMEMI_COLL_LL_OFFSET,
              "collective barrier words overflow into the LL area");
static_assert(TSHMEMI_HOST_COLL_RING_OFFSET(2) <= TSHMEMI_COLL_LL_OFFSET + TSHMEMI_COLL_LL_BYTES,
              "the host collectives' rendezvous slots, staging and broadcast rings do not fit the LL area");
static_assert(TSHMEMI_COLL_LL_PARITY_BYTES % 16 == 0 && TSHMEMI_COLL_LL_ROW_LINES(TSHMEMI_COLL_MAX_TEAM) >= 1,
              "an LL row must hold a line for every sender");
static_assert(TSHMEMI_COLL_TEAM_SYNC_OFFSET(TSHMEMI_TEAM_SLOTS) <= TSHMEM_INTERNAL_HEAP_BYTES,
              "the split teams' barrier words do not fit the internal heap region");
static_assert(TSHMEMI_COLL_SPAN_ROWS == TSHMEMI_COLL_MAX_ROWS && TSHMEMI_COLL_SPAN_TEAM == TSHMEMI_COLL_MAX_TEAM,
              "the spanning area serves every block row and team member of the collectives");
static_assert(TSHMEMI_COLL_SPAN_EPOCHS + 8 * TSHMEMI_COLL_SPAN_ROWS <= TSHMEMI_COLL_SPAN_FLAGS &&
                  TSHMEMI_COLL_SPAN_FLAGS + 8 * TSHMEMI_COLL_SPAN_ROWS * TSHMEMI_COLL_SPAN_TEAM <=
                      TSHMEMI_COLL_SPAN_HEADER_BYTES,
              "spanning barrier words overflow their header");
#endif

#endif /* TSHMEM_DEVICE_INTERNAL_REGIONS_H */
