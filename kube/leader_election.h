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
// does not matter. Safety: the leader stops (on_stopped_leading) renew_deadline after its last
// successful renewal at the latest; any other candidate observed that renewal and so waits at
// least lease_duration after it; Validate() requires renew_deadline + retry_period <
// lease_duration, so the old leader has stopped before a new one starts.
//
// Its own client, as kube-scheduler's (client-go's resourcelock.NewFromKubeconfig): the elector
// talks to the API through its own RestClient (own connections and rate limit, user agent
// "<agent> leader-election"), never retries within an attempt, and bounds each request by
// max(1 s, renew_deadline / 2) and, while leading, by the time left before the renew deadline
// (as client-go's renew context does). So a hung or partitioned apiserver cannot hold a renew
// past the deadline: the leader stops leading at its last successful renewal + renew_deadline
// (plus the cancellation of the request in flight, milliseconds), while a standby takes over no
// earlier than lease_duration after it observed that renewal.
//
// Driving: Step() is one attempt (tests call it with a fake clock); Run() loops Step() every
// retry_period until stopped. Callbacks run on the stepping thread.
// Thread-safety: one thread steps; IsLeader() may be read from any thread.
#ifndef HUYGENS_KUBE_LEADER_ELECTION_H_
#define HUYGENS_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "kube/config.h"
#include "kube/rest_client.h"
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

  // An elector on its own client to the server of `api` (credentials, TLS, QPS as `api`; the
  // timeout and user agent replaced as above). `clock` must outlive the elector and is the real
  // clock in production (the lease is judged against other processes' clocks, and request
  // timeouts are real time). Errors: Validate's, and RestClient::Create's for `api`.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(const RestConfig& api, LeaderElectionConfig config,
                                                               LeaderCallbacks callbacks, Clock* clock);

  // One attempt to acquire or renew, then the leading transitions: started leading on success
  // when not leading; stopped leading when leading and the last successful renewal is
  // renew_deadline old or more, or another holder is observed.
  void Step();
  // Steps every retry_period until `stop`; then, if leading, releases the lease (clears the
  // holder so another candidate may take over at once) and stops leading.
  void Run(const std::atomic<bool>& stop);

  bool IsLeader() const { return leading_; }
  // Leading, and the last successful renewal is younger than renew_deadline on the clock now:
  // what a leader checks right before each write only a leader may make (a Binding). IsLeader()
  // alone can be stale: a process stopped (SIGSTOP, a long pause) past the deadline still reads
  // true until its next Step(), while another candidate already holds the lease.
  // Thread-safety: any thread.
  bool HoldsLease() const;

 private:
  LeaderElector(std::unique_ptr<RestClient> rest, LeaderElectionConfig config, LeaderCallbacks callbacks,
                Clock* clock);
  // Returns true if this candidate holds the lease after the attempt.
  bool TryAcquireOrRenew();
  // Sends `request` once, bounded by the client's timeout and, while leading, by the time left
  // before the renew deadline (DeadlineExceeded without sending when none is left).
  absl::StatusOr<nlohmann::json> Send(HttpRequest request);
  // Clears the holder (leaseDurationSeconds 1), the last written version as precondition.
  void Release();
  void StopLeading();
  std::string WallTime() const;

  const std::unique_ptr<RestClient> rest_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  Clock* const clock_;
  const Clock::TimePoint start_;
  const std::chrono::system_clock::time_point wall_start_;

  nlohmann::json observed_lease_;  // the Lease object last read or written
  Clock::TimePoint observed_time_{};
  std::string observed_holder_;
  std::atomic<Clock::TimePoint> last_renew_{Clock::TimePoint{}};  // read by HoldsLease from any thread
  std::atomic<bool> leading_{false};
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_LEADER_ELECTION_H_
