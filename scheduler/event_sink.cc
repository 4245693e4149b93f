#include "scheduler/event_sink.h"

#include "spdlog/spdlog.h"

namespace huygens::scheduler {

void EventSink::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void EventSink::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stop_ = true;
    drain_until_ = clock_->Now() + kDrainOnStop;
  }
  cv_.notify_all();
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
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= kMaxQueued) return;  // shed events rather than memory under a storm
  queue_.push_back(std::move(event));
  cv_.notify_one();
}

void EventSink::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    if (stop_ && clock_->Now() >= drain_until_) {
      spdlog::warn("stopping: {} events not written", queue_.size());
      return;
    }
    kube::EventRecord e = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    absl::Status s = recorder_.Record(e);
    if (!s.ok()) spdlog::warn("event {} for {} {}/{}: {}", e.reason, e.kind, e.ns, e.name, std::string(s.message()));
    lock.lock();
  }
}

}  // namespace huygens::scheduler
