#include "kube/event_recorder.h"

#include <utility>

#include "base/utf8.h"
#include "fmt/chrono.h"
#include "fmt/format.h"
#include "kube/api_error.h"
#include "kube/meta_time.h"
#include "kube/resource.h"

namespace huygens::kube {
namespace {

using nlohmann::json;

std::string EventNamespace(const EventRecord& e) { return e.ns.empty() ? "default" : e.ns; }

json SeriesObject(int32_t count, const std::string& last_observed) {
  return {{"count", count}, {"lastObservedTime", last_observed}};
}

}  // namespace

json EventObject(const EventRecord& e, std::string_view name, std::string_view event_time) {
  json regarding = {{"apiVersion", e.api_version}, {"kind", e.kind}, {"name", e.name}};
  if (!e.ns.empty()) regarding["namespace"] = e.ns;
  if (!e.uid.empty()) regarding["uid"] = e.uid;
  return {{"apiVersion", "events.k8s.io/v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", EventNamespace(e)}}},
          {"eventTime", event_time},
          {"reportingController", e.reporting_controller},
          {"reportingInstance", e.reporting_instance},
          {"action", e.action},
          {"reason", e.reason},
          {"note", TruncateUtf8(e.note, kMaxEventNoteBytes)},
          {"type", e.type},
          {"regarding", regarding}};
}

std::string EventRecorder::NewEventName(const EventRecord& e) {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  return fmt::format("{}.{:x}{:x}", e.name, nanos, names_++);
}

absl::Status EventRecorder::Record(const EventRecord& e) {
  absl::MutexLock lock(&mu_);
  const Clock::TimePoint now = clock_->Now();
  std::erase_if(series_, [&](const auto& entry) { return now - entry.second.last > kSeriesWindow; });
  const std::string ns = EventNamespace(e);
  const std::string at = MicroTime(std::chrono::system_clock::now());
  auto it = series_.find(e);
  if (it == series_.end()) {
    const std::string name = NewEventName(e);
    absl::Status s = client_->Create(Events(), ns, EventObject(e, name, at)).status();
    if (s.ok()) series_.emplace(e, Series{.event_name = name, .count = 1, .last = now});
    return s;
  }
  Series& series = it->second;
  ++series.count;
  series.last = now;
  const json patch = {{"series", SeriesObject(series.count, at)}};
  absl::Status s = client_->MergePatch(Events(), ns, series.event_name, patch).status();
  if (!IsApiNotFound(s)) return s;
  // The Event is gone: a new one carries the series on.
  const std::string name = NewEventName(e);
  json object = EventObject(e, name, at);
  object["series"] = SeriesObject(series.count, at);
  s = client_->Create(Events(), ns, object).status();
  if (s.ok()) series.event_name = name;
  return s;
}

}  // namespace huygens::kube
