// PodResourcesReader: the device counts (CountDevices) and the gRPC calls against an in-process
// server that speaks kubelet's pod resources API v1 on a unix socket.
#include "agent/pod_resources.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/testing/fake_pod_resources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGpu[] = "nvidia.com/gpu";

TEST(CountDevices, DevicesCountOnTheirNumaNodeAndThoseInUseAreNotAvailable) {
  const CpuTopology t = huygens::testing::TwoSocketsSmt();
  PodResourcesSnapshot s;
  s.allocatable = {{kGpu, {"g0", "g1"}, {0}}, {kGpu, {"g2"}, {1}}, {"example.com/vf", {"v0"}, {1}}};
  // g0 is listed for an init container and again for the app container that reuses it.
  s.in_use = {{kGpu, {"g0"}, {0}}, {kGpu, {"g0"}, {0}}, {kGpu, {"g2"}, {1}}};
  std::vector<std::string> left_out;
  const NrtDevices d = CountDevices(s, t, left_out);
  EXPECT_TRUE(left_out.empty());
  EXPECT_EQ(d.at(0).at(kGpu), (NrtDeviceFigures{.allocatable = 2, .available = 1}));
  EXPECT_EQ(d.at(1).at(kGpu), (NrtDeviceFigures{.allocatable = 1, .available = 0}));
  EXPECT_EQ(d.at(1).at("example.com/vf"), (NrtDeviceFigures{.allocatable = 1, .available = 1}));
}

TEST(CountDevices, DevicesWithoutTopologyOrOnAnUnknownNumaNodeAreLeftOut) {
  const CpuTopology t = huygens::testing::TwoSocketsSmt();
  PodResourcesSnapshot s;
  s.allocatable = {{kGpu, {"g0"}, {}}, {kGpu, {"g1"}, {7}}, {kGpu, {"g2"}, {1, 0}}};
  s.in_use = {{kGpu, {"g9"}, {1}}};  // held, no longer allocatable (turned unhealthy)
  std::vector<std::string> left_out;
  const NrtDevices d = CountDevices(s, t, left_out);
  EXPECT_THAT(left_out, ElementsAre("nvidia.com/gpu \"g1\": NUMA node 7 does not exist"));
  // g2 spans both NUMA nodes: counted once, on the lowest.
  EXPECT_EQ(d.at(0).at(kGpu), (NrtDeviceFigures{.allocatable = 1, .available = 1}));
  // g9 counts as used on NUMA node 1, where nothing is allocatable: available stays 0.
  EXPECT_EQ(d.at(1).at(kGpu), (NrtDeviceFigures{.allocatable = 0, .available = 0}));
}

class PodResourcesReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("huygens-podresources-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    socket_ = (dir_ / "kubelet.sock").string();
    kubelet_ = std::make_unique<testing::FakePodResources>(socket_);
    ASSERT_NE(kubelet_->server(), nullptr);
    kubelet_->AddAllocatable(kGpu, {"g0", "g1"}, 1);
    kubelet_->AddInUse(kGpu, {"g1"}, 1);
  }
  void TearDown() override {
    kubelet_.reset();
    std::filesystem::remove_all(dir_);
  }
  static std::shared_ptr<const CpuTopology> Machine() {
    return std::make_shared<const CpuTopology>(huygens::testing::TwoSocketsSmt());
  }

  std::filesystem::path dir_;
  std::string socket_;
  std::unique_ptr<testing::FakePodResources> kubelet_;
};

TEST_F(PodResourcesReaderTest, ReadsKubeletsDevicesOverItsSocket) {
  PodResourcesReader reader({.topology = Machine(), .socket = socket_});
  const DeviceUse use = reader.Read();
  EXPECT_EQ(use.reason, "");
  EXPECT_EQ(use.devices.at(1).at(kGpu), (NrtDeviceFigures{.allocatable = 2, .available = 1}));
}

TEST_F(PodResourcesReaderTest, NoKubeletOrNoSocketPublishesNoDevicesAndSaysWhy) {
  PodResourcesReader gone({.topology = Machine(),
                           .socket = (dir_ / "missing.sock").string(),
                           .timeout = std::chrono::milliseconds(300)});
  DeviceUse use = gone.Read();
  EXPECT_TRUE(use.devices.empty());
  EXPECT_THAT(use.reason, HasSubstr("kubelet's pod resources API: "));
  EXPECT_THAT(use.reason, HasSubstr("GetAllocatableResources"));
  PodResourcesReader off({.topology = Machine(), .socket = ""});
  use = off.Read();
  EXPECT_TRUE(use.devices.empty());
  EXPECT_THAT(use.reason, HasSubstr("no podResourcesSocket configured"));
}

}  // namespace
}  // namespace huygens::agent
