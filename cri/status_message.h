// MessageOf: an absl::Status message as std::string_view, for fmt::format (absl 20220623's
// string_view is its own type, which fmt 9 cannot format). Thread-safety: a pure function.
#ifndef HUYGENS_CRI_STATUS_MESSAGE_H_
#define HUYGENS_CRI_STATUS_MESSAGE_H_

#include <string_view>

#include "absl/status/status.h"

namespace huygens::cri {

/// The status's message; valid as long as the status is alive and unchanged.
inline std::string_view MessageOf(const absl::Status& status) {
  return {status.message().data(), status.message().size()};
}

}  // namespace huygens::cri

#endif  // HUYGENS_CRI_STATUS_MESSAGE_H_
