#include "worker/agent/reliable_outbox.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tupa::worker {
namespace {

using NodeKey = ReliableOutbox::NodeKey;

const NodeKey kNode{7, 2, 0};

v1::WorkerMessage Exited(const NodeKey& key, int code) {
  v1::WorkerMessage m;
  v1::NodeStatus* s = m.mutable_node_status();
  s->set_job_id(std::get<0>(key));
  s->set_attempt(std::get<1>(key));
  s->set_node_rank(std::get<2>(key));
  s->set_state(v1::NODE_STATE_EXITED);
  s->set_exit_code(code);
  return m;
}

// Writes everything queued to a stream that keeps it, in order.
std::vector<v1::WorkerMessage> WriteAll(ReliableOutbox& outbox) {
  std::vector<v1::WorkerMessage> written;
  while (!outbox.empty()) {
    written.push_back(outbox.front());
    outbox.OnFrontWritten();
  }
  return written;
}

// What a new stream carries first: its hello is made, then written.
std::vector<v1::WorkerMessage> NewStream(ReliableOutbox& outbox) {
  outbox.HelloRunning();
  outbox.OnHelloWritten();
  return WriteAll(outbox);
}

struct Chunk {
  int rank;
  int64_t offset;
  std::string data;
  bool operator==(const Chunk& o) const {
    return rank == o.rank && offset == o.offset && data == o.data;
  }
};

std::vector<Chunk> Logs(const std::vector<v1::WorkerMessage>& messages) {
  std::vector<Chunk> logs;
  for (const v1::WorkerMessage& m : messages)
    if (m.has_log())
      logs.push_back({m.log().rank(), m.log().offset(), m.log().data()});
  return logs;
}

TEST(ReliableOutboxTest, ChunksAreNumberedByByteOffsetPerRank) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  outbox.OnOutput(kNode, 0, "abc");
  outbox.OnOutput(kNode, 1, "xy");
  outbox.OnOutput(kNode, 0, "de");
  EXPECT_EQ(Logs(WriteAll(outbox)),
            (std::vector<Chunk>{{0, 0, "abc"}, {1, 0, "xy"}, {0, 3, "de"}}));
}

TEST(ReliableOutboxTest, NewStreamResendsTailsAheadOfQueuedChunks) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  outbox.OnOutput(kNode, 0, "hello ");
  outbox.OnOutput(kNode, 1, "abc");
  WriteAll(outbox);                    // then the stream breaks
  outbox.OnOutput(kNode, 0, "world");  // queued, never written
  EXPECT_EQ(
      Logs(NewStream(outbox)),
      (std::vector<Chunk>{{0, 0, "hello "}, {1, 0, "abc"}, {0, 6, "world"}}));
}

TEST(ReliableOutboxTest, ResentTailIsCappedAtResendBytes) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  std::string output;
  for (int i = 0; output.size() < 100 * 1024; ++i)
    output += std::to_string(i) + "\n";
  outbox.OnOutput(kNode, 0, output);
  const std::vector<Chunk> first = Logs(WriteAll(outbox));
  ASSERT_EQ(first.size(), (output.size() + ReliableOutbox::kLogChunk - 1) /
                              ReliableOutbox::kLogChunk);

  const std::vector<Chunk> resent = Logs(NewStream(outbox));
  ASSERT_EQ(resent.size(),
            ReliableOutbox::kResendBytes / ReliableOutbox::kLogChunk);
  const int64_t start =
      static_cast<int64_t>(output.size() - ReliableOutbox::kResendBytes);
  EXPECT_EQ(resent.front().offset, start);
  std::string joined;
  for (const Chunk& c : resent) {
    EXPECT_EQ(c.offset, start + static_cast<int64_t>(joined.size()));
    EXPECT_LE(c.data.size(), ReliableOutbox::kLogChunk);
    joined += c.data;
  }
  EXPECT_EQ(joined, output.substr(start));
}

TEST(ReliableOutboxTest, ResentTailIsNotAppendedToItselfWhenWrittenAgain) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  outbox.OnOutput(kNode, 0, "abc");
  WriteAll(outbox);
  NewStream(outbox);  // writes the tail "abc" again
  outbox.OnOutput(kNode, 0, "d");
  WriteAll(outbox);
  EXPECT_EQ(Logs(NewStream(outbox)), (std::vector<Chunk>{{0, 0, "abcd"}}));
}

TEST(ReliableOutboxTest, TailRestartsAfterDroppedChunks) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  v1::WorkerMessage beat;
  beat.mutable_heartbeat()->set_seq(1);
  for (size_t i = 0; i <= ReliableOutbox::kMaxQueuedLogs; ++i)
    outbox.Push(beat);                // never dropped
  outbox.OnOutput(kNode, 0, "lost");  // dropped: the queue is full
  EXPECT_EQ(outbox.size(), ReliableOutbox::kMaxQueuedLogs + 1);
  WriteAll(outbox);
  outbox.OnOutput(kNode, 0, "kept");
  EXPECT_EQ(Logs(WriteAll(outbox)), (std::vector<Chunk>{{0, 4, "kept"}}));
  EXPECT_EQ(Logs(NewStream(outbox)), (std::vector<Chunk>{{0, 4, "kept"}}));
}

