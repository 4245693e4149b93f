#include "cri/cri_runtime.h"

#include <grpcpp/grpcpp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "cri/api/cri.grpc.pb.h"
#include "cri/cgroup_path.h"
#include "cri/grpc_status.h"
#include "cri/verbose_info.h"
#include "cri/status_message.h"
#include "fmt/format.h"

namespace huygens::cri {
namespace {

using Clock = std::chrono::system_clock;

ContainerState FromProto(runtime::v1::ContainerState state) {
  switch (state) {
    case runtime::v1::CONTAINER_CREATED:
      return ContainerState::kCreated;
    case runtime::v1::CONTAINER_RUNNING:
      return ContainerState::kRunning;
    case runtime::v1::CONTAINER_EXITED:
      return ContainerState::kExited;
    default:
      return ContainerState::kUnknown;
  }
}

std::string Label(const google::protobuf::Map<std::string, std::string>& labels,
                  const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    return absl::NotFoundError(fmt::format("read {}: {}", path, std::strerror(errno)));
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace

struct CriRuntime::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<runtime::v1::RuntimeService::Stub> runtime;
};

CriRuntime::CriRuntime(CriRuntimeOptions options)
    : options_(std::move(options)), cgroupfs_(options_.cgroupfs), rpc_(std::make_unique<Rpc>()) {
  // Reconnect soon after the runtime comes back (gRPC's default backoff grows to 120 s).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Replies up to kubelet's limit (maxMsgSize, 16 MiB, pkg/kubelet/cri/remote): gRPC's default
  // of 4 MiB made a dense node's ListContainers fail, which read as "runtime down".
  args.SetMaxReceiveMessageSize(kMaxReplyBytes);
  rpc_->channel = grpc::CreateCustomChannel("unix://" + options_.socket,
                                            grpc::InsecureChannelCredentials(), args);
  rpc_->runtime = runtime::v1::RuntimeService::NewStub(rpc_->channel);
}

CriRuntime::~CriRuntime() = default;

absl::StatusOr<std::vector<ContainerInfo>> CriRuntime::ListContainers() {
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + options_.timeout);
  runtime::v1::ListContainersRequest req;
  runtime::v1::ListContainersResponse resp;
  grpc::Status s = rpc_->runtime->ListContainers(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s, "ListContainers", "");
  std::vector<ContainerInfo> out;
  out.reserve(static_cast<size_t>(resp.containers_size()));
  for (const runtime::v1::Container& c : resp.containers()) {
    ContainerInfo info;
    info.id = c.id();
    info.sandbox_id = c.pod_sandbox_id();
    info.pod_uid = Label(c.labels(), "io.kubernetes.pod.uid");
    info.pod_namespace = Label(c.labels(), "io.kubernetes.pod.namespace");
    info.pod_name = Label(c.labels(), "io.kubernetes.pod.name");
    info.container_name = Label(c.labels(), "io.kubernetes.container.name");
    info.attempt = c.metadata().attempt();
    info.state = FromProto(c.state());
    info.created_at_ns = c.created_at();
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::string> CriRuntime::Version() {
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + options_.timeout);
  runtime::v1::VersionRequest req;
  req.set_version("v1");
  runtime::v1::VersionResponse resp;
  grpc::Status s = rpc_->runtime->Version(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s, "Version", "");
  return fmt::format("{} {} (CRI {})", resp.runtime_name(), resp.runtime_version(),
                     resp.runtime_api_version());
}

namespace {

// ContainerStatus(verbose) and its parsed info, within `deadline`.
struct StatusAndInfo {
  runtime::v1::ContainerStatusResponse response;
  VerboseInfo info;
};

absl::StatusOr<StatusAndInfo> VerboseStatus(runtime::v1::RuntimeService::Stub& stub,
                                            Clock::time_point deadline, const std::string& id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  runtime::v1::ContainerStatusRequest req;
  req.set_container_id(id);
  req.set_verbose(true);
  StatusAndInfo out;
  grpc::Status s = stub.ContainerStatus(&ctx, req, &out.response);
  if (!s.ok()) return FromGrpcStatus(s, "ContainerStatus", id);
  auto it = out.response.info().find("info");
  if (it != out.response.info().end()) {
    absl::StatusOr<VerboseInfo> info = ParseVerboseInfo(it->second);
    if (!info.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("ContainerStatus {}: {}", id, MessageOf(info.status())));
    }
    out.info = *std::move(info);
  }
  return out;
}

}  // namespace

absl::StatusOr<CriContainerDetails> CriRuntime::Details(const ContainerInfo& container) {
  absl::StatusOr<StatusAndInfo> st =
      VerboseStatus(*rpc_->runtime, Clock::now() + options_.timeout, container.id);
  if (!st.ok()) return st.status();
  CriContainerDetails details;
  details.state = FromProto(st->response.status().state());
  details.pid = st->info.pid;
  if (!st->info.cgroups_path.empty()) {
    absl::StatusOr<std::string> cgroup = CgroupsPathToCgroup(st->info.cgroups_path);
    if (!cgroup.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("ContainerStatus {}: {}", container.id, MessageOf(cgroup.status())));
    }
    details.cgroup = *std::move(cgroup);
  } else if (details.pid) {
    const std::string file = fmt::format("{}/{}/cgroup", options_.proc_root, *details.pid);
    absl::StatusOr<std::string> text = ReadSmallFile(file);
    if (!text.ok()) return text.status();
    absl::StatusOr<std::string> cgroup = CpusetPathFromProcCgroup(*text, cgroupfs_.version());
    if (!cgroup.ok()) {
      return absl::Status(cgroup.status().code(),
                          fmt::format("{}: {}", file, MessageOf(cgroup.status())));
    }
    details.cgroup = *std::move(cgroup);
  }
  return details;
}

