// ReadTextFile: the whole content of a small file (configs, checkpoints, capacity sources).
// Thread-safety: a free function.
#ifndef HUYGENS_AGENT_READ_FILE_H_
#define HUYGENS_AGENT_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace huygens::agent {

// Errors: NotFound when the file does not exist; Internal (with errno's text) when it cannot be
// read. Messages start with the path.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_READ_FILE_H_
