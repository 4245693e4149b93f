#include "agent/traffic_meter.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens {
// Failure messages show a summary as its wire text.
void PrintTo(const PodTraffic& traffic, std::ostream* os) { *os << EncodePodTraffic(traffic); }
}  // namespace huygens

namespace huygens::agent {
namespace {

using std::chrono::seconds;

Endpoint Ep(const std::string& text) {
  const size_t colon = text.rfind(':');
  std::string ip = text.substr(0, colon);
  if (ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
  return {*ParseIpAddress(ip), static_cast<uint16_t>(std::stoi(text.substr(colon + 1)))};
}

TcpConnection Conn(const std::string& local, const std::string& remote, uint64_t acked,
                   uint64_t received, uint32_t inode) {
  return {Ep(local), Ep(remote), acked, received, inode};
}

TrafficPod Pod(const std::string& uid, std::vector<std::string> ips) {
  TrafficPod pod{uid, "ns/" + uid, {}};
  for (const std::string& ip : ips) pod.ips.push_back(*ParseIpAddress(ip));
  return pod;
}

// Pods a (10.0.0.1), b (10.0.0.2), c (10.0.0.3, fd00::3).
std::vector<TrafficPod> Abc() {
  return {Pod("a", {"10.0.0.1"}), Pod("b", {"10.0.0.2"}), Pod("c", {"10.0.0.3", "fd00::3"})};
}

struct Round {
  int at_seconds;
  std::vector<TrafficPod> pods;
  std::map<std::string, std::vector<TcpConnection>> samples;
};

struct MeterCase {
  std::string name;
  std::vector<Round> rounds;
  std::optional<PodTraffic> want;
  size_t top_k = 32;
  std::chrono::milliseconds window = seconds(30);
};

PodTraffic Traffic(int window, std::vector<PodTrafficPair> pairs) {
  return {window, std::move(pairs)};
}

std::vector<MeterCase> Cases() {
  // a:5000 -> b:80 seen from both sides; b's counters mirror a's.
  const auto ab = [](uint64_t sent, uint64_t got, uint32_t inode = 1) {
    return std::vector<TcpConnection>{Conn("10.0.0.1:5000", "10.0.0.2:80", sent, got, inode)};
  };
  const auto ba = [](uint64_t sent, uint64_t got, uint32_t inode = 2) {
    return std::vector<TcpConnection>{Conn("10.0.0.2:80", "10.0.0.1:5000", sent, got, inode)};
  };
  return {
      {"nothing is said before the second round", {{0, Abc(), {{"a", ab(10, 10)}}}}, std::nullopt},
      {"a connection seen from both pods counts once, both directions together",
       {{0, Abc(), {{"a", ab(100, 100)}, {"b", ba(100, 100)}}},
        {10, Abc(), {{"a", ab(700, 500)}, {"b", ba(500, 690)}}}},
       Traffic(10, {{"ns/a", "ns/b", 100}})},
      {"the side that saw the larger increase counts",
       {{0, Abc(), {{"a", ab(0, 0)}, {"b", ba(0, 0)}}},
        {10, Abc(), {{"a", ab(500, 500)}, {"b", ba(500, 400)}}}},
       Traffic(10, {{"ns/a", "ns/b", 100}})},
      {"a connection behind a Service counts from the side that names the other pod",
       {{0, Abc(),
         {{"a", {Conn("10.0.0.1:5000", "10.96.0.10:80", 0, 0, 1)}},
          {"b", {Conn("10.0.0.2:80", "10.0.0.1:5000", 0, 0, 2)}}}},
        {10, Abc(),
         {{"a", {Conn("10.0.0.1:5000", "10.96.0.10:80", 900, 900, 1)}},
          {"b", {Conn("10.0.0.2:80", "10.0.0.1:5000", 1000, 1000, 2)}}}}},
       Traffic(10, {{"ns/a", "ns/b", 200}})},
      {"an IPv4 peer of an IPv6 socket and an IPv6 pod IP both match",
       {{0, Abc(),
         {{"a", {Conn("[::ffff:10.0.0.1]:5000", "[::ffff:10.0.0.2]:80", 0, 0, 1)}},
          {"c", {Conn("[fd00::3]:80", "[fd00::9]:1", 0, 0, 3)}},
          {"b", {Conn("[fd00::2]:6000", "[fd00::3]:80", 0, 0, 4)}}}},
        {10, Abc(),
         {{"a", {Conn("[::ffff:10.0.0.1]:5000", "[::ffff:10.0.0.2]:80", 50, 50, 1)}},
          {"b", {Conn("[fd00::2]:6000", "[fd00::3]:80", 20, 10, 4)}}}}},
       Traffic(10, {{"ns/a", "ns/b", 10}, {"ns/b", "ns/c", 3}})},
      {"loopback, a pod's own IP and addresses of no local pod are ignored",
       {{0, Abc(),
         {{"a",
           {Conn("127.0.0.1:1", "127.0.0.1:2", 0, 0, 1), Conn("10.0.0.1:3", "10.0.0.1:4", 0, 0, 2),
            Conn("10.0.0.1:5", "192.168.1.1:443", 0, 0, 3),
            Conn("[::1]:7", "[::1]:8", 0, 0, 4)}}}},
        {10, Abc(),
         {{"a",
           {Conn("127.0.0.1:1", "127.0.0.1:2", 1000, 0, 1),
            Conn("10.0.0.1:3", "10.0.0.1:4", 1000, 0, 2),
            Conn("10.0.0.1:5", "192.168.1.1:443", 1000, 0, 3),
            Conn("[::1]:7", "[::1]:8", 1000, 0, 4)}}}}},
       Traffic(10, {})},
      {"a connection opened between two reads of its pod counts in full",
       {{0, Abc(), {{"a", {}}}}, {10, Abc(), {{"a", ab(300, 200)}}}},
       Traffic(10, {{"ns/a", "ns/b", 50}})},
      {"the first read of a pod is a baseline for its older connections",
       {{0, Abc(), {{"b", {}}}}, {10, Abc(), {{"a", ab(1000000, 0)}, {"b", {}}}},
        {20, Abc(), {{"a", ab(1000100, 0)}, {"b", {}}}}},
       Traffic(20, {{"ns/a", "ns/b", 5}})},
      {"a new socket on the same address pair counts from zero",
       {{0, Abc(), {{"a", ab(5000, 0, 1)}}}, {10, Abc(), {{"a", ab(7000, 0, 9)}}}},
       Traffic(10, {{"ns/a", "ns/b", 700}})},
      {"counters that went down count as a new socket's, never negative",
       {{0, Abc(), {{"a", ab(5000, 0)}}}, {10, Abc(), {{"a", ab(100, 0)}}}},
       Traffic(10, {{"ns/a", "ns/b", 10}})},
      {"a pod that is gone leaves the summary",
       {{0, Abc(), {{"a", ab(0, 0)}}},
        {10, Abc(), {{"a", ab(1000, 0)}}},
        {20, {Pod("a", {"10.0.0.1"}), Pod("c", {"10.0.0.3"})}, {{"a", {}}}}},
       Traffic(20, {})},
      {"a pod whose read failed counts from a baseline again, its peer's side still counts",
       {{0, Abc(), {{"a", ab(0, 0)}, {"b", ba(0, 0)}}},
        {10, Abc(), {{"b", ba(100, 100)}}},
        {20, Abc(), {{"a", ab(400, 400)}, {"b", ba(400, 400)}}}},
       Traffic(20, {{"ns/a", "ns/b", 40}})},
      {"an IP two pods claim names neither",
       {{0, {Pod("a", {"10.0.0.1"}), Pod("b", {"10.0.0.2"}), Pod("d", {"10.0.0.2"})},
         {{"a", ab(0, 0)}}},
        {10, {Pod("a", {"10.0.0.1"}), Pod("b", {"10.0.0.2"}), Pod("d", {"10.0.0.2"})},
         {{"a", ab(1000, 0)}}}},
       Traffic(10, {})},
      {"rates average over the kept intervals and older ones drop out of the window",
       {{0, Abc(), {{"a", ab(0, 0)}}},
        {10, Abc(), {{"a", ab(10000, 0)}}},  // dropped: the later intervals span the window
        {20, Abc(), {{"a", ab(10100, 0)}}},
        {30, Abc(), {{"a", ab(10200, 0)}}},
        {40, Abc(), {{"a", ab(10300, 0)}}},
        {50, Abc(), {{"a", ab(10700, 0)}}}},
       Traffic(30, {{"ns/a", "ns/b", 20}})},
      {"only the top K pairs are kept, by rate then name",
       {{0, Abc(),
         {{"a", {Conn("10.0.0.1:1", "10.0.0.2:80", 0, 0, 1), Conn("10.0.0.1:2", "10.0.0.3:80", 0, 0, 2)}},
          {"b", {Conn("10.0.0.2:1", "10.0.0.3:80", 0, 0, 3)}}}},
        {10, Abc(),
         {{"a", {Conn("10.0.0.1:1", "10.0.0.2:80", 100, 0, 1), Conn("10.0.0.1:2", "10.0.0.3:80", 300, 0, 2)}},
          {"b", {Conn("10.0.0.2:1", "10.0.0.3:80", 100, 0, 3)}}}}},
       Traffic(10, {{"ns/a", "ns/c", 30}, {"ns/a", "ns/b", 10}}),
       /*top_k=*/2},
      {"rates that round to zero are left out",
       {{0, Abc(), {{"a", ab(0, 0)}}}, {10, Abc(), {{"a", ab(4, 0)}}}},
       Traffic(10, {})},
  };
}

TEST(TrafficMeter, MatchesLocalPodsAndComputesTheirRates) {
  for (const MeterCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    TrafficMeter meter({.window = c.window});
    for (const Round& r : c.rounds) {
      meter.Observe(Clock::TimePoint(seconds(1000 + r.at_seconds)), r.pods, r.samples);
    }
    EXPECT_EQ(meter.Summary(c.top_k), c.want);
  }
}

TEST(TrafficMeter, ARoundThatDoesNotMoveTheClockAddsNoInterval) {
  TrafficMeter meter;
  const std::vector<TrafficPod> pods = Abc();
  const Clock::TimePoint t(seconds(100));
  meter.Observe(t, pods, {{"a", {Conn("10.0.0.1:1", "10.0.0.2:80", 0, 0, 1)}}});
  meter.Observe(t, pods, {{"a", {Conn("10.0.0.1:1", "10.0.0.2:80", 50, 0, 1)}}});
  EXPECT_EQ(meter.Summary(32), std::nullopt);
  meter.Observe(t + seconds(10), pods, {{"a", {Conn("10.0.0.1:1", "10.0.0.2:80", 150, 0, 1)}}});
  EXPECT_EQ(meter.Summary(32), Traffic(10, {{"ns/a", "ns/b", 10}}));
}

struct ChangeCase {
  std::string name;
  PodTraffic published, fresh;
  bool want;
};

TEST(PodTrafficChanged, RewritesOnlyForANewPairSetOrALargeRateChange) {
  const std::vector<ChangeCase> cases = {
      {"the same pairs and rates are no change", Traffic(30, {{"x/a", "x/b", 100}}),
       Traffic(30, {{"x/a", "x/b", 100}}), false},
      {"a rate change under the threshold is no change", Traffic(30, {{"x/a", "x/b", 100}}),
       Traffic(20, {{"x/b", "x/a", 119}}), false},
      {"a rate change at the threshold is a change", Traffic(30, {{"x/a", "x/b", 100}}),
       Traffic(30, {{"x/a", "x/b", 80}}), true},
      {"a pair that appears is a change", Traffic(30, {{"x/a", "x/b", 100}}),
       Traffic(30, {{"x/a", "x/b", 100}, {"x/a", "x/c", 1}}), true},
      {"a pair that goes is a change", Traffic(30, {{"x/a", "x/b", 100}, {"x/a", "x/c", 1}}),
       Traffic(30, {{"x/a", "x/b", 100}}), true},
      {"another pair of the same count is a change", Traffic(30, {{"x/a", "x/b", 100}}),
       Traffic(30, {{"x/a", "x/c", 100}}), true},
      {"a rate from zero is a change", Traffic(30, {{"x/a", "x/b", 0}}),
       Traffic(30, {{"x/a", "x/b", 1}}), true},
      {"no pairs before and after is no change", Traffic(30, {}), Traffic(10, {}), false},
  };
  for (const ChangeCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PodTrafficChanged(c.published, c.fresh, 0.2), c.want);
  }
}

}  // namespace
}  // namespace huygens::agent
