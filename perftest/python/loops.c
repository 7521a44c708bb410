/*
 * The C calls that bench.py times beside their Python twins, in the same process, job and heap. bench.py compiles
 * this file against the Python package (tshmem.get_include(), tshmem.get_library_dir()). Each function returns
 * microseconds per call over `iters` calls, or -1 when a call failed; the on-stream forms only issue their calls
 * (bench.py synchronises the stream after them, in the C rows as in the Python rows), so that this file needs
 * neither CUDA headers nor the CUDA runtime.
 */
#include <time.h>
#include <tshmem/tshmem.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

double c_empty_free(long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i) {
    void *p = tshmem_malloc(8);
    if (p == NULL) return -1;
    tshmem_free(p);
  }
  return (now_us() - t0) / (double)iters;
}

double c_put8(void *dst, const void *src, int pe, long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i)
    if (tshmem_putmem(dst, src, 8, pe) != 0) return -1;
  return (now_us() - t0) / (double)iters;
}

double c_barrier_all(long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i) tshmem_barrier_all();
  return tshmemx_last_error_code() != 0 ? -1 : (now_us() - t0) / (double)iters;
}

double c_allreduce8(void *dst, const void *src, long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i)
    if (tshmemi_host_reduce(TSHMEM_TEAM_WORLD, dst, src, 2, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM) != 0) return -1;
  return (now_us() - t0) / (double)iters;
}

double c_put8_on_stream(void *dst, const void *src, int pe, void *stream, long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i)
    if (tshmemx_putmem_on_stream(dst, src, 8, pe, (tshmemx_stream_t)stream) != 0) return -1;
  return (now_us() - t0) / (double)iters;
}

double c_barrier_all_on_stream(void *stream, long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i)
    if (tshmemx_barrier_all_on_stream((tshmemx_stream_t)stream) != 0) return -1;
  return (now_us() - t0) / (double)iters;
}

double c_allreduce8_on_stream(void *dst, const void *src, void *stream, long iters) {
  const double t0 = now_us();
  for (long i = 0; i < iters; ++i)
    if (tshmemx_allreduce_on_stream(TSHMEM_TEAM_WORLD, dst, src, 2, TSHMEMX_DTYPE_FLOAT, TSHMEMX_OP_SUM,
                                    (tshmemx_stream_t)stream) != 0)
      return -1;
  return (now_us() - t0) / (double)iters;
}
