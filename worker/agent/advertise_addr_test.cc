#include "worker/agent/advertise_addr.h"

#include "gtest/gtest.h"

namespace tupa::worker {
namespace {

TEST(ParseTargetTest, ReadsEveryTargetForm) {
  struct Case {
    std::string target, host, port;
  } cases[] = {
      {"10.0.0.1:50051", "10.0.0.1", "50051"},
      {"sched.example.com:443", "sched.example.com", "443"},
      {"dns:///sched:50051", "sched", "50051"},
      {"ipv4:127.0.0.1:1", "127.0.0.1", "1"},
      {"[::1]:50051", "::1", "50051"},
      {"ipv6:[fd00::2]:7", "fd00::2", "7"},
      {"fd00::2", "fd00::2", ""},
      {"sched", "sched", ""},
      {"unix:/run/tupa.sock", "", ""},
  };
  for (const Case& c : cases) {
    auto hp = ParseTarget(c.target);
    ASSERT_TRUE(hp.ok()) << c.target << ": " << hp.status();
    EXPECT_EQ(hp->host, c.host) << c.target;
    EXPECT_EQ(hp->port, c.port) << c.target;
  }
  EXPECT_FALSE(ParseTarget("").ok());
  EXPECT_FALSE(ParseTarget("[::1:50051").ok());
}

TEST(IsLoopbackHostTest, KnowsLoopbackFromOtherAddresses) {
  for (const char* h : {"localhost", "LOCALHOST", "127.0.0.1", "127.3.4.5",
                        "::1", "::ffff:127.0.0.1", ""})
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  for (const char* h : {"10.0.0.1", "192.168.1.2", "fd00::1", "sched",
                        "128.0.0.1", "::ffff:10.0.0.1"})
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
}

TEST(CheckAdvertiseAddrTest, DefaultIsFoundPerConnection) {
  auto a = CheckAdvertiseAddr("", "10.9.9.9:50051");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, "");
}

TEST(CheckAdvertiseAddrTest,
     LoopbackWithARemoteSchedulerIsRefusedNamingTheFlag) {
  auto a = CheckAdvertiseAddr("127.0.0.1", "10.9.9.9:50051");
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(a.status()));
  EXPECT_NE(a.status().message().find("--advertise-addr 127.0.0.1 is a "
                                      "loopback address"),
            std::string::npos)
      << a.status();
  EXPECT_FALSE(CheckAdvertiseAddr("localhost", "10.9.9.9:50051").ok());
}

TEST(CheckAdvertiseAddrTest, LoopbackWithALoopbackSchedulerIsFine) {
  for (const char* s :
       {"127.0.0.1:50051", "localhost:50051", "[::1]:1", "unix:/tmp/s"}) {
    auto a = CheckAdvertiseAddr("127.0.0.1", s);
    ASSERT_TRUE(a.ok()) << s << ": " << a.status();
    EXPECT_EQ(*a, "127.0.0.1");
  }
}

TEST(CheckAdvertiseAddrTest, ANameBecomesItsIp) {
  auto a = CheckAdvertiseAddr("localhost", "127.0.0.1:50051");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(*a == "127.0.0.1" || *a == "::1") << *a;
  EXPECT_EQ(*CheckAdvertiseAddr("10.1.2.3", "10.9.9.9:1"), "10.1.2.3");
  EXPECT_FALSE(CheckAdvertiseAddr("no-such-host.invalid", "10.9.9.9:1").ok());
}

TEST(LocalAddressTowardsTest, LoopbackSchedulerGivesLoopback) {
  auto a = LocalAddressTowards("127.0.0.1:50051");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, "127.0.0.1");
  EXPECT_EQ(*LocalAddressTowards("unix:/tmp/x"), "127.0.0.1");
  EXPECT_FALSE(LocalAddressTowards("no-such-host.invalid:1").ok());
}

}  // namespace
}  // namespace tupa::worker
