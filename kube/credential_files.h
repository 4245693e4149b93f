// CredentialFiles: a RestConfig's bearer token and client certificate/key, re-read from their
// files when those change, so that a long-running daemon keeps working across rotations.
//
// Why: a projected (bound) service-account token expires and kubelet writes a new one into the
// same path (an atomic symlink swap); kubelet-rotated client certificates are replaced in place.
// client-go re-reads the token file (transport.NewCachedFileTokenSource) and reloads rotated
// client certificates; reading them once at start-up would make every call fail once the first
// token expired.
//
// Change detection: a file is read again when its identity (device, inode), size or
// modification time differs from when it was last read (stat follows the symlink, so a swap is
// seen). The certificate and key are read together when either changed, so the pair stays
// matched. A file that cannot be read, or that is empty, keeps the last value (logged at warn,
// and read again at the file's next change): a rotation in progress must not drop the
// credential.
//
// Thread-safety: Current() may be called from any number of threads.
#ifndef HUYGENS_KUBE_CREDENTIAL_FILES_H_
#define HUYGENS_KUBE_CREDENTIAL_FILES_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kube/config.h"

namespace huygens::kube {

// What a request authenticates with.
struct Credentials {
  std::string bearer_token;
  std::string client_certificate_pem;
  std::string client_key_pem;
};

class CredentialFiles {
 public:
  // Starts from `config`'s values (read at load); watches the files it names
  // (bearer_token_file, client_certificate_file, client_key_file; empty ones are not watched).
  explicit CredentialFiles(const RestConfig& config);

  // The credentials to send now: one stat per named file, and a read of those that changed.
  Credentials Current() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // What stat said of a file when it was last read; all zero when it could not be.
  struct Stamp {
    std::uint64_t device = 0, inode = 0, size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp StampOf(const std::string& path);

  const std::string token_file_, certificate_file_, key_file_;
  absl::Mutex mu_;
  Credentials current_ ABSL_GUARDED_BY(mu_);
  Stamp token_stamp_ ABSL_GUARDED_BY(mu_), certificate_stamp_ ABSL_GUARDED_BY(mu_), key_stamp_ ABSL_GUARDED_BY(mu_);
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_CREDENTIAL_FILES_H_
