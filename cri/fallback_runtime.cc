#include "cri/fallback_runtime.h"

#include <utility>

#include "absl/base/internal/raw_logging.h"
#include "cri/status_message.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace huygens::cri {
namespace {

const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace

bool ShouldFallBack(const absl::Status& primary_error) {
  switch (primary_error.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

FallbackRuntime::FallbackRuntime(std::unique_ptr<ContainerRuntime> primary,
                                 std::unique_ptr<ContainerRuntime> secondary)
    : primary_(std::move(primary)), secondary_(std::move(secondary)) {
  ABSL_RAW_CHECK(primary_ != nullptr && secondary_ != nullptr,
                 "FallbackRuntime needs two runtimes");
}

std::string FallbackRuntime::Name() const {
  return fmt::format("{}+{}", primary_->Name(), secondary_->Name());
}

absl::StatusOr<std::vector<ContainerInfo>> FallbackRuntime::ListContainers() {
  return primary_->ListContainers();
}

template <typename Call>
auto FallbackRuntime::Run(const ContainerInfo& container, const char* what, Call call)
    -> decltype(call(std::declval<ContainerRuntime&>())) {
  auto first = call(*primary_);
  const absl::Status& first_status = StatusOf(first);
  if (first_status.ok() || !ShouldFallBack(first_status)) {
    last_used_ = primary_->Name();
    last_primary_error_ = absl::OkStatus();
    ++(first_status.ok() ? counters_.primary_ok : counters_.primary_failed);
    return first;
  }
  last_used_ = secondary_->Name();
  last_primary_error_ = first_status;
  const std::string who = fmt::format("pod {}/{} container {}", container.pod_namespace, container.pod_name,
                                      container.container_name);
  spdlog::debug("{}: {} through {} failed ({}); falling back to {}", who, what, primary_->Name(),
                MessageOf(first_status), secondary_->Name());
  auto second = call(*secondary_);
  const absl::Status& second_status = StatusOf(second);
  spdlog::debug("{}: {} through {}: {}", who, what, secondary_->Name(),
                second_status.ok() ? std::string("ok") : MessageOf(second_status));
  if (second_status.ok()) {
    ++counters_.secondary_ok;
    return second;
  }
  ++counters_.both_failed;
  return absl::Status(first_status.code(),
                      fmt::format("{}: {}; fallback {}: {}", primary_->Name(),
                                  MessageOf(first_status), secondary_->Name(),
                                  MessageOf(second_status)));
}

absl::Status FallbackRuntime::UpdateCpuset(const ContainerInfo& container, const CpuSet& cpus,
                                           const CpuSet& mems) {
  return Run(container, "UpdateCpuset", [&](ContainerRuntime& r) { return r.UpdateCpuset(container, cpus, mems); });
}

absl::StatusOr<CpusetResources> FallbackRuntime::ReadCpuset(const ContainerInfo& container) {
  return Run(container, "ReadCpuset", [&](ContainerRuntime& r) { return r.ReadCpuset(container); });
}

std::optional<int64_t> FallbackRuntime::Pid(const ContainerInfo& container) {
  if (std::optional<int64_t> pid = primary_->Pid(container)) return pid;
  return secondary_->Pid(container);
}

}  // namespace huygens::cri
