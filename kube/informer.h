// Informer: a local cache of one resource kept current by list + watch, with add/update/delete
// handlers (client-go's reflector + informer, reduced).
//
// Protocol: the first step lists (paginated) and records the list's resourceVersion; later
// steps watch from the last version seen (with bookmarks, which advance it without an object).
// A watch that ends cleanly or breaks is resumed from that version, after a backoff with jitter
// when it broke; a 410 Gone / Expired (the version left the server's window) makes the next step
// relist, and the relist is diffed against the cache so handlers see the adds, updates and
// deletes that happened in between.
//
// Driving: tests call RunOnce() step by step; services call Start()/Stop() (a background thread
// looping RunOnce with backoff). Handlers run on the thread that runs the step, without the
// cache lock held (they may read the cache), in event order.
// Thread-safety: the read accessors may be called from any thread; RunOnce from one thread at a
// time (not while Start()ed).
#ifndef HUYGENS_KUBE_INFORMER_H_
#define HUYGENS_KUBE_INFORMER_H_

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
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
  // OutOfRange after a 410 (the next step relists), Unavailable for a broken watch,
  // Cancelled after Stop(), or the list's error.
  absl::Status RunOnce();

  // Runs RunOnce in a background thread until Stop(), sleeping a backoff after failed steps
  // (none after a 410: the relist follows at once).
  void Start();
  void Stop();

  // True once a list has completed.
  bool HasSynced() const;
  // The version the next watch starts from ("" before the first list or after 410).
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
  // Applies one object change to the cache and calls the handler.
  void Upsert(const nlohmann::json& object);
  void Remove(const nlohmann::json& object);

  Client* const client_;
  const ResourceRef resource_;
  const InformerOptions options_;
  const InformerHandlers handlers_;
  Clock* const clock_;

  mutable std::mutex mu_;
  std::map<Key, nlohmann::json> cache_;
  std::string resource_version_;
  bool synced_ = false;
  int lists_ = 0;

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_INFORMER_H_
