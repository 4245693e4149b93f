// FromGrpcStatus: how a failed CRI call becomes an absl::Status (for the CRI clients in cri/).
//
// The gRPC code maps to the absl code of the same number (both follow google.rpc.Code), with
// one refinement: UNKNOWN whose text shows that the kernel refused a cgroup write (it names a
// cgroup or cpuset file and runc's errno text: "invalid argument", "device or resource busy",
// "permission denied" (cgroup v1's answer to a cpuset not within its parent's), "no space left
// on device", "numerical result out of range") becomes kFailedPrecondition, the code
// ContainerRuntime documents for such refusals. The message is "<verb> <id>: <gRPC message> (gRPC <CODE>)".
//
// Thread-safety: a pure function.
#ifndef HUYGENS_CRI_GRPC_STATUS_H_
#define HUYGENS_CRI_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string_view>

#include "absl/status/status.h"

namespace huygens::cri {

/// REQUIRES: !status.ok().
absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view verb,
                            std::string_view id);

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_GRPC_STATUS_H_
