// Two-sided messages between PEs on a communicator of their own: what the off-node proxy needs from the
// engine under the bootstrap (MPI: messenger_mpi.cc). Transports reach MPI only through this. Messages are sent from
// and received into host memory (staging, records), never GPU memory.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tshmemi {

class Messenger {
 public:
  /// An outstanding send or receive. Opaque: room for the engine's request handle.
  struct Request {
    alignas(8) unsigned char handle[16] = {};
    bool active = false;
  };

  virtual ~Messenger() = default;
  /// Starts sending `bytes` at `data` to `pe`; `data` stays untouched until test() says done.
  virtual Status isend(const void *data, size_t bytes, int pe, Request *request) = 0;
  /// Starts receiving one message of at most `capacity` bytes from any PE into `data`.
  virtual Status irecv(void *data, size_t capacity, Request *request) = 0;
  /// Whether `request` has completed; for a receive, from which PE and how many bytes.
  virtual Status test(Request *request, bool *done, int *source = nullptr, size_t *bytes = nullptr) = 0;
  /// Withdraws `count` receives at teardown. A receive a message has matched may not be withdrawn (its data still
  /// to come from a peer that stopped): it is released to the engine, and (*held)[i] says its buffer must then
  /// outlive the messenger (leaked). Bounded: at most about a second in all, however many.
  virtual void cancel(Request *requests, size_t count, std::vector<bool> *held) = 0;
  /// Forgets `request` without waiting for it (teardown after a failure: a send to a PE that is gone may never
  /// complete). Its buffer must then outlive the messenger.
  virtual void release(Request *request) = 0;
};

/// Makes a messenger on a duplicate of the bootstrap's communicator (collective over all PEs). When the engine
/// cannot carry messages from a second thread (MPI without MPI_THREAD_MULTIPLE), returns success with
/// *out empty and the reason in *unavailable; every PE reaches the same verdict.
Status make_mpi_messenger(Bootstrap &boot, std::unique_ptr<Messenger> *out, std::string *unavailable);

}  // namespace tshmemi
