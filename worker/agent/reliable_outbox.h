// ReliableOutbox: what the worker owes the scheduler, kept across streams.
//
// Holds the queue of WorkerMessages waiting for a stream and the
// bookkeeping that makes a broken stream lose nothing:
//  - Logs: each rank's output is queued as LogData chunks numbered by byte
//    offset. The last kResendBytes written to a stream are kept per rank
//    and resent first on the next stream (its last writes may never have
//    arrived); the scheduler drops what it already has by offset.
//  - Exits: a node's EXITED status, once written, is kept and resent on
//    every new stream until the scheduler acks it (NodeExitAck); then the
//    node is forgotten. The ack may overtake the bookkeeping of the write.
//  - Fencing: a node fenced (lease ran out) after a stream's hello was made
//    must not have its EXITED on that stream (the scheduler would take it
//    for a failure); only a stream whose hello reported it fenced, once its
//    ranks were gone, may carry it.
//
// Pure bookkeeping: no threads, no I/O, no clock (times are passed in).
// Not thread-safe: the Agent calls it under its mutex. A node is tracked
// from AddNode() until a call returns it to be forgotten.
#ifndef TUPA_WORKER_AGENT_RELIABLE_OUTBOX_H_
#define TUPA_WORKER_AGENT_RELIABLE_OUTBOX_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "tupa/v1/worker_protocol.pb.h"

namespace tupa::worker {

class ReliableOutbox {
 public:
  using NodeKey = std::tuple<int64_t, int32_t, int32_t>;  // job, attempt, node

  // Logs beyond this many queued messages are dropped (other messages never
  // are); the rank's next chunk then starts after a gap.
  static constexpr size_t kMaxQueuedLogs = 20000;
  static constexpr size_t kLogChunk = 16 << 10;
  // Output per rank resent on a new stream: what the old one may have lost.
  static constexpr size_t kResendBytes = 64 << 10;

  // Starts tracking a node (its Assign was accepted); no-op if tracked.
  void AddNode(const NodeKey& key);
  bool Tracks(const NodeKey& key) const { return nodes_.count(key) > 0; }

  // Queues `message` at the back (a log is dropped when kMaxQueuedLogs
  // messages are queued already).
  void Push(v1::WorkerMessage message);
  // Queues `data`, the next output of `rank` of node `key`, as LogData
  // chunks of at most kLogChunk bytes numbered from the rank's byte count
  // so far (from 0 for a node not tracked).
  void OnOutput(const NodeKey& key, int rank, const std::string& data);
  // Every rank of a tracked node is gone; queues its EXITED status.
  void OnExited(const NodeKey& key, v1::WorkerMessage exited);
  // The lease ran out: marks a tracked node that still runs fenced at `at`.
  // False (nothing to stop) when it is unknown, already fenced or exited.
  bool OnFenced(const NodeKey& key, absl::Time at);

  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }
  // The next message to write; requires !empty().
  const v1::WorkerMessage& front() const { return queue_.front(); }
  // front() was written to the current stream: it leaves the queue (a log
  // joins its rank's tail; an EXITED is kept until acked). Returns the node
  // to forget when its EXITED was acked already.
  std::optional<NodeKey> OnFrontWritten();
  // The scheduler acked the EXITED of `key`. Returns the node to forget
  // when that EXITED was written already (else the write will return it).
  std::optional<NodeKey> OnExitAck(const NodeKey& key);

  // For the hello of a new stream: every tracked node, those fenced whose
  // ranks are gone with fenced_at_ms. Only their EXITED may go on the
  // stream this hello opens (see FencedSinceHello()).
  std::vector<v1::RunningAttempt> HelloRunning();
  // The hello was written: queues ahead of everything else each rank's
  // tail (from its offset), then every EXITED written but not acked.
  void OnHelloWritten();
  // A node was fenced that this stream's hello did not report fenced: the
  // stream must not carry its EXITED; the Agent reconnects to report it.
  bool FencedSinceHello() const;
  // A fenced node's ranks are still stopping (its hello must wait).
  bool FencedNodesStopping() const;

 private:
  // Per rank: bytes of output so far, and the last kResendBytes of it
  // written to a stream (ending at byte `sent`).
  struct OutputTail {
    int64_t produced = 0;
    int64_t sent = 0;
    std::string tail;
  };
  struct Node {
    bool exited = false;  // every rank is gone
    // When the lease ran out; InfinitePast while not fenced.
    absl::Time fenced_at = absl::InfinitePast();
    bool fenced() const { return fenced_at != absl::InfinitePast(); }
    // Its EXITED status once written, until acked.
    std::optional<v1::WorkerMessage> exit_unacked;
    bool exit_acked = false;  // the ack overtook the bookkeeping of the write
    std::map<int, OutputTail> output;
  };

  void NoteLogSent(const v1::LogData& log);

  std::map<NodeKey, Node> nodes_;
  std::deque<v1::WorkerMessage> queue_;
  std::set<NodeKey> hello_fenced_;  // reported fenced by the latest hello
};

}  // namespace tupa::worker

#endif  // TUPA_WORKER_AGENT_RELIABLE_OUTBOX_H_
