#include "kube/event_recorder.h"

#include <string>
#include <vector>

#include "base/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "kube/testing/fake_apiserver.h"
#include "kube/testing/test_client.h"

namespace huygens::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using huygens::testing::FakeClock;

constexpr char kEvents[] = "events.events.k8s.io";

// A record with every field the real apiserver requires of an events.k8s.io/v1 Event (it
// answers 422 to one without uid, type or reporting instance).
EventRecord Record(std::string note = "0/3 nodes have a free NUMA node") {
  EventRecord e;
  e.ns = "default";
  e.name = "a";
  e.uid = "u-1";
  e.type = "Warning";
  e.reason = "FailedScheduling";
  e.action = "Scheduling";
  e.note = std::move(note);
  e.reporting_instance = "huygens-scheduler-0";
  return e;
}

class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = testing::ClientFor(*server_, &clock_);
    recorder_ = std::make_unique<EventRecorder>(client_.get(), &clock_);
  }
  std::vector<json> Events() const { return server_->List(kEvents, "default"); }

  FakeClock clock_;
  std::unique_ptr<FakeApiServer> server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<EventRecorder> recorder_;
};

TEST_F(EventRecorderTest, AnEventIsAnEventsV1EventAboutThePodWithoutASeries) {
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "FailedScheduling");
  EXPECT_EQ(events[0]["note"], "0/3 nodes have a free NUMA node");
  EXPECT_EQ(events[0]["regarding"]["name"], "a");
  EXPECT_EQ(events[0]["regarding"]["uid"], "u-1");
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_FALSE(events[0].contains("series"));
}

TEST_F(EventRecorderTest, ALongNonAsciiNoteIsCutOnACharacterBoundary) {
  // 1,023 ASCII bytes then "é": a cut at the API's 1,024 bytes would split it (and dump() throw).
  ASSERT_TRUE(recorder_->Record(Record(std::string(1023, 'x') + "\xC3\xA9 and more")).ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["note"], std::string(1023, 'x'));
}

TEST_F(EventRecorderTest, AStormOfIdenticalEventsIsOneEventWhoseSeriesCountsThem) {
  constexpr int kStorm = 25;
  for (int i = 0; i < kStorm; ++i) {
    ASSERT_TRUE(recorder_->Record(Record()).ok()) << i;
    clock_.Advance(std::chrono::seconds(10));
  }
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].contains("series")) << events[0].dump();
  EXPECT_EQ(events[0]["series"]["count"], kStorm);
  EXPECT_FALSE(events[0]["series"].value("lastObservedTime", "").empty());
  EXPECT_EQ(events[0]["note"], "0/3 nodes have a free NUMA node");
  // One create, then one patch of the series per repeat.
  EXPECT_EQ(server_->RequestCount("create", "events"), 1);
  EXPECT_EQ(server_->RequestCount("patch", "events"), kStorm - 1);
}

TEST_F(EventRecorderTest, TheFirstRepeatStartsTheSeriesAtTwo) {
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["series"]["count"], 2);
}

TEST_F(EventRecorderTest, ADifferentNoteReasonTypeOrObjectIsANewEvent) {
  EventRecord other_note = Record("0/4 nodes have a free NUMA node");
  EventRecord other_reason = Record();
  other_reason.reason = "AllocationUndone";
  EventRecord other_type = Record();
  other_type.type = "Normal";
  EventRecord other_pod = Record();
  other_pod.name = "b";
  other_pod.uid = "u-2";
  for (const EventRecord& e : {Record(), Record(), other_note, other_reason, other_type, other_pod}) {
    ASSERT_TRUE(recorder_->Record(e).ok());
  }
  auto events = Events();
  ASSERT_EQ(events.size(), 5u);
  int with_series = 0;
  for (const json& e : events) {
    if (!e.contains("series")) continue;
    ++with_series;
    EXPECT_EQ(e["series"]["count"], 2);
    EXPECT_EQ(e["note"], "0/3 nodes have a free NUMA node");
    EXPECT_EQ(e["reason"], "FailedScheduling");
  }
  EXPECT_EQ(with_series, 1);
}

TEST_F(EventRecorderTest, ARepeatAfterSixQuietMinutesIsANewEvent) {
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  clock_.Advance(EventRecorder::kSeriesWindow + std::chrono::seconds(1));
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 2u);
  for (const json& e : events) EXPECT_FALSE(e.contains("series")) << e.dump();
}

TEST_F(EventRecorderTest, TheWindowRunsFromTheLastRepeatSoASteadyRepeatKeepsOneEvent) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder_->Record(Record()).ok());
    clock_.Advance(std::chrono::minutes(5));
  }
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["series"]["count"], 3);
}

TEST_F(EventRecorderTest, ARepeatOfADeletedEventCreatesANewOneThatCarriesTheSeries) {
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  const std::string first = events[0]["metadata"]["name"];
  ASSERT_TRUE(client_->Delete(kube::Events(), "default", first).ok());
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0]["metadata"]["name"], first);
  EXPECT_EQ(events[0]["series"]["count"], 4);
}

TEST_F(EventRecorderTest, AFailedRepeatStillCountsAndTheNextRepeatWritesTheFullCount) {
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  server_->FailNext("patch", "events", 1, 403);
  EXPECT_FALSE(recorder_->Record(Record()).ok());
  ASSERT_TRUE(recorder_->Record(Record()).ok());
  auto events = Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["series"]["count"], 3);
}

}  // namespace
}  // namespace huygens::kube
