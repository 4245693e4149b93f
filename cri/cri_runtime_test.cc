// CriRuntime without a runtime behind the socket, and over a minimal in-process CRI server; the
// real runtime is in containerd_test.cc.
#include "cri/cri_runtime.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "cri/api/cri.grpc.pb.h"
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

// A runtime that lists `containers` containers whose labels make each about 1 KiB.
class DenseRuntime final : public runtime::v1::RuntimeService::Service {
 public:
  explicit DenseRuntime(int containers) : containers_(containers) {}
  grpc::Status ListContainers(grpc::ServerContext*, const runtime::v1::ListContainersRequest*,
                              runtime::v1::ListContainersResponse* reply) override {
    for (int i = 0; i < containers_; ++i) {
      runtime::v1::Container* c = reply->add_containers();
      c->set_id(std::string(64, 'a') + std::to_string(i));
      (*c->mutable_labels())["io.kubernetes.pod.uid"] = "uid-" + std::to_string(i);
      (*c->mutable_labels())["io.kubernetes.container.name"] = "app";
      (*c->mutable_annotations())["padding"] = std::string(900, 'x');
      c->set_state(runtime::v1::CONTAINER_RUNNING);
    }
    return grpc::Status::OK;
  }

 private:
  int containers_;
};

// A dense node's container list is more than gRPC's default 4 MiB reply: read up to kubelet's
// 16 MiB, it is a list, not "runtime down".
TEST(CriRuntimeTest, AListOfManyContainersOverFourMebibytesIsRead) {
  const std::string socket =
      (std::filesystem::path(::testing::TempDir()) / "huygens-dense-cri.sock").string();
  std::filesystem::remove(socket);
  DenseRuntime service(8000);  // about 8 MiB
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  CriRuntime rt({.socket = socket, .timeout = std::chrono::milliseconds(20000)});
  auto listed = rt.ListContainers();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 8000u);
  EXPECT_EQ(listed->back().pod_uid, "uid-7999");
  server->Shutdown();
}

}  // namespace
}  // namespace huygens::cri
