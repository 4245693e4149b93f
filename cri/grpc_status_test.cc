#include "cri/grpc_status.h"

#include "gtest/gtest.h"

namespace huygens::cri {
namespace {

TEST(FromGrpcStatusTest, CodesMapToTheSameAbslCodeWithVerbAndId) {
  absl::Status s = FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "no such container"),
                                  "UpdateContainerResources", "abc");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "UpdateContainerResources abc: no such container (gRPC NOT_FOUND)");
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x"), "V", "").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      FromGrpcStatus(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "x"), "V", "").code(),
      absl::StatusCode::kDeadlineExceeded);
}

TEST(FromGrpcStatusTest, UnknownWithAKernelRefusalIsFailedPrecondition) {
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNKNOWN,
                                        "failed to update resources: runc: write "
                                        "/sys/fs/cgroup/cpuset/x/cpuset.cpus: Invalid argument"),
                           "UpdateContainerResources", "abc")
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNKNOWN,
                                        "failed to write \"1\": write /sys/fs/cgroup/cpuset/p/c/"
                                        "cpuset.cpus: permission denied"),
                           "U", "a")
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNKNOWN, "open x: permission denied"),
                           "U", "a")
                .code(),
            absl::StatusCode::kUnknown)
      << "a refusal that names no cgroup file is not the kernel's cpuset rule";
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNKNOWN, "something else"), "U", "a")
                .code(),
            absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace huygens::cri
