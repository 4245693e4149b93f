// The version of Huygens that every binary reports (`--version`) and that the daemons export as
// the `huygens_build_info` metric (serving/build_info.h).
//
// The version is CMake's project version (top-level CMakeLists.txt), followed, when the source
// tree was a git checkout at configure time, by `git describe --tags --always --dirty` as
// semver build metadata: "0.1.0", "0.1.0+424a0b3", "0.1.0+v0.1.0-3-g424a0b3-dirty". It is fixed
// when CMake configures the build folder, so an incremental build after a commit still reports
// the describe of that configure run.
//
// Thread-safety: constants.
#ifndef HUYGENS_BASE_VERSION_H_
#define HUYGENS_BASE_VERSION_H_

#include <string>
#include <string_view>

namespace huygens {

// The version as above; never empty.
std::string_view Version();

// "<program> <Version()>", the answer of every binary's --version (e.g.
// "huygens-agent 0.1.0+424a0b3").
std::string VersionLine(std::string_view program);

}  // namespace huygens

#endif  // HUYGENS_BASE_VERSION_H_
