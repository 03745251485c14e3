#include "worker/devices/devices.h"

#include <gtest/gtest.h>

namespace tupa::worker {
namespace {

TEST(GpuTypeFromName, StripsVendorAndFormFactor) {
  EXPECT_EQ(GpuTypeFromName("NVIDIA H200", 141LL << 30), "H200");
  EXPECT_EQ(GpuTypeFromName("NVIDIA A100-SXM4-80GB", 80LL << 30), "A100-80GB");
  EXPECT_EQ(GpuTypeFromName("NVIDIA A100-PCIE-40GB", 40LL << 30), "A100-40GB");
  EXPECT_EQ(GpuTypeFromName("Tesla T4", 15LL << 30), "T4");
  EXPECT_EQ(GpuTypeFromName("NVIDIA H100 80GB HBM3", 80LL << 30),
            "H100-80GB-HBM3");
}

TEST(DiscoverDevices, EmulatedOnlyWhenAsked) {
  DeviceOptions options;
  options.emulated_gpus = 3;
  options.emulated_gpu_type = "T4";
  auto devices = DiscoverDevices(options);
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_TRUE((*devices)[2].emulated());
  EXPECT_EQ((*devices)[2].index(), 2);
  EXPECT_EQ((*devices)[0].gpu_type(), "T4");
  // Without the flag, this machine (no driver in CI) reports real devices
  // only: none of them emulated.
  auto real = DiscoverDevices(DeviceOptions{});
  ASSERT_TRUE(real.ok());
  for (const auto& d : *real) EXPECT_FALSE(d.emulated());
}

}  // namespace
}  // namespace tupa::worker