absl::Status CriRuntime::UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                                      const CpuSet& mems) {
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  absl::StatusOr<StatusAndInfo> st = VerboseStatus(*rpc_->runtime, deadline, container.id);
  if (!st.ok()) return st.status();

  runtime::v1::UpdateContainerResourcesRequest req;
  req.set_container_id(container.id);
  runtime::v1::LinuxContainerResources* res = req.mutable_linux();
  if (st->response.status().has_resources() && st->response.status().resources().has_linux()) {
    *res = st->response.status().resources().linux();
  } else {
    const SpecResources& spec = st->info.resources;
    res->set_cpu_shares(spec.cpu_shares.value_or(0));
    res->set_cpu_quota(spec.cpu_quota.value_or(0));
    res->set_cpu_period(spec.cpu_period.value_or(0));
    res->set_memory_limit_in_bytes(spec.memory_limit.value_or(0));
    res->set_memory_swap_limit_in_bytes(spec.memory_swap.value_or(0));
  }
  res->set_cpuset_cpus(cpus.ToString());
  res->set_cpuset_mems(mems.ToString());

  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  runtime::v1::UpdateContainerResourcesResponse resp;
  grpc::Status s = rpc_->runtime->UpdateContainerResources(&ctx, req, &resp);
  if (!s.ok()) return FromGrpcStatus(s, "UpdateContainerResources", container.id);
  return absl::OkStatus();
}

absl::StatusOr<CpusetResources> CriRuntime::ReadCpuset(const ContainerInfo& container) {
  absl::StatusOr<CriContainerDetails> details = Details(container);
  if (!details.ok()) return details.status();
  if (details->cgroup.empty()) {
    return absl::NotFoundError(fmt::format(
        "ReadCpuset {}: the runtime reports neither a cgroupsPath nor a pid (state {})",
        container.id, static_cast<int>(details->state)));
  }
  absl::StatusOr<CpusetResources> read = cgroupfs_.ReadCpuset(details->cgroup);
  if (!read.ok()) {
    return absl::Status(read.status().code(), fmt::format("ReadCpuset {}: {}", container.id,
                                                          MessageOf(read.status())));
  }
  return read;
}

std::optional<int64_t> CriRuntime::Pid(const ContainerInfo& container) {
  absl::StatusOr<StatusAndInfo> st =
      VerboseStatus(*rpc_->runtime, Clock::now() + options_.timeout, container.id);
  if (!st.ok()) return std::nullopt;
  return st->info.pid;
}

}  // namespace huygens::cri
