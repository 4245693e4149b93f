#include "kube/leader_election.h"

#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "base/testing/fake_clock.h"
#include "kube/testing/test_client.h"

namespace huygens::kube {
namespace {

using std::chrono::seconds;
using testing::FakeApiServer;

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
    ClientOptions no_retry;
    no_retry.max_attempts = 1;
    client_ = testing::ClientFor(*server_, &clock_, no_retry);
  }
  // An elector whose callbacks log "<id> start" / "<id> stop" with the fake time in seconds.
  std::unique_ptr<LeaderElector> Elector(const std::string& id) {
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this, id] { log_.push_back(Stamp(id + " start")); };
    callbacks.on_stopped_leading = [this, id] { log_.push_back(Stamp(id + " stop")); };
    return std::make_unique<LeaderElector>(client_.get(), Config(id), callbacks, &clock_);
  }
  std::string Stamp(const std::string& what) {
    return what + " @" + std::to_string(std::chrono::duration_cast<seconds>(clock_.Elapsed()).count());
  }
  huygens::testing::FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<Client> client_;
  std::vector<std::string> log_;
};

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

}  // namespace
}  // namespace huygens::kube
