/*
 * The scratch area of the collectives on a team that spans nodes (impl/coll_spanning.cuh), plain C so that the
 * host runtime reserves it without CUDA. In a job that spans nodes it is the last TSHMEMI_COLL_SPAN_BYTES of
 * every PE's heap (from TSHMEMI_COLL_SPAN_OFFSET(heap size), 4 KiB aligned): the allocator never hands it out,
 * host calls and the on-stream collectives refuse ranges that touch it, and init zeroes its barrier words.
 *
 *   0                      uint64 row_epoch[ROWS]           spanning barriers row r has completed on this PE
 *   256                    uint64 flag[ROWS][MAX_TEAM]      flag[r][k]: last epoch member k announced on row r
 *   HEADER                 ROWS x ROW_BYTES of staging      block row r's data (its n slots)
 *
 * Bounded per PE whatever the job or message size: 64 KiB + 32 x 32 KiB = 1.0625 MiB.
 */
#ifndef TSHMEM_DEVICE_COLL_SPANNING_LAYOUT_H
#define TSHMEM_DEVICE_COLL_SPANNING_LAYOUT_H

/** Block rows and members the area serves (equal to TSHMEMI_COLL_MAX_ROWS / _MAX_TEAM; checked in the .cuh). */
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
/** Whether a collective on `team` takes the spanning path: the world team of a job whose PEs are not all on one
 * node. Decided here only: the host's launches (src/coll/coll_api.cc, through TeamInfo::spans_nodes) and the device
 * forms (impl/coll_spanning.cuh, spans_nodes) both ask it. Any other team that reaches another node is refused by
 * the host before a launch. */
#define TSHMEMI_COLL_SPANS_NODES(team, n_pes, local_n_pes) ((team) == TSHMEM_TEAM_WORLD && (local_n_pes) != (n_pes))
/** Offsets inside the area. */
#define TSHMEMI_COLL_SPAN_EPOCHS 0u
#define TSHMEMI_COLL_SPAN_FLAGS 256u

#ifdef __cplusplus
static_assert(TSHMEMI_COLL_SPAN_EPOCHS + 8 * TSHMEMI_COLL_SPAN_ROWS <= TSHMEMI_COLL_SPAN_FLAGS &&
                  TSHMEMI_COLL_SPAN_FLAGS + 8 * TSHMEMI_COLL_SPAN_ROWS * TSHMEMI_COLL_SPAN_TEAM <=
                      TSHMEMI_COLL_SPAN_HEADER_BYTES,
              "spanning barrier words overflow their header");
#endif

#endif /* TSHMEM_DEVICE_COLL_SPANNING_LAYOUT_H */
