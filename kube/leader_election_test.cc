#include "kube/leader_election.h"

#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"

namespace huygens::kube {
namespace {

using std::chrono::seconds;
using testing::FakeApiServer;

RestConfig Api(const FakeApiServer& server) {
  RestConfig api;
  api.server = server.url();
  api.qps = 0;
  return api;
}

LeaderElectionConfig Config(const std::string& identity) {
  LeaderElectionConfig c;
  c.lease_namespace = "kube-system";
  c.lease_name = "huygens";
  c.identity = identity;
  return c;  // 15 s / 10 s / 2 s
}

TEST(LeaderElectionConfigTest, RenewDeadlinePlusRetryMustFitInTheLease) {
  EXPECT_TRUE(LeaderElector::Validate(Config("a")).ok());
  LeaderElectionConfig bad = Config("a");
  bad.renew_deadline = std::chrono::milliseconds(14000);
  EXPECT_FALSE(LeaderElector::Validate(bad).ok());
  EXPECT_FALSE(LeaderElector::Validate(Config("")).ok());
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok());
    server_ = std::move(*server);
  }
  // An elector whose callbacks log "<id> start" / "<id> stop" with the fake time in seconds.
  std::unique_ptr<LeaderElector> Elector(const std::string& id) {
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this, id] { log_.push_back(Stamp(id + " start")); };
    callbacks.on_stopped_leading = [this, id] { log_.push_back(Stamp(id + " stop")); };
    auto elector = LeaderElector::Create(Api(*server_), Config(id), callbacks, &clock_);
    EXPECT_TRUE(elector.ok()) << elector.status();
    return *std::move(elector);
  }
  std::string Stamp(const std::string& what) {
    return what + " @" + std::to_string(std::chrono::duration_cast<seconds>(clock_.Elapsed()).count());
  }
  huygens::testing::FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::vector<std::string> log_;
};

TEST_F(LeaderElectionTest, ALeaderPausedPastItsRenewDeadlineNoLongerHoldsTheLeaseBeforeItsNextStep) {
  auto a = Elector("a");
  a->Step();
  ASSERT_TRUE(a->IsLeader());
  EXPECT_TRUE(a->HoldsLease());
  // Paused (no Step) for the renew deadline: the leading flag is stale, the lease check is not.
  clock_.Advance(seconds(9));
  EXPECT_TRUE(a->HoldsLease());
  clock_.Advance(seconds(1));
  EXPECT_TRUE(a->IsLeader());
  EXPECT_FALSE(a->HoldsLease()) << "a Binding sent now could race the next leader's";
}

TEST_F(LeaderElectionTest, ALeaderThatRenewsKeepsTheLeaseAndOthersWait) {
  auto a = Elector("a");
  auto b = Elector("b");
  for (int t = 0; t < 60; t += 2) {
    a->Step();
    b->Step();
    EXPECT_TRUE(a->IsLeader());
    EXPECT_FALSE(b->IsLeader());
    clock_.Advance(seconds(2));
  }
  EXPECT_EQ(log_, (std::vector<std::string>{"a start @0"}));
  auto lease = server_->Get("leases.coordination.k8s.io", "kube-system", "huygens");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 15);
}

TEST_F(LeaderElectionTest, ALeaderThatCannotRenewStopsBeforeAnotherStarts) {
  auto a = Elector("a");
  auto b = Elector("b");
  a->Step();  // t=0: a acquires
  ASSERT_TRUE(a->IsLeader());
  // a's four renewals (t=2, 4, 6, 8) fail; b only reads until the lease looks expired to it.
  server_->FailNext("update", "leases", 4, 500);
  bool a_running = true;
  for (int t = 1; t <= 30; ++t) {
    clock_.Advance(seconds(1));
    if (a_running && t % 2 == 0) {
      a->Step();
      a_running = a->IsLeader();  // a process that lost leadership exits
    }
    b->Step();
    EXPECT_FALSE(a->IsLeader() && b->IsLeader()) << "two leaders at t=" << t;
  }
  // a gives up at its renew deadline (10 s after its last renewal at t=0); b first saw that
  // renewal at t=1 and takes over a lease duration (15 s) later.
  EXPECT_EQ(log_, (std::vector<std::string>{"a start @0", "a stop @10", "b start @16"}));
  EXPECT_EQ(server_->RequestCount("update", "leases"), 4 + 15);  // a's failures; b's take-over at 16, renewals 17..30
  auto lease = server_->Get("leases.coordination.k8s.io", "kube-system", "huygens");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
}