TEST(ReliableOutboxTest, ExitedResentOnEveryNewStreamUntilAcked) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  outbox.OnOutput(kNode, 0, "last words");
  outbox.OnExited(kNode, Exited(kNode, 3));
  std::vector<v1::WorkerMessage> written = WriteAll(outbox);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[1].node_status().exit_code(), 3);

  for (int stream = 0; stream < 2; ++stream) {
    written = NewStream(outbox);
    // The tail first: a node's logs must precede its EXITED.
    ASSERT_EQ(written.size(), 2u) << "stream " << stream;
    EXPECT_EQ(written[0].log().data(), "last words");
    EXPECT_EQ(written[1].node_status().state(), v1::NODE_STATE_EXITED);
    EXPECT_EQ(written[1].node_status().exit_code(), 3);
  }

  EXPECT_EQ(outbox.OnExitAck(kNode), kNode);  // forget it
  EXPECT_FALSE(outbox.Tracks(kNode));
  EXPECT_TRUE(NewStream(outbox).empty());
  EXPECT_EQ(outbox.OnExitAck(kNode), std::nullopt);  // a repeated ack
}

TEST(ReliableOutboxTest, AckThatOvertakesTheWriteForgetsTheNodeAtTheWrite) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  outbox.OnExited(kNode, Exited(kNode, 0));
  // The scheduler's ack arrives before the writer noted the write.
  EXPECT_EQ(outbox.OnExitAck(kNode), std::nullopt);
  EXPECT_TRUE(outbox.Tracks(kNode));
  EXPECT_EQ(outbox.OnFrontWritten(), kNode);
  EXPECT_FALSE(outbox.Tracks(kNode));
  EXPECT_TRUE(NewStream(outbox).empty());
}

TEST(ReliableOutboxTest, UnackedNodeIsListedInTheHello) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  outbox.OnExited(kNode, Exited(kNode, 0));
  WriteAll(outbox);
  const std::vector<v1::RunningAttempt> running = outbox.HelloRunning();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].job_id(), 7);
  EXPECT_EQ(running[0].attempt(), 2);
  EXPECT_EQ(running[0].fenced_at_ms(), 0);
}

TEST(ReliableOutboxTest, FencedNodesExitWaitsForAHelloThatReportsItFenced) {
  ReliableOutbox outbox;
  outbox.AddNode(kNode);
  EXPECT_EQ(outbox.HelloRunning()[0].fenced_at_ms(), 0);
  EXPECT_FALSE(outbox.FencedSinceHello());

  const absl::Time fenced_at = absl::FromUnixMillis(1700000000123);
  EXPECT_TRUE(outbox.OnFenced(kNode, fenced_at));
  // This stream's hello did not report it: its EXITED must not go here.
  EXPECT_TRUE(outbox.FencedSinceHello());
  EXPECT_TRUE(outbox.FencedNodesStopping());
  // Nor on a stream opened while its ranks are still stopping.
  EXPECT_EQ(outbox.HelloRunning()[0].fenced_at_ms(), 0);
  EXPECT_TRUE(outbox.FencedSinceHello());

  outbox.OnExited(kNode, Exited(kNode, 143));
  EXPECT_FALSE(outbox.FencedNodesStopping());
  EXPECT_TRUE(outbox.FencedSinceHello());  // the old hello still did not say
  EXPECT_EQ(outbox.HelloRunning()[0].fenced_at_ms(), 1700000000123);
  EXPECT_FALSE(outbox.FencedSinceHello());
}

TEST(ReliableOutboxTest, FencingLeavesUnknownStoppedOrFencedNodesAlone) {
  ReliableOutbox outbox;
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  EXPECT_FALSE(outbox.OnFenced(kNode, t));  // unknown

  outbox.AddNode(kNode);
  EXPECT_TRUE(outbox.OnFenced(kNode, t));
  EXPECT_FALSE(outbox.OnFenced(kNode, t + absl::Seconds(1)));  // already

  const NodeKey done{8, 1, 0};
  outbox.AddNode(done);
  outbox.OnExited(done, Exited(done, 0));
  EXPECT_FALSE(outbox.OnFenced(done, t));  // its ranks are gone
}

TEST(ReliableOutboxTest, OutputOfAnUntrackedNodeIsSentButNotKept) {
  ReliableOutbox outbox;
  outbox.OnOutput(kNode, 0, "abc");
  outbox.OnOutput(kNode, 0, "de");
  EXPECT_EQ(Logs(WriteAll(outbox)),
            (std::vector<Chunk>{{0, 0, "abc"}, {0, 0, "de"}}));
  EXPECT_TRUE(NewStream(outbox).empty());
}

}  // namespace
}  // namespace tupa::worker
