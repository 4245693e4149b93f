#include "base/version.h"

// Both are defined for this file only by base/CMakeLists.txt.
#ifndef HUYGENS_PROJECT_VERSION
#error "HUYGENS_PROJECT_VERSION is defined by base/CMakeLists.txt"
#endif
#ifndef HUYGENS_GIT_DESCRIBE
#error "HUYGENS_GIT_DESCRIBE is defined by base/CMakeLists.txt"
#endif

namespace huygens {

std::string_view Version() {
  static const std::string* const version = [] {
    const std::string_view describe = HUYGENS_GIT_DESCRIBE;
    auto* v = new std::string(HUYGENS_PROJECT_VERSION);
    if (!describe.empty()) v->append("+").append(describe);
    return v;
  }();
  return *version;
}

std::string VersionLine(std::string_view program) {
  return std::string(program) + " " + std::string(Version());
}

}  // namespace huygens
