#include "scheduler/event_sink.h"

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

void EventSink::Run() {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
    if (queue_.empty()) return;
    if (stop_ && clock_->Now() >= drain_until_) {
      spdlog::warn("stopping: {} events not written", queue_.size());
      return;
    }
    kube::EventRecord e = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    absl::Status s = recorder_.Record(e);
    if (!s.ok()) spdlog::warn("event {} for {} {}/{}: {}", e.reason, e.kind, e.ns, e.name, std::string(s.message()));
    mu_.Lock();
  }
}

}  // namespace huygens::scheduler
