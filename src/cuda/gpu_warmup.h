// Starting CUDA while MPI starts. Creating the context of a PE's GPU takes a fifth of a second or more, and
// MPI_Init mostly waits for the launcher: a thread of its own starts CUDA on the GPU select_gpu will pick, as
// the launcher's placement variables predict it (select_gpu's own rule on the launcher's local rank), so that
// init costs about MPI's start whatever the GPU. The prediction is only a head start: select_gpu decides on the
// bootstrap's ranks as always, and a context made ahead on a device it did not pick is destroyed again.
#pragma once

#include <memory>

#include "env.h"

namespace tshmemi {

class GpuWarmup {
 public:
  /// Starts the thread; null when the launcher does not say where this process runs, or no thread starts.
  /// Call before the bootstrap, only where tshmem starts MPI itself and the heap will be on the GPU.
  static std::unique_ptr<GpuWarmup> start(const EnvOptions &env) noexcept;
  /// Waits for the thread, and lets go of a context it made on a device select_gpu did not pick.
  ~GpuWarmup();
  GpuWarmup(const GpuWarmup &) = delete;
  GpuWarmup &operator=(const GpuWarmup &) = delete;

  /// Waits for the thread (CUDA has started, or failed to, when this returns).
  void join();
  /// select_gpu picked `device` (-1: init failed before it): waits for the thread; destroys the context made
  /// ahead if it is on another device and was not there before. Once; the destructor does it if nobody did.
  void settle(int device);

  struct Started;  ///< the thread and what it did (gpu_warmup.cc)

 private:
  GpuWarmup();
  std::unique_ptr<Started> started_;
};

}  // namespace tshmemi
