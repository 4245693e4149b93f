#include "kube/credential_files.h"

#include <sys/stat.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "spdlog/spdlog.h"

namespace huygens::kube {
namespace {

std::optional<std::string> Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CredentialFiles::CredentialFiles(const RestConfig& config)
    : token_file_(config.bearer_token_file),
      certificate_file_(config.client_certificate_file),
      key_file_(config.client_key_file),
      current_{config.bearer_token, config.client_certificate_pem, config.client_key_pem} {
  // The values in `config` were read at load: they stand for the files as they are now.
  if (!token_file_.empty()) token_stamp_ = StampOf(token_file_);
  if (!certificate_file_.empty()) certificate_stamp_ = StampOf(certificate_file_);
  if (!key_file_.empty()) key_stamp_ = StampOf(key_file_);
}

CredentialFiles::Stamp CredentialFiles::StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return Stamp{.device = static_cast<std::uint64_t>(st.st_dev),
               .inode = static_cast<std::uint64_t>(st.st_ino),
               .size = static_cast<std::uint64_t>(st.st_size),
               .mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

Credentials CredentialFiles::Current() {
  absl::MutexLock lock(&mu_);
  if (!token_file_.empty()) {
    if (Stamp now = StampOf(token_file_); now != token_stamp_) {
      std::optional<std::string> token = Read(token_file_);
      if (token) absl::StripTrailingAsciiWhitespace(&*token);
      token_stamp_ = now;  // a failed read is retried at the file's next change
      if (token && !token->empty()) {
        current_.bearer_token = *std::move(token);
        spdlog::info("kube: re-read the bearer token from {}", token_file_);
      } else {
        spdlog::warn("kube: cannot re-read the bearer token from {}; keeping the last one", token_file_);
      }
    }
  }
  if (!certificate_file_.empty() && !key_file_.empty()) {
    const Stamp certificate_now = StampOf(certificate_file_), key_now = StampOf(key_file_);
    if (certificate_now != certificate_stamp_ || key_now != key_stamp_) {
      std::optional<std::string> certificate = Read(certificate_file_), key = Read(key_file_);
      certificate_stamp_ = certificate_now;
      key_stamp_ = key_now;
      if (certificate && key && !certificate->empty() && !key->empty()) {
        current_.client_certificate_pem = *std::move(certificate);
        current_.client_key_pem = *std::move(key);
        spdlog::info("kube: re-read the client certificate {} and key {}", certificate_file_, key_file_);
      } else {
        spdlog::warn("kube: cannot re-read the client certificate {} and key {}; keeping the last ones",
                     certificate_file_, key_file_);
      }
    }
  }
  return current_;
}

}  // namespace huygens::kube
