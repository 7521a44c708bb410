// The MPI transport: the staged protocol (transport/staged/) over two-sided MPI on a communicator of its own
// (bootstrap/messenger_mpi.cc). Every backend's heap is reached this way: the MPI on our hosts is not CUDA-aware,
// so GPU memory is staged through pinned host memory, and the target's proxy applies what arrives.
#include "bootstrap/messenger.h"
#include "transport/staged/staged_transport.h"

namespace tshmemi {
namespace {

class MpiTransport final : public Transport {
 public:
  MpiTransport(std::unique_ptr<Transport> staged, bool heap_on_gpu) : staged_(std::move(staged)), gpu_(heap_on_gpu) {}

  std::string path_of(int) const override {
    return gpu_ ? "mpi staged (GPU heap through pinned host memory; the target's proxy copies it in)"
                : "mpi staged (host memory)";
  }
  Status put(const PutOp &op, uint64_t *done) override { return staged_->put(op, done); }
  Status get(const GetOp &op, uint64_t *done) override { return staged_->get(op, done); }
  Status amo(const AmoOp &op, bool *issued) override { return staged_->amo(op, issued); }
  Status signal(const SignalOp &op, bool *issued) override { return staged_->signal(op, issued); }
  Status fence() override { return staged_->fence(); }
  Status quiet(const Waiter &waiter, bool *complete) override { return staged_->quiet(waiter, complete); }
  Status progress(bool *worked) override { return staged_->progress(worked); }
  uint64_t issued() const override { return staged_->issued(); }
  uint64_t released() const override { return staged_->released(); }
  std::string overdue(std::chrono::milliseconds bound) override { return staged_->overdue(bound); }
  std::string waiting_on() const override { return staged_->waiting_on(); }
  void tell_stopped() override { staged_->tell_stopped(); }
  void close() override { staged_->close(); }
  Status send_raw(int pe, const void *message, size_t bytes) override { return staged_->send_raw(pe, message, bytes); }

 private:
  std::unique_ptr<Transport> staged_;
  bool gpu_;
};

Status make(const TransportInputs &in, std::unique_ptr<Transport> *out, std::string *unavailable) {
  std::unique_ptr<Messenger> messenger;
  TSHMEM_CHECK(make_mpi_messenger(*in.boot, &messenger, unavailable));  // the same verdict on every PE
  if (!messenger) return TSHMEM_SUCCESS;
  StagedConfig config;
  config.heap = in.heap;
  config.heap_bytes = in.heap_bytes;
  config.chunk_bytes = in.chunk_bytes;
  config.my_pe = in.boot->rank();
  config.n_pes = in.boot->size();
  std::unique_ptr<Transport> staged;
  TSHMEM_CHECK(make_staged_transport(std::move(messenger), *in.memory, config, *in.sink, &staged));
  *out = std::make_unique<MpiTransport>(std::move(staged), in.heap_on_gpu);
  return TSHMEM_SUCCESS;
}

std::string not_built() { return std::string(); }
std::string about() { return "two-sided MPI on a communicator of its own, staged through host memory"; }

}  // namespace

const TransportEntry &transport_entry_mpi() {
  static const TransportEntry entry = {"mpi", not_built, about, make};
  return entry;
}

}  // namespace tshmemi