TEST_F(LeaderElectionTest, ReleasingOnStopLetsTheNextCandidateAcquireAtOnce) {
  auto a = Elector("a");
  auto b = Elector("b");
  std::atomic<bool> stop{true};
  a->Step();
  ASSERT_TRUE(a->IsLeader());
  b->Step();
  EXPECT_FALSE(b->IsLeader());
  a->Run(stop);  // stop already set: releases and stops leading
  EXPECT_FALSE(a->IsLeader());
  clock_.Advance(seconds(2));
  b->Step();
  EXPECT_TRUE(b->IsLeader());
}

// A hung apiserver (every Lease request held, as a partition would): the leader's renew
// attempts are cut at its renew deadline, so it stops leading within renew_deadline of its last
// renewal, before lease_duration, the earliest any standby that saw that renewal may take over.
// Through a shared client with retries and a 30 s timeout it led on for minutes.
TEST(LeaderElectionHungServerTest, ALeaderStopsAtItsRenewDeadlineWhileTheApiserverHangs) {
  auto server = FakeApiServer::Start();
  ASSERT_TRUE(server.ok());
  using Ms = std::chrono::milliseconds;
  LeaderElectionConfig config = Config("a");
  config.lease_duration = Ms(3000);
  config.renew_deadline = Ms(2000);
  config.retry_period = Ms(250);
  using Time = std::chrono::steady_clock::time_point;
  std::mutex mu;
  std::vector<std::pair<std::string, Time>> log;  // "a start", "b stop", ... with when
  auto elector = [&](const std::string& id) {
    LeaderElectionConfig c = config;
    c.identity = id;
    LeaderCallbacks callbacks;
    auto note = [&mu, &log](std::string what) {
      std::lock_guard<std::mutex> lock(mu);
      log.emplace_back(std::move(what), std::chrono::steady_clock::now());
    };
    callbacks.on_started_leading = [note, id] { note(id + " start"); };
    callbacks.on_stopped_leading = [note, id] { note(id + " stop"); };
    auto e = LeaderElector::Create(Api(**server), c, callbacks, RealClock::Get());
    EXPECT_TRUE(e.ok()) << e.status();
    return *std::move(e);
  };
  auto wait_for = [&](const std::function<bool()>& done, Ms limit) {
    for (auto until = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < until;) {
      if (done()) return true;
      std::this_thread::sleep_for(Ms(5));
    }
    return done();
  };
  std::unique_ptr<LeaderElector> a = elector("a");
  std::atomic<bool> stop{false};
  std::thread run_a([&] { a->Run(stop); });
  ASSERT_TRUE(wait_for([&] { return a->IsLeader(); }, Ms(5000)));
  std::unique_ptr<LeaderElector> b = elector("b");
  std::thread run_b([&] { b->Run(stop); });
  std::this_thread::sleep_for(Ms(600));  // b observes a's renewals
  ASSERT_FALSE(b->IsLeader());

  (*server)->HoldRequests("*", "leases");
  const Time hung = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for([&] { return !a->IsLeader(); }, Ms(10000)));
  const Time stopped = std::chrono::steady_clock::now();
  EXPECT_LT(stopped - hung, config.renew_deadline + Ms(500));
  EXPECT_LT(stopped - hung, config.lease_duration);
  EXPECT_FALSE(b->IsLeader());

  (*server)->ReleaseRequests();
  EXPECT_TRUE(wait_for([&] { return a->IsLeader() || b->IsLeader(); }, Ms(10000)));
  stop = true;
  run_a.join();
  run_b.join();
  // At no moment two leaders: every start follows the other's stop.
  std::lock_guard<std::mutex> lock(mu);
  std::string leader;
  for (const auto& [what, when] : log) {
    const std::string id = what.substr(0, 1);
    if (what.ends_with("start")) {
      EXPECT_EQ(leader, "") << id << " started while " << leader << " led";
      leader = id;
    } else if (leader == id) {
      leader.clear();
    }
  }
}

}  // namespace
}  // namespace huygens::kube
