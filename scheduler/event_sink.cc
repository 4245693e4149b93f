#include "scheduler/event_sink.h"

#include <chrono>

#include "kube/api_error.h"
#include "kube/meta_time.h"
#include "kube/resource.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

void EventSink::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void EventSink::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (!thread_.joinable()) return;
    stop_ = true;
    drain_until_ = clock_->Now() + kDrainOnStop;
  }
  cv_.SignalAll();
  thread_.join();
}

void EventSink::Post(const nlohmann::json& pod, const char* type, const char* reason, const char* action,
                     std::string note) {
  kube::EventRecord e;
  e.ns = pod["metadata"].value("namespace", "");
  e.name = pod["metadata"].value("name", "");
  e.uid = pod["metadata"].value("uid", "");
  e.type = type;
  e.reason = reason;
  e.action = action;
  e.note = std::move(note);
  Post(std::move(e));
}

void EventSink::Post(kube::EventRecord event) {
  event.reporting_instance = reporting_instance_;
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= kMaxQueued) return;  // shed events rather than memory under a storm
  queue_.push_back(std::move(event));
  cv_.Signal();
}

// podutil.UpdatePodCondition's rule: nothing to write when the pod's PodScheduled condition has
// the status, reason and message already; its lastTransitionTime stays while the status does.
// The patch names the condition by its merge key `type`, so the API server keeps the others.
bool EventSink::PostPodScheduledFalse(const nlohmann::json& pod, const char* reason, std::string message) {
  const nlohmann::json& meta = pod["metadata"];
  nlohmann::json condition = {{"type", "PodScheduled"}, {"status", "False"}, {"reason", reason}, {"message", message}};
  bool status_changes = true;
  const nlohmann::json& conditions = pod.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array());
  for (const nlohmann::json& c : conditions.is_array() ? conditions : nlohmann::json::array()) {
    if (!c.is_object() || c.value("type", "") != "PodScheduled") continue;
    if (c.value("status", "") == "False" && c.value("reason", "") == reason && c.value("message", "") == message) {
      return false;
    }
    status_changes = c.value("status", "") != "False";
  }
  if (status_changes) condition["lastTransitionTime"] = kube::MetaTime(std::chrono::system_clock::now());
  if (const auto& g = meta.value("generation", nlohmann::json()); g.is_number_integer()) {
    condition["observedGeneration"] = g;
  }
  StatusPatch p{.ns = meta.value("namespace", ""),
                .name = meta.value("name", ""),
                .patch = {{"status", {{"conditions", nlohmann::json::array({std::move(condition)})}}}}};
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= kMaxQueued) return false;
  queue_.push_back(std::move(p));
  cv_.Signal();
  return true;
}

void EventSink::Write(const std::variant<kube::EventRecord, StatusPatch>& item) {
  if (const auto* e = std::get_if<kube::EventRecord>(&item)) {
    absl::Status s = recorder_.Record(*e);
    if (!s.ok()) spdlog::warn("event {} for {} {}/{}: {}", e->reason, e->kind, e->ns, e->name, std::string(s.message()));
    return;
  }
  const StatusPatch& p = std::get<StatusPatch>(item);
  absl::Status s = client_->StrategicMergePatch(kube::Pods(), p.ns, p.name, p.patch, "status").status();
  if (!s.ok() && !kube::IsApiNotFound(s)) {
    spdlog::warn("pod {}/{}: writing its PodScheduled condition: {}", p.ns, p.name, std::string(s.message()));
  }
}

void EventSink::Run() {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
    if (queue_.empty()) return;
    if (stop_ && clock_->Now() >= drain_until_) {
      spdlog::warn("stopping: {} events and conditions not written", queue_.size());
      return;
    }
    auto item = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    Write(item);
    mu_.Lock();
  }
}

}  // namespace huygens::scheduler
