// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, with client-go's
// leaderelection semantics.
//
//   lease_duration: how long a candidate that is not the holder waits, from the moment it last
//     saw the lease record change, before it may take the lease over (default 15 s);
//   renew_deadline: how long the leader keeps trying to renew before it gives up leading
//     (default 10 s);
//   retry_period: the interval between attempts (default 2 s).
// Expiry is judged on the local clock from when this candidate observed the record change (as
// client-go does), never from the times written in the record, so clock skew between machines
// does not matter. Safety: the leader stops (on_stopped_leading) at most renew_deadline +
// retry_period after its last successful renewal; any other candidate observed that renewal
// and so waits at least lease_duration after it; Validate() requires renew_deadline +
// retry_period < lease_duration, so the old leader has stopped before a new one starts.
//
// Driving: Step() is one attempt (tests call it with a fake clock); Run() loops Step() every
// retry_period until stopped. Callbacks run on the stepping thread.
// Thread-safety: one thread steps; IsLeader() may be read from any thread.
#ifndef HUYGENS_KUBE_LEADER_ELECTION_H_
#define HUYGENS_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "kube/client.h"
#include "base/clock.h"
#include "nlohmann/json.hpp"

namespace huygens::kube {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name = "huygens-scheduler";
  // This candidate's identity (holderIdentity); unique per process, e.g. hostname + uid. Required.
  std::string identity;
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  // Called when leadership is lost or given up; the caller must stop acting as leader at once.
  std::function<void()> on_stopped_leading;
  // Called when the observed holder changes (including to this candidate).
  std::function<void(const std::string& identity)> on_new_leader;
};

class LeaderElector {
 public:
  // Errors: InvalidArgument for an empty identity, non-positive durations, or
  // renew_deadline + retry_period >= lease_duration.
  static absl::Status Validate(const LeaderElectionConfig& config);

  // REQUIRES: Validate(config).ok(). `client` and `clock` must outlive the elector.
  LeaderElector(Client* client, LeaderElectionConfig config, LeaderCallbacks callbacks, Clock* clock);

  // One attempt to acquire or renew, then the leading transitions: started leading on success
  // when not leading; stopped leading when leading and the last successful renewal is
  // renew_deadline old or more, or another holder is observed.
  void Step();
  // Steps every retry_period until `stop`; then, if leading, releases the lease (clears the
  // holder so another candidate may take over at once) and stops leading.
  void Run(const std::atomic<bool>& stop);

  bool IsLeader() const { return leading_; }

 private:
  // Returns true if this candidate holds the lease after the attempt.
  bool TryAcquireOrRenew();
  void StopLeading();
  std::string WallTime() const;

  Client* const client_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  Clock* const clock_;
  const Clock::TimePoint start_;
  const std::chrono::system_clock::time_point wall_start_;

  nlohmann::json observed_spec_;  // the lease spec last seen
  Clock::TimePoint observed_time_{};
  std::string observed_holder_;
  Clock::TimePoint last_renew_{};
  std::atomic<bool> leading_{false};
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_LEADER_ELECTION_H_
