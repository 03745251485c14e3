#include "common/thread_name.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace tupa {
namespace {

TEST(ThreadName, NamesOnlyTheCallingThreadAndCutsAt15Bytes) {
  const std::string before = ThisThreadName();
  std::string inside;
  std::thread t([&] {
    NameThisThread("tupa-a-very-long-thread-name");
    inside = ThisThreadName();
  });
  t.join();
  EXPECT_EQ(inside, "tupa-a-very-lon");
  EXPECT_EQ(ThisThreadName(), before);
}

}  // namespace
}  // namespace tupa
