// Child of device_pe_trap_test (bug (b)): run under mpirun. PE 0 launches a kernel that writes to PE 99 (or
// waits forever with a timeout, mode "timeout"), which must trap; then the PEs that are still healthy check
// that nothing was written anywhere. Exit status: 0 when the kernel trapped and nothing was written, 1
// otherwise, 77 without a GPU. The trap message itself goes to stdout (device printf); the parent checks it.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "tshmem/device/tshmem_device.cuh"
#include "tshmem/tshmem.h"

namespace {

constexpr size_t kBytes = 1 << 16;

__global__ void write_pe(int *dest, int pe) {
  tshmem_int_p(dest + 5, 0x5eed, pe);
  tshmem::putmem(dest + 64, dest, 256, pe);
}

__global__ void wait_forever(const __grid_constant__ tshmemi_device_state st, uint64_t *sig) {
  tshmem::signal_wait_until(sig, TSHMEM_CMP_EQ, 12345, st);
}

bool all_zero(const void *device_ptr, size_t bytes) {
  std::vector<unsigned char> host(bytes, 0xff);
  if (cudaMemcpy(host.data(), device_ptr, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (unsigned char c : host)
    if (c != 0) return false;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  const bool timeout_mode = argc > 1 && std::strcmp(argv[1], "timeout") == 0;
  const int bad_pe = argc > 2 ? std::atoi(argv[2]) : 99;
  MPI_Init(&argc, &argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
  if (tshmem_init() != 0) {
    std::fprintf(stderr, "tshmem_init: %s\n", tshmemx_last_error());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  int *buf = static_cast<int *>(tshmem_calloc(1, kBytes));
  cudaDeviceSynchronize();
  tshmem_barrier_all();
  int ok = 1;
  if (me == 0) {
    if (timeout_mode) {
      tshmemi_device_state st;
      tshmemx_device_view(&st);
      st.wait_timeout_ns = 200ull * 1000 * 1000;  // 200 ms
      wait_forever<<<1, 1>>>(st, reinterpret_cast<uint64_t *>(buf));
    } else {
      write_pe<<<1, 1>>>(buf, bad_pe);
    }
    const cudaError_t rc = cudaDeviceSynchronize();
    std::fflush(stdout);
    std::fprintf(stderr, "PE 0: kernel finished with %s\n", cudaGetErrorName(rc));
    if (rc == cudaSuccess) ok = 0;  // it had to trap
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // The healthy PEs check their own buffer and PE 0's (through their mapping of it): nothing was written.
  if (me != 0) {
    if (!all_zero(buf, kBytes)) ok = 0, std::fprintf(stderr, "PE %d: own buffer was written\n", me);
    void *pe0 = tshmem_ptr(buf, 0);
    if (pe0 != nullptr && !all_zero(pe0, kBytes))
      ok = 0, std::fprintf(stderr, "PE %d: PE 0's buffer was written\n", me);
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (me == 0) std::printf("RESULT: %s (%d PEs)\n", all_ok ? "trapped, nothing written" : "FAILED", n);
  std::fflush(stdout);
  // PE 0's CUDA context is gone after the trap: skip tshmem_finalize (collective GPU teardown) everywhere.
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
