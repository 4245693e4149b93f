#include "scheduler/binder.h"

#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/pod_codec.h"
#include "kube/resource.h"
#include "node/allocation.h"
#include "scheduler/cache_sync.h"
#include "scheduler/objects.h"
#include "spdlog/spdlog.h"

namespace huygens::scheduler {

using nlohmann::json;

json PodReference(const sched::Pod& pod) {
  return {{"metadata",
           {{"namespace", pod.spec.namespace_name},
            {"name", pod.spec.name},
            {"uid", pod.Uid()},
            {"resourceVersion", pod.resource_version}}}};
}

// ---- PodWriter ---------------------------------------------------------------------------

namespace {

// Where a bound pod runs, for its bind log line and "Scheduled" event: DescribeAllocation of the
// allocation value (which this service wrote), or the value as it is should it not parse.
std::string Placement(const std::optional<std::string>& allocation) {
  if (!allocation.has_value()) return "no allocation (the node publishes no topology)";
  auto parsed = AllocationFromJson(*allocation, "");
  return parsed.ok() ? DescribeAllocation(*parsed) : *allocation;
}

}  // namespace

void PodWriter::ApiError(const char* operation, const absl::Status& s) {
  metrics_->api_errors->Inc({operation, std::to_string(kube::HttpCode(s))});
}

absl::Status PodWriter::MoveAllocation(const json& object, const std::string& allocation) {
  const std::string ns = object["metadata"].value("namespace", "");
  const std::string name = object["metadata"].value("name", "");
  if (may_bind_ && !may_bind_()) {
    return absl::FailedPreconditionError(
        fmt::format("pod {}/{}: not moved: this instance no longer holds the leader lease", ns, name));
  }
  const json patch = {{"metadata",
                       {{"resourceVersion", object["metadata"].value("resourceVersion", "")},
                        {"annotations", {{kAllocationAnnotation, allocation}}}}}};
  auto r = client_->MergePatch(kube::Pods(), ns, name, patch);
  if (r.ok()) return absl::OkStatus();
  if (kube::IsApiConflict(r.status())) {
    return absl::AbortedError(fmt::format("pod {}/{}: changed since the plan read it: {}", ns, name,
                                          std::string(r.status().message())));
  }
  ApiError("patch", r.status());
  return r.status();
}

absl::Status PodWriter::WriteAffinityGroupStatus(const json& group, json status_patch) {
  const std::string key = kube::ObjectKey(group);
  if (may_bind_ && !may_bind_()) {
    return absl::FailedPreconditionError(
        fmt::format("NumaAffinityGroup {}: status not written: this instance no longer holds the leader lease", key));
  }
  status_patch["metadata"]["resourceVersion"] = group["metadata"].value("resourceVersion", "");
  auto r = client_->MergePatch(kube::NumaAffinityGroups(), group["metadata"].value("namespace", ""),
                               group["metadata"].value("name", ""), status_patch, "status");
  if (r.ok()) return absl::OkStatus();
  if (kube::IsApiConflict(r.status())) {
    return absl::AbortedError(fmt::format("NumaAffinityGroup {}: changed since it was read: {}", key,
                                          std::string(r.status().message())));
  }
  ApiError("patch", r.status());
  return r.status();
}

absl::Status PodWriter::FinishBind(const json& object, const std::string& node,
                                   const std::optional<std::string>& allocation) {
  const std::string ns = object["metadata"].value("namespace", "");
  const std::string name = object["metadata"].value("name", "");
  const std::string uid = object["metadata"].value("uid", "");
  std::map<std::string, std::string> annotations;
  if (allocation.has_value()) annotations[kAllocationAnnotation] = *allocation;
  if (may_bind_ && !may_bind_()) {
    spdlog::warn("pod {}/{}: not binding to {}: this scheduler no longer holds its leader lease", ns, name, node);
    return absl::FailedPreconditionError("not bound: this scheduler no longer holds its leader lease");
  }
  const std::string rv = object["metadata"].value("resourceVersion", "");
  absl::Status s = client_->Bind(ns, name, node, uid, annotations, rv);
  if (s.ok()) {
    ++bound_;
    const std::string placement = Placement(allocation);
    spdlog::info("pod {}/{}: bound to {}: {}", ns, name, node, placement);
    // kube-scheduler's note, followed by where the pod's CPUs are.
    Event(object, "Normal", "Scheduled", "Binding",
          fmt::format("Successfully assigned {}/{} to {}: {}", ns, name, node, placement));
    return absl::OkStatus();
  }
  ApiError("bind", s);
  if (kube::IsApiNotFound(s)) return absl::OkStatus();  // the pod is gone; its delete event cleans up
  if (kube::HttpCode(s) == 409) {
    auto current = client_->Get(kube::Pods(), ns, name);
    if (current.ok() && (*current)["spec"].value("nodeName", "") == node &&
        (!allocation.has_value() ||
         (*current)["metadata"].value("annotations", json::object()).value(kAllocationAnnotation, "") == *allocation)) {
      ++bound_;  // an earlier attempt landed
      return absl::OkStatus();
    }
    if (current.ok() || kube::IsApiNotFound(current.status())) {
      // The pod moved on since `object` was read (another writer, a new leader's fence write, a
      // Binding by someone else): this Binding, and every earlier attempt of it still on the
      // wire, can never land, since they carry the same resourceVersion.
      spdlog::warn("pod {}/{}: lost the race for {}: the pod changed since it was read at resourceVersion {} ({}); "
                   "dropping this decision",
                   ns, name, node, rv, std::string(s.message()));
      return absl::AbortedError(fmt::format("lost the race for pod {}/{}: {}", ns, name, std::string(s.message())));
    }
  }
  spdlog::warn("pod {}/{}: binding to {} failed: {}", ns, name, node, std::string(s.message()));
  return s;
}

// ---- BinderPool --------------------------------------------------------------------------

void BinderPool::Start() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  for (int i = 0; i < kThreads; ++i) threads_.emplace_back([this] { Run(); });
}

void BinderPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  absl::MutexLock lock(&mu_);
  todo_.clear();
  done_.clear();
  in_flight_ = 0;
}

void BinderPool::Submit(InFlight f) {
  {
    absl::MutexLock lock(&mu_);
    todo_.push_back(std::move(f));
    ++in_flight_;
  }
  cv_.Signal();
}

std::deque<BinderPool::InFlight> BinderPool::TakeDone() {
  std::deque<InFlight> done;
  absl::MutexLock lock(&mu_);
  done.swap(done_);
  in_flight_ -= done.size();
  return done;
}

bool BinderPool::Full() const {
  absl::MutexLock lock(&mu_);
  return in_flight_ >= kMaxInFlight;
}

bool BinderPool::HasDone() const {
  absl::MutexLock lock(&mu_);
  return !done_.empty();
}

void BinderPool::Run() {
  mu_.Lock();
  while (true) {
    while (!stopping_ && todo_.empty()) cv_.Wait(&mu_);
    if (stopping_) break;  // what is left was never written: a restart redoes it
    InFlight f = std::move(todo_.front());
    todo_.pop_front();
    mu_.Unlock();
    f.outcome = f.scheduler->BindingCycle(f.reserved);
    // The attempt is counted here, where it ends (Stop joins the binders, so a pod seen bound
    // is counted before Stop returns).
    const char* result = f.outcome.ok() ? "scheduled" : "error";
    metrics_->attempts->Inc({result});
    metrics_->attempt_latency->Observe({result}, std::chrono::duration<double>(clock_->Now() - f.start).count());
    if (f.outcome.ok()) {
      metrics_->e2e_latency->Observe({}, absl::ToDoubleSeconds(QueueTime(*clock_) - f.popped.first_seen));
    }
    mu_.Lock();
    done_.push_back(std::move(f));
    mu_.Unlock();
    on_done_();
    mu_.Lock();
  }
  mu_.Unlock();
}

// ---- ApiBind -----------------------------------------------------------------------------

sched::Status ApiBind::Bind(const sched::ReservedPod& reserved) {
  std::optional<std::string> allocation;
  if (reserved.allocation.has_value()) {
    PodAllocation a = *reserved.allocation;
    a.node = reserved.node;
    allocation = AllocationToJson(a);
  }
  absl::Status s = writer_->FinishBind(PodReference(*reserved.pod), reserved.node, allocation);
  if (s.ok()) return sched::Status::Success();
  std::string message = fmt::format("creating the Binding: {}", std::string(s.message()));
  if (absl::IsAborted(s)) return sched::Status::Error(std::move(message));
  return sched::Status::Unconfirmed(std::move(message));
}

}  // namespace huygens::scheduler
