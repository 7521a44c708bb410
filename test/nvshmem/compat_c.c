/* The compat headers compile as C (no CUDA needed) and their constants are tshmem's. compat_cxx.cc compiles
 * this same file as C++, so both languages check the same list. */
#include <assert.h> /* static_assert in C11 */
#include <stddef.h>

#include "nvshmem.h"
#include "nvshmemx.h"

static_assert(NVSHMEMX_SUCCESS == TSHMEM_SUCCESS, "status");
static_assert(NVSHMEM_TEAM_WORLD == TSHMEM_TEAM_WORLD && NVSHMEMX_TEAM_NODE == TSHMEMX_TEAM_NODE, "teams");
static_assert(NVSHMEM_TEAM_INVALID == TSHMEM_TEAM_INVALID, "invalid team");
static_assert(NVSHMEM_CMP_EQ == TSHMEM_CMP_EQ && NVSHMEM_CMP_NE == TSHMEM_CMP_NE && NVSHMEM_CMP_GT == TSHMEM_CMP_GT &&
                  NVSHMEM_CMP_LE == TSHMEM_CMP_LE && NVSHMEM_CMP_LT == TSHMEM_CMP_LT && NVSHMEM_CMP_GE == TSHMEM_CMP_GE,
              "comparisons");
static_assert(NVSHMEM_SIGNAL_SET == TSHMEM_SIGNAL_SET && NVSHMEM_SIGNAL_ADD == TSHMEM_SIGNAL_ADD, "signals");
static_assert(sizeof(nvshmem_team_t) == sizeof(tshmem_team_t), "team type");
static_assert(sizeof(nvshmem_team_config_t) == sizeof(tshmem_team_config_t) && NVSHMEM_TEAM_NUM_CONTEXTS == 1,
              "team config");
static_assert(NVSHMEMX_INIT_WITH_MPI_COMM == TSHMEMX_INIT_WITH_MPI_COMM, "init flag");

/* Every host name an NVSHMEM host program uses, taken by address (a missing mapping fails to link or compile). */
int nvshmem_compat_names(void *mpi_comm) {
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  attr.mpi_comm = mpi_comm;
  const void *names[] = {(const void *)nvshmem_init,
                         (const void *)nvshmem_finalize,
                         (const void *)nvshmem_my_pe,
                         (const void *)nvshmem_n_pes,
                         (const void *)nvshmem_malloc,
                         (const void *)nvshmem_calloc,
                         (const void *)nvshmem_align,
                         (const void *)nvshmem_free,
                         (const void *)nvshmem_ptr,
                         (const void *)nvshmem_putmem,
                         (const void *)nvshmem_getmem,
                         (const void *)nvshmem_quiet,
                         (const void *)nvshmem_barrier_all,
                         (const void *)nvshmem_sync_all,
                         (const void *)nvshmem_team_my_pe,
                         (const void *)nvshmem_team_split_strided,
                         (const void *)nvshmem_team_destroy,
                         (const void *)nvshmem_team_n_pes,
                         (const void *)nvshmem_global_exit,
                         (const void *)nvshmem_info_get_version,
                         (const void *)nvshmemx_init_attr,
                         (const void *)nvshmemx_mc_ptr,
                         (const void *)nvshmemx_putmem_on_stream,
                         (const void *)nvshmemx_getmem_on_stream,
                         (const void *)nvshmemx_barrier_on_stream,
                         (const void *)nvshmemx_barrier_all_on_stream,
                         (const void *)nvshmemx_sync_all_on_stream,
                         (const void *)nvshmemx_int_sum_reduce_on_stream,
                         (const void *)nvshmemx_float_max_reduce_on_stream,
                         (const void *)nvshmemx_long_fcollect_on_stream,
                         (const void *)nvshmemx_double_alltoall_on_stream,
                         (const void *)nvshmemx_char_broadcast_on_stream,
                         (const void *)nvshmemx_double_prod_reduce_on_stream,
                         (const void *)nvshmemx_uint64_xor_reduce_on_stream,
                         (const void *)nvshmem_barrier,
                         (const void *)nvshmem_int_sum_reduce,
                         (const void *)nvshmem_double_min_reduce,
                         (const void *)nvshmem_uint_max_reduce,
                         (const void *)nvshmem_longlong_and_reduce,
                         (const void *)nvshmem_size_or_reduce,
                         (const void *)nvshmem_float_prod_reduce,
                         (const void *)nvshmem_int_fcollect,
                         (const void *)nvshmem_int64_alltoall,
                         (const void *)nvshmem_uint8_broadcast,
                         (const void *)nvshmemx_buffer_register_symmetric,
                         (const void *)nvshmemx_buffer_unregister_symmetric};
  size_t present = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) present += names[i] != NULL;
  return (int)present + (int)attr.version;
}
