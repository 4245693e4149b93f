#include "agent/traffic_meter.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace huygens::agent {

TrafficMeter::TrafficMeter(TrafficMeterOptions options) : options_(options) {}

void TrafficMeter::Observe(Clock::TimePoint now, const std::vector<TrafficPod>& pods,
                           const std::map<std::string, std::vector<TcpConnection>>& samples) {
  std::map<std::string, const TrafficPod*> by_uid;
  std::map<IpAddress, std::string> owner;  // IP -> pod uid; "" when two pods claim it
  for (const TrafficPod& pod : pods) {
    by_uid[pod.uid] = &pod;
    for (const IpAddress& ip : pod.ips) {
      auto [it, added] = owner.emplace(ip, pod.uid);
      if (!added && it->second != pod.uid) it->second.clear();
    }
  }
  // Per connection (its endpoints in order): the pair and the largest increase of its sides.
  std::map<std::pair<Endpoint, Endpoint>, std::pair<PodPair, uint64_t>> connections;
  std::map<SocketKey, SocketState> sockets;
  std::set<std::string> sampled;
  for (const auto& [uid, conns] : samples) {
    auto pod = by_uid.find(uid);
    if (pod == by_uid.end()) continue;
    sampled.insert(uid);
    const bool read_before = last_round_.has_value() && sampled_.contains(uid);
    for (const TcpConnection& c : conns) {
      if (c.local.ip.IsLoopback() || c.remote.ip.IsLoopback()) continue;
      auto peer = owner.find(c.remote.ip);
      if (peer == owner.end() || peer->second.empty() || peer->second == uid) continue;
      const uint64_t counter =
          c.bytes_acked > std::numeric_limits<uint64_t>::max() - c.bytes_received
              ? std::numeric_limits<uint64_t>::max()
              : c.bytes_acked + c.bytes_received;
      SocketKey key{uid, c.local, c.remote};
      uint64_t increase = read_before ? counter : 0;
      if (auto known = sockets_.find(key); known != sockets_.end() && known->second.inode == c.inode) {
        increase = counter >= known->second.counter ? counter - known->second.counter : counter;
      }
      sockets[std::move(key)] = {c.inode, counter};
      const std::string& a = pod->second->name;
      const std::string& b = by_uid.at(peer->second)->name;
      auto& [pair, bytes] = connections[std::minmax(c.local, c.remote)];
      pair = std::minmax(a, b);
      bytes = std::max(bytes, increase);
    }
  }
  if (last_round_.has_value() && now > *last_round_) {
    Interval interval{*last_round_, now, {}};
    for (const auto& [endpoints, counted] : connections) {
      if (counted.second > 0) interval.bytes[counted.first] += counted.second;
    }
    intervals_.push_back(std::move(interval));
    while (intervals_.size() > 1 && now - intervals_[1].start >= options_.window) {
      intervals_.pop_front();
    }
  }
  sockets_ = std::move(sockets);
  sampled_ = std::move(sampled);
  current_pods_.clear();
  for (const TrafficPod& pod : pods) current_pods_.insert(pod.name);
  if (!last_round_.has_value() || now > *last_round_) last_round_ = now;
}

std::optional<PodTraffic> TrafficMeter::Summary(size_t top_k) const {
  if (intervals_.empty()) return std::nullopt;
  const double span = std::chrono::duration<double>(intervals_.back().end -
                                                    intervals_.front().start).count();
  std::map<PodPair, uint64_t> bytes;
  for (const Interval& interval : intervals_) {
    for (const auto& [pair, n] : interval.bytes) {
      if (current_pods_.contains(pair.first) && current_pods_.contains(pair.second)) {
        bytes[pair] += n;
      }
    }
  }
  PodTraffic traffic;
  traffic.window_seconds = std::max(1, static_cast<int>(std::lround(span)));
  for (const auto& [pair, n] : bytes) {
    const auto rate = static_cast<uint64_t>(std::llround(static_cast<double>(n) / span));
    if (rate > 0) traffic.pairs.push_back({pair.first, pair.second, rate});
  }
  traffic = CanonicalPodTraffic(std::move(traffic));
  if (traffic.pairs.size() > top_k) traffic.pairs.resize(top_k);
  return traffic;
}

bool PodTrafficChanged(const PodTraffic& published, const PodTraffic& fresh, double threshold) {
  std::map<std::pair<std::string, std::string>, uint64_t> before;
  for (const PodTrafficPair& p : published.pairs) before[std::minmax(p.a, p.b)] = p.bytes_per_second;
  if (before.size() != fresh.pairs.size()) return true;
  for (const PodTrafficPair& p : fresh.pairs) {
    auto it = before.find(std::minmax(p.a, p.b));
    if (it == before.end()) return true;
    const double old_rate = static_cast<double>(it->second);
    const double new_rate = static_cast<double>(p.bytes_per_second);
    if (old_rate == 0 || new_rate == 0) {
      if (old_rate != new_rate) return true;
      continue;
    }
    if (std::abs(new_rate - old_rate) >= threshold * old_rate) return true;
  }
  return false;
}

}  // namespace huygens::agent
