#include "kube/leader_election.h"

#include <algorithm>

#include "fmt/chrono.h"
#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/meta_time.h"
#include "kube/resource.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {

using nlohmann::json;

absl::Status LeaderElector::Validate(const LeaderElectionConfig& c) {
  if (c.identity.empty()) return absl::InvalidArgumentError("leader election: identity is required");
  if (c.lease_name.empty()) return absl::InvalidArgumentError("leader election: lease_name is required");
  if (c.retry_period.count() <= 0 || c.renew_deadline.count() <= 0 || c.lease_duration.count() <= 0) {
    return absl::InvalidArgumentError("leader election: durations must be positive");
  }
  if (c.renew_deadline + c.retry_period >= c.lease_duration) {
    return absl::InvalidArgumentError(fmt::format(
        "leader election: renew_deadline ({} ms) + retry_period ({} ms) must be less than lease_duration ({} ms)",
        c.renew_deadline.count(), c.retry_period.count(), c.lease_duration.count()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(const RestConfig& api,
                                                                     LeaderElectionConfig config,
                                                                     LeaderCallbacks callbacks, Clock* clock) {
  if (absl::Status s = Validate(config); !s.ok()) return s;
  RestConfig own = api;
  own.timeout = std::max<std::chrono::milliseconds>(std::chrono::seconds(1), config.renew_deadline / 2);
  own.user_agent = api.user_agent + " leader-election";
  absl::StatusOr<std::unique_ptr<RestClient>> rest = RestClient::Create(std::move(own), clock);
  if (!rest.ok()) return rest.status();
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(*std::move(rest), std::move(config), std::move(callbacks), clock));
}

LeaderElector::LeaderElector(std::unique_ptr<RestClient> rest, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, Clock* clock)
    : rest_(std::move(rest)),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      start_(clock->Now()),
      wall_start_(std::chrono::system_clock::now()) {}

absl::StatusOr<json> LeaderElector::Send(HttpRequest request) {
  request.timeout = rest_->config().timeout;
  if (leading_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(last_renew_.load() + config_.renew_deadline - clock_->Now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(fmt::format("{} {}: the renew deadline has passed", request.verb, request.path));
    }
    request.timeout = std::min(request.timeout, left);
  }
  return rest_->Send(request);
}

// MicroTime of the injected clock, anchored at the wall time of construction.
std::string LeaderElector::WallTime() const {
  auto wall = wall_start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(clock_->Now() - start_);
  return MicroTime(wall);
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string& ns = config_.lease_namespace;
  const std::string& name = config_.lease_name;
  int duration_seconds = static_cast<int>(std::chrono::ceil<std::chrono::seconds>(config_.lease_duration).count());
  std::string now_text = WallTime();
  json fresh_spec = {{"holderIdentity", config_.identity},
                     {"leaseDurationSeconds", duration_seconds},
                     {"acquireTime", now_text},
                     {"renewTime", now_text},
                     {"leaseTransitions", 0}};

  absl::StatusOr<json> lease = Send({"GET", Leases().ObjectPath(ns, name)});
  if (IsApiNotFound(lease.status())) {
    json object = {{"apiVersion", "coordination.k8s.io/v1"},
                   {"kind", "Lease"},
                   {"metadata", {{"name", name}, {"namespace", ns}}},
                   {"spec", fresh_spec}};
    absl::StatusOr<json> created = Send({"POST", Leases().CollectionPath(ns), {}, object.dump()});
    if (!created.ok()) return false;
    observed_lease_ = *std::move(created);
    observed_time_ = clock_->Now();
    return true;
  }
  if (!lease.ok()) return false;

  json spec = lease->value("spec", json::object());
  std::string holder = spec.value("holderIdentity", "");
  if (!observed_lease_.is_object() || spec != observed_lease_.value("spec", json::object())) {
    observed_lease_ = *lease;
    observed_time_ = clock_->Now();
  }
  if (holder != observed_holder_) {
    observed_holder_ = holder;
    if (callbacks_.on_new_leader && !holder.empty()) callbacks_.on_new_leader(holder);
  }
  bool held_by_other = !holder.empty() && holder != config_.identity;
  if (held_by_other && observed_time_ + config_.lease_duration > clock_->Now()) return false;

  json updated = *lease;
  json& s = updated["spec"];
  s = fresh_spec;
  if (holder == config_.identity) {
    s["acquireTime"] = spec.value("acquireTime", now_text);
    s["leaseTransitions"] = spec.value("leaseTransitions", 0);
  } else {
    s["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  // The resourceVersion read above is the precondition: a concurrent writer wins, we retry later.
  absl::StatusOr<json> written = Send({"PUT", Leases().ObjectPath(ns, name), {}, updated.dump()});
  if (!written.ok()) return false;
  observed_lease_ = *std::move(written);
  observed_time_ = clock_->Now();
  return true;
}

void LeaderElector::Release() {
  // An empty holder lets the next candidate acquire without waiting out the lease. The version
  // this elector last wrote is the precondition: after anyone else's write there is nothing of
  // ours to release.
  json released = observed_lease_;
  released["spec"].erase("holderIdentity");
  released["spec"]["leaseDurationSeconds"] = 1;
  absl::StatusOr<json> written =
      Send({"PUT", Leases().ObjectPath(config_.lease_namespace, config_.lease_name), {}, released.dump()});
  if (!written.ok()) {
    spdlog::warn("kube: leader election: releasing the lease failed: {}", std::string(written.status().message()));
  }
}

void LeaderElector::StopLeading() {
  leading_ = false;
  spdlog::warn("kube: leader election: {} stopped leading lease {}/{}", config_.identity, config_.lease_namespace,
               config_.lease_name);
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

void LeaderElector::Step() {
  if (leading_ && clock_->Now() - last_renew_.load() >= config_.renew_deadline) {
    StopLeading();
    return;
  }
  // A renewal counts from when its attempt began: any other candidate observes the write later.
  const Clock::TimePoint attempt = clock_->Now();
  bool held = TryAcquireOrRenew();
  if (held) {
    last_renew_.store(attempt);
    if (!leading_) {
      leading_ = true;
      spdlog::info("kube: leader election: {} acquired lease {}/{}", config_.identity, config_.lease_namespace,
                   config_.lease_name);
      if (callbacks_.on_started_leading) callbacks_.on_started_leading();
    }
    return;
  }
  bool taken = !observed_holder_.empty() && observed_holder_ != config_.identity;
  if (leading_ && (taken || clock_->Now() - last_renew_.load() >= config_.renew_deadline)) StopLeading();
}

void LeaderElector::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    Step();
    clock_->Sleep(config_.retry_period);
  }
  if (!leading_) return;
  Release();
  StopLeading();
}

bool LeaderElector::HoldsLease() const {
  return leading_ && clock_->Now() - last_renew_.load() < config_.renew_deadline;
}

}  // namespace huygens::kube
