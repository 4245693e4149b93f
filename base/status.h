// Status helpers shared by every layer: the two early-return macros and the message of a status
// as a std::string.
//
// HUYGENS_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (an absl::StatusOr<T>); returns its
// status from the enclosing function when it is not OK, else moves the value into `lhs` (which
// may be a declaration). HUYGENS_RETURN_IF_ERROR(expr): returns from the enclosing function
// when `expr` (an absl::Status) is not OK. The enclosing function must return absl::Status or
// an absl::StatusOr.
//
// Thread-safety: macros and a pure function.
#ifndef HUYGENS_BASE_STATUS_H_
#define HUYGENS_BASE_STATUS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HUYGENS_ASSIGN_OR_RETURN(lhs, expr) \
  HUYGENS_ASSIGN_OR_RETURN_IMPL(HUYGENS_CONCAT(huygens_or_, __LINE__), lhs, expr)
#define HUYGENS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = *std::move(tmp)
#define HUYGENS_CONCAT(a, b) HUYGENS_CONCAT_IMPL(a, b)
#define HUYGENS_CONCAT_IMPL(a, b) a##b

#define HUYGENS_RETURN_IF_ERROR(expr)             \
  do {                                            \
    if (absl::Status huygens_status = (expr);     \
        !huygens_status.ok()) {                   \
      return huygens_status;                      \
    }                                             \
  } while (false)

namespace huygens {

// The message of a status as a std::string (absl::string_view is not std::string_view in every
// Abseil build, so it does not always convert implicitly).
inline std::string Msg(const absl::Status& status) { return std::string(status.message()); }

}  // namespace huygens

#endif  // HUYGENS_BASE_STATUS_H_
