// CriRuntime without a runtime behind the socket; the real runtime is in containerd_test.cc.
#include "cri/cri_runtime.h"

#include <chrono>

#include "gtest/gtest.h"

namespace huygens::cri {
namespace {

TEST(CriRuntimeTest, AMissingSocketIsUnavailableQuicklyAndNamesTheVerbAndContainer) {
  CriRuntime rt({.socket = "/nonexistent/huygens-test.sock",
                 .timeout = std::chrono::milliseconds(5000)});
  ContainerInfo c;
  c.id = "abc123";
  const auto start = std::chrono::steady_clock::now();
  absl::Status update = rt.UpdateCpuset(c, CpuSet{0}, CpuSet{0});
  EXPECT_EQ(update.code(), absl::StatusCode::kUnavailable) << update;
  EXPECT_NE(update.message().find("abc123"), absl::string_view::npos) << update;
  EXPECT_NE(update.message().find("ContainerStatus"), absl::string_view::npos) << update;
  EXPECT_EQ(rt.ListContainers().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rt.ReadCpuset(c).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rt.Version().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(rt.Pid(c).has_value());
  // gRPC fails fast on a socket nobody listens on; it does not wait for the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(4000));
}

}  // namespace
}  // namespace huygens::cri
