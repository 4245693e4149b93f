#include "kube/informer.h"

#include "fmt/format.h"
#include "kube/api_error.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {
namespace {

using nlohmann::json;

std::pair<std::string, std::string> KeyOf(const json& object) {
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  return {meta.value("namespace", ""), meta.value("name", "")};
}

std::string VersionOf(const json& object) {
  if (!object.contains("metadata")) return "";
  return object["metadata"].value("resourceVersion", "");
}

// Whether a watch step resumes from the version it had rather than relisting: a clean end, Stop(),
// transport failures (a broken stream, an idle cut) and 429, the errors client-go's Reflector
// retries the watch for (isWatchErrorRetriable, and a stream that ends at EOF or a timeout).
bool ResumesWatch(const absl::Status& s) {
  if (s.ok() || absl::IsCancelled(s)) return true;
  const int code = HttpCode(s);
  if (code == 429) return true;
  return code == 0 && (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s));
}

}  // namespace

Informer::Informer(Client* client, ResourceRef resource, InformerOptions options, InformerHandlers handlers,
                   Clock* clock)
    : client_(client),
      resource_(std::move(resource)),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      clock_(clock),
      stale_after_(client->rest().config().watch_idle_timeout.count() > 0
                       ? Clock::Duration(client->rest().config().watch_idle_timeout + kStaleMargin)
                       : Clock::Duration::zero()) {}

Informer::~Informer() { Stop(); }

absl::Status Informer::RunOnce() {
  if (stop_) return absl::CancelledError("informer stopped");
  resume_at_once_ = false;
  bool need_list;
  {
    absl::MutexLock lock(&mu_);
    need_list = resource_version_.empty();
  }
  return need_list ? Relist() : WatchOnce();
}

absl::Status Informer::Relist() {
  ListOptions list_options{options_.label_selector, options_.field_selector, options_.page_size};
  absl::StatusOr<ObjectList> list = client_->List(resource_, options_.ns, list_options);
  if (!list.ok()) return list.status();
  std::map<Key, json> fresh;
  for (json& item : list->items) {
    Key key = KeyOf(item);
    fresh.emplace(std::move(key), std::move(item));
  }
  // Diff against the cache: deletes, then adds, then updates, each in key order.
  std::vector<json> deleted;
  std::vector<json> added;
  std::vector<std::pair<json, json>> updated;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, old] : cache_) {
      if (fresh.count(key) == 0) deleted.push_back(old);
    }
    for (const auto& [key, object] : fresh) {
      auto it = cache_.find(key);
      if (it == cache_.end()) {
        added.push_back(object);
      } else if (VersionOf(it->second) != VersionOf(object)) {
        updated.emplace_back(it->second, object);
      }
    }
    cache_ = std::move(fresh);
    last_heard_ = clock_->Now();
    ++lists_;
  }
  for (const json& o : deleted) {
    if (handlers_.on_delete) handlers_.on_delete(o);
  }
  for (const json& o : added) {
    if (handlers_.on_add) handlers_.on_add(o);
  }
  for (const auto& [old, now] : updated) {
    if (handlers_.on_update) handlers_.on_update(old, now);
  }
  // Synced, and at the list's version, only now: a scheduler that waited for every informer's
  // HasSynced decided on a cache without the rest of a Node list (Restart.TwoHundredRealShapes...
  // bound a pending pod onto CPUs a bound pod held, its node not yet rebuilt).
  absl::MutexLock lock(&mu_);
  resource_version_ = list->resource_version;
  synced_ = true;
  return absl::OkStatus();
}

void Informer::Heard() {
  absl::MutexLock lock(&mu_);
  last_heard_ = clock_->Now();
}

void Informer::Upsert(const json& object) {
  std::optional<json> old;
  {
    absl::MutexLock lock(&mu_);
    Key key = KeyOf(object);
    auto it = cache_.find(key);
    if (it != cache_.end()) old = it->second;
    cache_[key] = object;
  }
  if (old) {
    if (handlers_.on_update) handlers_.on_update(*old, object);
  } else if (handlers_.on_add) {
    handlers_.on_add(object);
  }
  absl::MutexLock lock(&mu_);
  resource_version_ = VersionOf(object);  // once the handler has it (resource_version())
}

void Informer::Remove(const json& object) {
  bool known;
  {
    absl::MutexLock lock(&mu_);
    known = cache_.erase(KeyOf(object)) > 0;
  }
  if (known && handlers_.on_delete) handlers_.on_delete(object);
  absl::MutexLock lock(&mu_);
  resource_version_ = VersionOf(object);
}

