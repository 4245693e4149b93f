// SchedulingQueue: priority order, backoff, re-queue on cluster events, the periodic flush.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sched/queue.h"
#include "sched/test_util.h"

namespace huygens::sched {
namespace {

using testing::Share;

const absl::Time kStart = absl::FromUnixSeconds(1000);

PodPtr PodWith(std::string uid, int32_t priority, int64_t creation) {
  Pod p = testing::SharedPod(std::move(uid), 100);
  p.priority = priority;
  p.creation_index = creation;
  return Share(std::move(p));
}

std::vector<std::string> DrainUids(SchedulingQueue& q, absl::Time now) {
  std::vector<std::string> out;
  while (std::optional<QueuedPod> p = q.Pop(now)) {
    out.push_back(p->pod->Uid());
    q.Done(p->pod->Uid());
  }
  return out;
}

TEST(SchedulingQueue, HigherPriorityFirstThenArrivalOrder) {
  SchedulingQueue q;
  q.Add(PodWith("low", 0, 1), kStart);
  q.Add(PodWith("high", 10, 2), kStart);
  q.Add(PodWith("low-later", 0, 3), kStart + absl::Seconds(1));
  q.Add(PodWith("high-later", 10, 4), kStart + absl::Seconds(1));
  EXPECT_THAT(DrainUids(q, kStart + absl::Seconds(2)),
              ::testing::ElementsAre("high", "high-later", "low", "low-later"));
}

TEST(SchedulingQueue, AnUnschedulablePodWaitsForAClusterEvent) {
  SchedulingQueue q;
  q.Add(PodWith("p", 0, 1), kStart);
  QueuedPod p = *q.Pop(kStart);
  q.AddFailed(p, /*unschedulable=*/true, kStart);
  EXPECT_EQ(q.UnschedulableSize(), 1u);
  EXPECT_FALSE(q.Pop(kStart + absl::Seconds(30)).has_value());
  // A pod leaves after the backoff has expired: straight to activeQ.
  q.OnClusterEvent(ClusterEvent::kPodDeleted, kStart + absl::Seconds(30));
  std::optional<QueuedPod> again = q.Pop(kStart + absl::Seconds(30));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->attempts, 2);
}

TEST(SchedulingQueue, AnEventDuringBackoffMovesThePodToBackoffFirst) {
  SchedulingQueue q;
  q.Add(PodWith("p", 0, 1), kStart);
  q.AddFailed(*q.Pop(kStart), true, kStart);
  q.OnClusterEvent(ClusterEvent::kNodeAdded, kStart + absl::Milliseconds(500));
  EXPECT_EQ(q.BackoffSize(), 1u);
  EXPECT_FALSE(q.Pop(kStart + absl::Milliseconds(999)).has_value());
  EXPECT_TRUE(q.Pop(kStart + absl::Seconds(1)).has_value());  // initial backoff: 1 s
}

TEST(SchedulingQueue, BackoffDoublesFromOneSecondUpToTenSeconds) {
  SchedulingQueue q;
  q.Add(PodWith("p", 0, 1), kStart);
  absl::Time now = kStart;
  std::vector<absl::Duration> waits;
  for (int attempt = 0; attempt < 6; ++attempt) {
    QueuedPod p = *q.Pop(now);
    q.AddFailed(p, /*unschedulable=*/false, now);  // errors back off
    const absl::Time ready = *q.NextWakeup();
    waits.push_back(ready - now);
    EXPECT_FALSE(q.Pop(ready - absl::Milliseconds(1)).has_value());
    now = ready;
  }
  EXPECT_THAT(waits, ::testing::ElementsAre(absl::Seconds(1), absl::Seconds(2), absl::Seconds(4),
                                            absl::Seconds(8), absl::Seconds(10),
                                            absl::Seconds(10)));
}

TEST(SchedulingQueue, AnEventDuringTheAttemptIsNotMissed) {
  SchedulingQueue q;
  q.Add(PodWith("p", 0, 1), kStart);
  QueuedPod p = *q.Pop(kStart);
  q.OnClusterEvent(ClusterEvent::kPodDeleted, kStart);  // while "p" was being scheduled
  q.AddFailed(p, /*unschedulable=*/true, kStart);
  EXPECT_EQ(q.UnschedulableSize(), 0u);
  EXPECT_EQ(q.BackoffSize(), 1u);
  EXPECT_TRUE(q.Pop(kStart + absl::Seconds(1)).has_value());
}

TEST(SchedulingQueue, NothingWaitsForeverWithoutEvents) {
  SchedulingQueue q;
  q.Add(PodWith("p", 0, 1), kStart);
  q.AddFailed(*q.Pop(kStart), true, kStart);
  EXPECT_EQ(q.NextWakeup(), kStart + absl::Minutes(5));
  EXPECT_FALSE(q.Pop(kStart + absl::Minutes(5) - absl::Seconds(1)).has_value());
  EXPECT_TRUE(q.Pop(kStart + absl::Minutes(5)).has_value());
}

TEST(SchedulingQueue, DeleteRemovesAPendingPodWhereverItIs) {
  SchedulingQueue q;
  q.Add(PodWith("active", 0, 1), kStart);
  q.Add(PodWith("waiting", 0, 2), kStart);
  QueuedPod first = *q.Pop(kStart);
  ASSERT_EQ(first.pod->Uid(), "active");
  q.Done("active");
  q.AddFailed(*q.Pop(kStart), true, kStart);
  EXPECT_TRUE(q.Delete("waiting"));
  EXPECT_FALSE(q.Delete("waiting"));
  EXPECT_EQ(q.Size(), 0u);
  q.OnClusterEvent(ClusterEvent::kPodDeleted, kStart + absl::Hours(1));
  EXPECT_FALSE(q.Pop(kStart + absl::Hours(1)).has_value());
}

TEST(SchedulingQueue, AddingAQueuedUidReplacesThePodInPlace) {
  SchedulingQueue q;
  q.Add(PodWith("p", 0, 1), kStart);
  q.Add(PodWith("p", 0, 1), kStart);
  EXPECT_EQ(q.Size(), 1u);
  EXPECT_THAT(DrainUids(q, kStart), ::testing::ElementsAre("p"));
}

}  // namespace
}  // namespace huygens::sched
