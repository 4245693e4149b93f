#include "agent/read_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace huygens::agent {

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string text = fmt::format("{}: {}", path, std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(text) : absl::InternalError(text);
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return absl::InternalError(fmt::format("{}: read failed", path));
  return out.str();
}

}  // namespace huygens::agent
