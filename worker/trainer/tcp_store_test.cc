#include "worker/trainer/tcp_store.h"

#include <thread>

#include "gtest/gtest.h"

namespace tupa::trainer {
namespace {

TEST(TcpStoreTest, SetGetAddAcrossClients) {
  auto server = TcpStoreServer::Start(0);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  auto a = TcpStoreClient::Connect("127.0.0.1", port, absl::Seconds(5));
  auto b = TcpStoreClient::Connect("localhost", port, absl::Seconds(5));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Set("k", std::string("v\0w", 3)).ok());
  auto v = (*b)->Get("k", absl::Seconds(1));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::string("v\0w", 3));
  EXPECT_EQ(*(*a)->Add("n", 2), 2);
  EXPECT_EQ(*(*b)->Add("n", 5), 7);
}

TEST(TcpStoreTest, GetWaitsForALaterSet) {
  auto server = TcpStoreServer::Start(0);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  auto a = TcpStoreClient::Connect("127.0.0.1", port, absl::Seconds(5));
  std::thread setter([port] {
    auto c = TcpStoreClient::Connect("127.0.0.1", port, absl::Seconds(5));
    absl::SleepFor(absl::Milliseconds(100));
    ASSERT_TRUE((*c)->Set("late", "yes").ok());
  });
  auto v = (*a)->Get("late", absl::Seconds(10));
  setter.join();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "yes");
  EXPECT_TRUE((*a)->Wait({"late"}, absl::Seconds(1)).ok());
}

TEST(TcpStoreTest, MissingKeyTimesOut) {
  auto server = TcpStoreServer::Start(0);
  ASSERT_TRUE(server.ok());
  auto a =
      TcpStoreClient::Connect("127.0.0.1", (*server)->port(), absl::Seconds(5));
  EXPECT_EQ((*a)->Get("never", absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*a)->Wait({"never"}, absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(TcpStoreTest, ConnectGivesUpWhenNobodyListens) {
  auto server = TcpStoreServer::Start(0);
  const int port = (*server)->port();
  server->reset();  // free the port
  EXPECT_EQ(TcpStoreClient::Connect("127.0.0.1", port, absl::Milliseconds(200))
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(TcpStoreTest, ClientSeesServerShutdownAsUnavailable) {
  auto server = TcpStoreServer::Start(0);
  auto a =
      TcpStoreClient::Connect("127.0.0.1", (*server)->port(), absl::Seconds(5));
  server->reset();
  EXPECT_FALSE((*a)->Set("k", "v").ok());
}

}  // namespace
}  // namespace tupa::trainer