absl::Status Informer::WatchOnce() {
  WatchOptions watch;
  {
    absl::MutexLock lock(&mu_);
    watch.resource_version = resource_version_;
  }
  watch.label_selector = options_.label_selector;
  watch.field_selector = options_.field_selector;
  watch.timeout = options_.watch_timeout;
  absl::Status expired;
  bool opened = false;
  absl::Status s = client_->Watch(
      resource_, options_.ns, watch,
      [&](const WatchEvent& e) {
        Heard();
        if (e.type == "ADDED" || e.type == "MODIFIED") {
          Upsert(e.object);
        } else if (e.type == "DELETED") {
          Remove(e.object);
        } else if (e.type == "BOOKMARK") {
          absl::MutexLock lock(&mu_);
          resource_version_ = VersionOf(e.object);
        } else if (e.type == "ERROR") {
          int code = e.object.value("code", 0);
          expired = ApiError(code == 0 ? 500 : code, e.object.dump(),
                             fmt::format("watch {}", resource_.CollectionPath(options_.ns)));
          return false;
        }
        return true;
      },
      &stop_,
      [&] {
        opened = true;
        Heard();
      });
  if (!expired.ok()) s = expired;
  if (s.ok()) Heard();  // the server ended the watch
  resume_at_once_ = opened && absl::IsDeadlineExceeded(s) && HttpCode(s) == 0;
  if (resume_at_once_) {
    // Routine on a quiet cluster (every idle limit, per informer): said once at info.
    const std::string line =
        fmt::format("kube: informer for {}: the watch heard nothing for {} s and was cut at the idle limit; resuming",
                    resource_.resource, client_->rest().config().watch_idle_timeout.count());
    if (idle_cut_logged_) {
      spdlog::debug("{}", line);
    } else {
      spdlog::info("{} (later cuts of this informer's watch are logged at debug level)", line);
      idle_cut_logged_ = true;
    }
  } else if (absl::IsDeadlineExceeded(s) && HttpCode(s) == 0) {
    spdlog::warn("kube: informer for {}: the server did not answer the watch within the idle limit: {}; resuming",
                 resource_.resource, std::string(s.message()));
  }
  if (!ResumesWatch(s)) {
    if (IsApiGone(s)) {
      spdlog::info("kube: informer for {}: {}; relisting", resource_.resource, std::string(s.message()));
    } else {
      spdlog::warn("kube: informer for {}: watch failed: {}; relisting", resource_.resource,
                   std::string(s.message()));
    }
    absl::MutexLock lock(&mu_);
    resource_version_.clear();
  }
  return s;
}

void Informer::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    Backoff backoff(options_.backoff);
    while (!stop_) {
      absl::Status s = RunOnce();
      if (s.ok() || IsApiGone(s) || resume_at_once_ || stop_) {
        backoff.Reset();
        continue;
      }
      // Sleep in short slices so Stop() is not held up by a long backoff.
      auto remaining = backoff.Next();
      while (remaining.count() > 0 && !stop_) {
        auto slice = std::min<Clock::Duration>(remaining, std::chrono::milliseconds(50));
        clock_->Sleep(slice);
        remaining -= slice;
      }
    }
  });
}

void Informer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool Informer::HasSynced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

absl::Status Informer::Ready() const {
  absl::MutexLock lock(&mu_);
  if (!synced_) return absl::UnavailableError(fmt::format("{} informer has not listed yet", resource_.resource));
  const Clock::Duration silent = clock_->Now() - last_heard_;
  if (stale_after_.count() > 0 && silent > stale_after_) {
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    return absl::UnavailableError(fmt::format("{} informer heard nothing from the API server for {} s (bound {} s)",
                                              resource_.resource, duration_cast<seconds>(silent).count(),
                                              duration_cast<seconds>(stale_after_).count()));
  }
  return absl::OkStatus();
}

std::string Informer::resource_version() const {
  absl::MutexLock lock(&mu_);
  return resource_version_;
}

std::optional<json> Informer::Get(std::string_view ns, std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(Key{std::string(ns), std::string(name)});
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<json> out;
  out.reserve(cache_.size());
  for (const auto& [key, object] : cache_) out.push_back(object);
  return out;
}

std::size_t Informer::size() const {
  absl::MutexLock lock(&mu_);
  return cache_.size();
}

int Informer::lists() const {
  absl::MutexLock lock(&mu_);
  return lists_;
}

}  // namespace huygens::kube
