// The direct mode's large host puts on a host-memory heap: an active message whose data UCX moves by rendezvous
// straight into the target's heap, instead of a one-sided put. Over transports without RDMA into memory UCX did not
// allocate (tcp), UCX emulates a one-sided put with active messages of UCX_TCP_TX_SEG_SIZE that it copies into its
// send buffers and the target copies out of its receive buffers; its rendezvous moves the data with tcp's zero-copy
// put, which the target's socket reads straight into the destination (and over several interfaces where UCX has
// them). Measured on 2 cores over tcp: 1 MiB puts 2-3x the emulated put's bandwidth (docs/results.md).
//
// The target's handler checks the range as a batch's record is checked (wire::check_access, check_reserved) and
// starts the receive into its heap; it runs in whichever thread progresses the worker there (its proxy thread, or
// an application thread waiting in tshmem), as the emulated put's handler does. A refused put completes at its
// origin with kRefused. The origin's send completes once the data is handed to the network (its source may be
// reused), which says nothing of its arrival: with error handling on the endpoints UCX may move a rendezvous's data
// in messages the target copies in its own progress, after a flush has returned at the origin. So the target says
// when the data is in its heap: an acknowledgement (a second message id, carrying the put's ticket) sent once the
// receive has completed. The put returns when its source may be reused (OpenSHMEM's put); a quiet waits for every
// acknowledgement, a put with signal for its data's before it issues the word.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace tshmemi {
namespace ucx {

class BulkPuts {
 public:
  /// Host puts of at least this many bytes go as rendezvous messages: below it, the rendezvous handshake (a round
  /// trip through the target's progress before any data moves) costs more than the copies it saves.
  static constexpr size_t kMinBytes = 256 << 10;
  /// The status a refused put completes with at its origin.
  static constexpr ucs_status_t kRefused = UCS_ERR_INVALID_PARAM;

  /// What travels ahead of the data: where it goes, from whom (for a refusal's message and the acknowledgement),
  /// and the ticket the acknowledgement carries back.
  struct Header {
    uint64_t offset = 0;
    int32_t origin = -1;
    uint32_t pad = 0;
    uint64_t ticket = 0;
  };

  /// `heap`, `heap_bytes`: this PE's heap, where the puts of other PEs land. `worker` and `sink` outlive it.
  BulkPuts(Worker &worker, char *heap, uint64_t heap_bytes, TransportSink &sink);
  /// Removes the handler: nothing arrives for it after.
  ~BulkPuts();
  BulkPuts(const BulkPuts &) = delete;
  BulkPuts &operator=(const BulkPuts &) = delete;

  /// Registers the handler on the worker (before any PE may send: init's collectives follow).
  Status create();

  /// Issues the put of `bytes` from `src` to `pe`'s heap offset `offset`: the request to wait for (ucp_am_send_nbx's
  /// status pointer). `header` is written here and read by UCX until the request completes.
  /// `header->ticket` is the put's: pending until the target acknowledges it or forget() drops it.
  ucs_status_ptr_t issue(int pe, uint64_t offset, const void *src, size_t bytes, Header *header);
  /// Whether the target has acknowledged the put of `ticket` (its data is in the target's heap).
  bool arrived(uint64_t ticket);
  /// Whether every put issued here has been acknowledged (or forgotten).
  bool all_arrived();
  /// The PEs of the puts not yet acknowledged (ascending, each once); empty when every put has arrived.
  std::vector<int> pending();
  /// Drops `ticket` (refused, or given up on): an acknowledgement that comes later finds nothing.
  void forget(uint64_t ticket);
  /// Drops every pending put to `pe` (given up on).
  void forget_pe(int pe);

 private:
  static ucs_status_t on_put(void *arg, const void *header, size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param);
  static ucs_status_t on_ack(void *arg, const void *header, size_t header_length, void *data, size_t length,
                             const ucp_am_recv_param_t *param);
  static void on_received(void *request, ucs_status_t status, size_t length, void *user_data);
  ucs_status_t receive(const Header &header, size_t header_length, void *data, size_t length, bool rendezvous);
  /// Tells `origin` that the put of `ticket` is in this PE's heap (on the thread that progresses the worker).
  void acknowledge(int origin, uint64_t ticket);
  Status set_handler(unsigned id, ucp_am_recv_callback_t cb);

  Worker &worker_;
  char *heap_;
  uint64_t heap_bytes_;
  TransportSink &sink_;
  bool registered_ = false;
  std::mutex tickets_mutex_;
  uint64_t last_ticket_ = 0;
  std::unordered_map<uint64_t, int> pending_;  ///< ticket -> target PE of each put not yet acknowledged
};

}  // namespace ucx
}  // namespace tshmemi
