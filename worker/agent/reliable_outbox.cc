#include "worker/agent/reliable_outbox.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace tupa::worker {
namespace {

// `data` as LogData messages of at most kLogChunk bytes, starting at byte
// `offset` of the rank's output.
void AppendLogChunks(const ReliableOutbox::NodeKey& key, int rank,
                     const std::string& data, int64_t offset,
                     std::vector<v1::WorkerMessage>& out) {
  for (size_t off = 0; off < data.size(); off += ReliableOutbox::kLogChunk) {
    v1::WorkerMessage m;
    v1::LogData* log = m.mutable_log();
    log->set_job_id(std::get<0>(key));
    log->set_attempt(std::get<1>(key));
    log->set_rank(rank);
    log->set_data(data.substr(off, ReliableOutbox::kLogChunk));
    log->set_offset(offset + static_cast<int64_t>(off));
    out.push_back(std::move(m));
  }
}

bool IsExited(const v1::WorkerMessage& m) {
  return m.has_node_status() &&
         m.node_status().state() == v1::NODE_STATE_EXITED;
}

}  // namespace

void ReliableOutbox::AddNode(const NodeKey& key) { nodes_.try_emplace(key); }

void ReliableOutbox::Push(v1::WorkerMessage message) {
  if (message.has_log() && queue_.size() > kMaxQueuedLogs) return;
  queue_.push_back(std::move(message));
}

void ReliableOutbox::OnOutput(const NodeKey& key, int rank,
                              const std::string& data) {
  int64_t offset = 0;
  if (auto it = nodes_.find(key); it != nodes_.end()) {
    OutputTail& t = it->second.output[rank];
    offset = t.produced;
    t.produced += static_cast<int64_t>(data.size());
  }
  std::vector<v1::WorkerMessage> chunks;
  AppendLogChunks(key, rank, data, offset, chunks);
  for (v1::WorkerMessage& m : chunks) Push(std::move(m));
}

void ReliableOutbox::OnExited(const NodeKey& key, v1::WorkerMessage exited) {
  if (auto it = nodes_.find(key); it != nodes_.end()) it->second.exited = true;
  Push(std::move(exited));
}

bool ReliableOutbox::OnFenced(const NodeKey& key, absl::Time at) {
  auto it = nodes_.find(key);
  if (it == nodes_.end() || it->second.fenced() || it->second.exited)
    return false;
  it->second.fenced_at = at;
  return true;
}

std::optional<ReliableOutbox::NodeKey> ReliableOutbox::OnFrontWritten() {
  if (queue_.empty()) return std::nullopt;
  v1::WorkerMessage out = std::move(queue_.front());
  queue_.pop_front();
  if (out.has_log()) NoteLogSent(out.log());
  if (!IsExited(out)) return std::nullopt;
  const v1::NodeStatus& s = out.node_status();
  const NodeKey key{s.job_id(), s.attempt(), s.node_rank()};
  auto it = nodes_.find(key);
  if (it == nodes_.end()) return std::nullopt;
  if (it->second.exit_acked) {
    nodes_.erase(it);
    return key;
  }
  it->second.exit_unacked = std::move(out);  // forgotten once acked
  return std::nullopt;
}

std::optional<ReliableOutbox::NodeKey> ReliableOutbox::OnExitAck(
    const NodeKey& key) {
  auto it = nodes_.find(key);
  if (it == nodes_.end()) return std::nullopt;
  if (it->second.exit_unacked) {
    nodes_.erase(it);
    return key;
  }
  it->second.exit_acked = true;  // OnFrontWritten() forgets it
  return std::nullopt;
}

void ReliableOutbox::NoteLogSent(const v1::LogData& log) {
  // Logs name (job, attempt, rank), not the node: the rank is in one of
  // the attempt's nodes here.
  for (auto n = nodes_.lower_bound({log.job_id(), log.attempt(), INT32_MIN});
       n != nodes_.end() && std::get<0>(n->first) == log.job_id() &&
       std::get<1>(n->first) == log.attempt();
       ++n) {
    auto found = n->second.output.find(log.rank());
    if (found == n->second.output.end()) continue;
    OutputTail& t = found->second;
    const int64_t end = log.offset() + static_cast<int64_t>(log.data().size());
    if (end <= t.sent) return;  // a resent chunk: already in the tail
    if (log.offset() > t.sent) t.tail.clear();  // after a dropped chunk
    const int64_t skip = std::max<int64_t>(0, t.sent - log.offset());
    t.tail.append(log.data(), static_cast<size_t>(skip), std::string::npos);
    t.sent = end;
    if (t.tail.size() > kResendBytes)
      t.tail.erase(0, t.tail.size() - kResendBytes);
    return;
  }
}

std::vector<v1::RunningAttempt> ReliableOutbox::HelloRunning() {
  hello_fenced_.clear();
  std::vector<v1::RunningAttempt> running;
  for (const auto& [key, node] : nodes_) {
    v1::RunningAttempt& r = running.emplace_back();
    r.set_job_id(std::get<0>(key));
    r.set_attempt(std::get<1>(key));
    r.set_node_rank(std::get<2>(key));
    // Reported fenced only once its ranks are gone: the scheduler may
    // start the next attempt at once.
    if (node.fenced() && node.exited) {
      r.set_fenced_at_ms(absl::ToUnixMillis(node.fenced_at));
      hello_fenced_.insert(key);
    }
  }
  return running;
}

void ReliableOutbox::OnHelloWritten() {
  // EXITED statuses written to an earlier stream but never acked: that
  // scheduler may have died before reading them. The hello listed their
  // nodes; send them again.
  for (const auto& [key, node] : nodes_)
    if (node.exit_unacked) queue_.push_front(*node.exit_unacked);
  // Before them, what each rank's output last wrote to the old stream:
  // those writes may have died with it. The chunks still queued continue
  // from there, in order (a node's logs must precede its EXITED status,
  // after which the scheduler takes none).
  std::vector<v1::WorkerMessage> tails;
  for (const auto& [key, node] : nodes_)
    for (const auto& [rank, t] : node.output)
      AppendLogChunks(key, rank, t.tail,
                      t.sent - static_cast<int64_t>(t.tail.size()), tails);
  queue_.insert(queue_.begin(), tails.begin(), tails.end());
}

bool ReliableOutbox::FencedSinceHello() const {
  for (const auto& [key, node] : nodes_)
    if (node.fenced() && !hello_fenced_.count(key)) return true;
  return false;
}

bool ReliableOutbox::FencedNodesStopping() const {
  for (const auto& [key, node] : nodes_)
    if (node.fenced() && !node.exited) return true;
  return false;
}

}  // namespace tupa::worker
