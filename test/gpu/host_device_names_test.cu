// The eight names shared by host and device (tshmem/device/host_device_names.cuh): called by their C names in
// a kernel and on the host of the same CUDA unit, and found under the same exported symbol by dlsym.
#include <dlfcn.h>

#include <vector>

#include "device_test_util.h"
#include "tshmem/tshmem.h"  // nothing else: the C names alone must reach the device API

namespace {

struct Seen {
  int my_pe, n_pes, ptr_is_self, ptr_peer_ok, got;
};

// One thread per PE: writes its number into the next PE's slot by putmem, completes it (quiet, barrier), reads
// the previous PE's number back from its own slot through getmem, then a second round through sync_all.
__global__ void names_kernel(int *slot, int *slot2, Seen *seen) {
  const int me = tshmem_my_pe(), n = tshmem_n_pes();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  seen->my_pe = me;
  seen->n_pes = n;
  seen->ptr_is_self = tshmem_ptr(slot, me) == slot;
  int *peer = static_cast<int *>(tshmem_ptr(slot, next));
  seen->ptr_peer_ok = peer != nullptr;
  const int mine = 1000 + me;
  tshmem_putmem(slot, &mine, sizeof mine, next);
  tshmem_quiet();
  tshmem_barrier_all();
  int got = -1;
  tshmem_getmem(&got, slot, sizeof got, me);  // own copy, through the remote path
  seen->got = got;
  // Second round: p through the pointer, then sync_all (the thread's own quiet first, as its contract asks).
  if (peer != nullptr) *static_cast<volatile int *>(static_cast<int *>(tshmem_ptr(slot2, next))) = 2000 + me;
  tshmem_quiet();
  tshmem_sync_all();
  if (*static_cast<volatile int *>(slot2) != 2000 + prev) seen->got = -2;
}

TEST(HostDeviceNames, KernelAndHostAgree) {
  TSHMEM_REQUIRE_GPU();
  tshmem_device_test::SymBuffer slot(sizeof(int)), slot2(sizeof(int)), seen(sizeof(Seen));
  names_kernel<<<1, 1>>>(slot.get<int>(), slot2.get<int>(), seen.get<Seen>());
  TSHMEM_CUDA_EXPECT(cudaDeviceSynchronize());
  Seen s{};
  TSHMEM_CUDA_EXPECT(cudaMemcpy(&s, seen.get(), sizeof s, cudaMemcpyDeviceToHost));
  const int me = tshmem_my_pe(), n = tshmem_n_pes();  // the host branch of the same names
  EXPECT_EQ(s.my_pe, me);
  EXPECT_EQ(s.n_pes, n);
  EXPECT_EQ(s.ptr_is_self, 1);
  EXPECT_EQ(s.ptr_peer_ok, 1);
  EXPECT_EQ(s.got, 1000 + (me + n - 1) % n);
  // The host forms on the same buffer: put into the next PE, barrier, get my own copy back.
  const int next = (me + 1) % n, mine = 3000 + me;
  EXPECT_EQ(tshmem_putmem(slot.get(), &mine, sizeof mine, next), 0) << tshmemx_last_error();
  tshmem_quiet();
  tshmem_barrier_all();
  int got = -1;
  EXPECT_EQ(tshmem_getmem(&got, slot.get(), sizeof got, me), 0) << tshmemx_last_error();
  EXPECT_EQ(got, 3000 + (me + n - 1) % n);
  EXPECT_EQ(tshmem_ptr(slot.get(), me), slot.get());
  tshmem_sync_all();
}

TEST(HostDeviceNames, HostErrorsStillReported) {
  TSHMEM_REQUIRE_GPU();
  int v = 0;
  EXPECT_NE(tshmem_putmem(&v, &v, sizeof v, tshmem_n_pes()), 0);  // PE out of range: the library's check
  EXPECT_EQ(tshmemx_last_error_code(), TSHMEM_ERR_INVALID_PE);
  tshmemx_clear_last_error();
}

// No GPU needed: the exported C symbols keep their names and behave as the host branch.
TEST(HostDeviceNames, ExportedSymbolsKeepTheirNames) {
  const char *names[] = {"tshmem_my_pe",  "tshmem_n_pes", "tshmem_ptr",         "tshmem_putmem",
                         "tshmem_getmem", "tshmem_quiet", "tshmem_barrier_all", "tshmem_sync_all"};
  for (const char *name : names) EXPECT_NE(dlsym(RTLD_DEFAULT, name), nullptr) << name;
  auto c_my_pe = reinterpret_cast<int (*)(void)>(dlsym(RTLD_DEFAULT, "tshmem_my_pe"));
  auto c_n_pes = reinterpret_cast<int (*)(void)>(dlsym(RTLD_DEFAULT, "tshmem_n_pes"));
  ASSERT_NE(c_my_pe, nullptr);
  ASSERT_NE(c_n_pes, nullptr);
  EXPECT_EQ(c_my_pe(), tshmem_my_pe());
  EXPECT_EQ(c_n_pes(), tshmem_n_pes());
}

}  // namespace
