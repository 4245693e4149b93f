#include "kube/leader_election.h"

#include "fmt/chrono.h"
#include "fmt/format.h"
#include "kube/api_error.h"
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

LeaderElector::LeaderElector(Client* client, LeaderElectionConfig config, LeaderCallbacks callbacks, Clock* clock)
    : client_(client),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      start_(clock->Now()),
      wall_start_(std::chrono::system_clock::now()) {}

// MicroTime of the injected clock, anchored at the wall time of construction.
std::string LeaderElector::WallTime() const {
  auto wall = wall_start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(clock_->Now() - start_);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count() % 1000000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(wall)), micros);
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

  absl::StatusOr<json> lease = client_->Get(Leases(), ns, name);
  if (IsApiNotFound(lease.status())) {
    json object = {{"apiVersion", "coordination.k8s.io/v1"},
                   {"kind", "Lease"},
                   {"metadata", {{"name", name}, {"namespace", ns}}},
                   {"spec", fresh_spec}};
    absl::StatusOr<json> created = client_->Create(Leases(), ns, object);
    if (!created.ok()) return false;
    observed_spec_ = (*created)["spec"];
    observed_time_ = clock_->Now();
    return true;
  }
  if (!lease.ok()) return false;

  json spec = lease->value("spec", json::object());
  std::string holder = spec.value("holderIdentity", "");
  if (spec != observed_spec_) {
    observed_spec_ = spec;
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
  absl::StatusOr<json> written = client_->Update(Leases(), updated);
  if (!written.ok()) return false;
  observed_spec_ = (*written)["spec"];
  observed_time_ = clock_->Now();
  return true;
}

void LeaderElector::StopLeading() {
  leading_ = false;
  spdlog::warn("kube: leader election: {} stopped leading lease {}/{}", config_.identity, config_.lease_namespace,
               config_.lease_name);
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

void LeaderElector::Step() {
  if (leading_ && clock_->Now() - last_renew_ >= config_.renew_deadline) {
    StopLeading();
    return;
  }
  bool held = TryAcquireOrRenew();
  if (held) {
    last_renew_ = clock_->Now();
    if (!leading_) {
      leading_ = true;
      spdlog::info("kube: leader election: {} acquired lease {}/{}", config_.identity, config_.lease_namespace,
                   config_.lease_name);
      if (callbacks_.on_started_leading) callbacks_.on_started_leading();
    }
    return;
  }
  bool taken = !observed_holder_.empty() && observed_holder_ != config_.identity;
  if (leading_ && (taken || clock_->Now() - last_renew_ >= config_.renew_deadline)) StopLeading();
}

void LeaderElector::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    Step();
    clock_->Sleep(config_.retry_period);
  }
  if (!leading_) return;
  // Release: an empty holder lets the next candidate acquire without waiting out the lease.
  absl::StatusOr<json> released = client_->MergePatchWithRetry(
      Leases(), config_.lease_namespace, config_.lease_name,
      [&](const json& current) -> absl::StatusOr<std::optional<json>> {
        if (current.value("spec", json::object()).value("holderIdentity", "") != config_.identity) {
          return std::optional<json>();
        }
        return std::optional<json>(json{{"spec", {{"holderIdentity", nullptr}, {"leaseDurationSeconds", 1}}}});
      });
  if (!released.ok()) spdlog::warn("kube: leader election: releasing the lease failed: {}", 
                                 std::string(released.status().message()));
  StopLeading();
}

}  // namespace huygens::kube
