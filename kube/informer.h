// Informer: a local cache of one resource kept current by list + watch, with add/update/delete
// handlers (client-go's reflector + informer, reduced).
//
// Protocol: the first step lists (paginated) and records the list's resourceVersion; later
// steps watch from the last version seen (with bookmarks, which advance it without an object).
// A watch that the server ends, whose connection breaks or is cut at the idle limit
// (RestConfig::watch_idle_timeout), or that gets 429 is resumed from that version, after a
// backoff with jitter unless the server ended it or it was cut idle after the server had taken
// it (that session already lasted the idle limit). Any other failure makes the next step
// relist: 410 Gone / Expired (the version left the server's window; relisted at once), an
// ERROR event of any code, another HTTP error answer, an event that does not parse. This is
// client-go's Reflector: watchHandler's error ends ListAndWatch and the next round lists. The
// relist is diffed against the cache, as DeltaFIFO.Replace does, so handlers see the adds,
// updates (resourceVersion changed) and deletes (the last known object; client-go's
// DeletedFinalStateUnknown) that happened while the watch was down.
//
// Liveness: the informer records when it last heard from the API server (a completed list, a
// watch the server took with a 2xx answer, any watch event or bookmark, a watch the server
// ended). Ready() fails while it has not synced, or when it has heard nothing for longer than
// stale_after(): the client's watch idle limit plus kStaleMargin, so a frozen watch is
// reported from the moment the idle cut should have replaced it and was not.
//
// Logging: a watch the server took and the idle limit cut (routine on a quiet cluster, every
// idle limit) is logged at info the first time per informer, at debug afterwards; a watch the
// server did not answer within the idle limit, and every other failure, as a warning.
//
// Driving: tests call RunOnce() step by step; services call Start()/Stop() (a background thread
// looping RunOnce with backoff). Handlers run on the thread that runs the step, without the
// cache lock held (they may read the cache), in event order.
// Thread-safety: the read accessors (Ready() included) may be called from any thread; RunOnce
// from one thread at a time (not while Start()ed).
#ifndef HUYGENS_KUBE_INFORMER_H_
#define HUYGENS_KUBE_INFORMER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "base/clock.h"
#include "kube/backoff.h"
#include "kube/client.h"
#include "kube/resource.h"

namespace huygens::kube {

struct InformerOptions {
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  std::int64_t page_size = 500;
  // Server-side length of one watch session (timeoutSeconds). Default 5 min.
  std::chrono::seconds watch_timeout{300};
  // Backoff before resuming a broken watch or retrying a failed list.
  BackoffOptions backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(30000), 0.5};
};

// Slack on top of the watch idle limit before an informer that heard nothing counts as stale
// (Informer::Ready): room for the reconnect after an idle cut (a backoff of at most 0.3 s after
// a quiet session, the 5 s connect timeout, a relist after 410). With the default idle limit
// (120 s) the bound is 150 s.
inline constexpr std::chrono::seconds kStaleMargin{30};

struct InformerHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& new_object)> on_update;
  std::function<void(const nlohmann::json& last_known)> on_delete;
};

class Informer {
 public:
  // `client` and `clock` must outlive the informer.
  Informer(Client* client, ResourceRef resource, InformerOptions options, InformerHandlers handlers,
           Clock* clock = RealClock::Get());
  ~Informer();  // Stop()s

  // One step: a list when there is no version to watch from (first step, after 410), else one
  // watch session until the server ends it, it breaks, or Stop(). Returns the step's error:
  // OutOfRange after a 410, Unavailable for a broken watch, DeadlineExceeded for one cut at
  // the idle limit, Cancelled after Stop(), the error of an ERROR event or of the watch's HTTP
  // answer, or the list's error (which step comes next: see the file comment).
  absl::Status RunOnce();

  // Runs RunOnce in a background thread until Stop(), sleeping a backoff after failed steps
  // (none after a 410, whose relist follows at once, nor after a watch the server took that
  // the idle limit then cut).
  void Start();
  void Stop();

  // True once a list has completed and its objects have been delivered to the handlers
  // (client-go's HasSynced: a consumer that waits for it sees the whole list, never a part).
  bool HasSynced() const;
  // For /readyz: OK once a list has completed and the informer heard from the API server within
  // stale_after() (on the informer's clock); else Unavailable naming the resource ("pods
  // informer has not listed yet", "pods informer heard nothing from the API server for 151 s
  // (bound 150 s)").
  absl::Status Ready() const;
  // The staleness bound: the client's RestConfig::watch_idle_timeout + kStaleMargin; zero when
  // the client has no idle limit (then Ready() asks only for the sync).
  Clock::Duration stale_after() const { return stale_after_; }
  // The version the next watch starts from ("" before the first list or after 410). It moves
  // only after the handlers have been called with every change up to it (a list's objects, a
  // watch event's object; a bookmark has none), so a consumer that reads it and then drains what
  // its handlers queued holds every change up to that version.
  std::string resource_version() const;
  std::optional<nlohmann::json> Get(std::string_view ns, std::string_view name) const;
  std::vector<nlohmann::json> List() const;
  std::size_t size() const;
  // Completed lists so far (1 after the first sync; more after 410s).
  int lists() const;

 private:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  absl::Status Relist();
  absl::Status WatchOnce();
  // Records that the API server was heard from now.
  void Heard();
  // Applies one object change to the cache and calls the handler.
  void Upsert(const nlohmann::json& object);
  void Remove(const nlohmann::json& object);

  Client* const client_;
  const ResourceRef resource_;
  const InformerOptions options_;
  const InformerHandlers handlers_;
  Clock* const clock_;
  const Clock::Duration stale_after_;

  mutable absl::Mutex mu_;  // never held while a handler runs
  std::map<Key, nlohmann::json> cache_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  int lists_ ABSL_GUARDED_BY(mu_) = 0;
  Clock::TimePoint last_heard_ ABSL_GUARDED_BY(mu_);  // meaningful once synced_

  // Set by a watch step that the server took and the idle limit then cut: the loop resumes at
  // once, without a backoff (the step thread's only).
  bool resume_at_once_ = false;
  // Whether an idle cut of a session the server took was logged at info already (later ones
  // go to debug). The step thread's only.
  bool idle_cut_logged_ = false;

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_INFORMER_H_
